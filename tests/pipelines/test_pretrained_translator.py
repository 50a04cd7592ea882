"""The translation tab's pre-trained translator (issue 57, part 4): Marian from the Hub (Helsinki-NLP/opus-mt-de-en)
offered beside ours and loaded on first use; offline, the choice says in one line that it needs the Hub and the tab
works with ours. A tiny Marian folder with a real sentencepiece MarianTokenizer (as the Hub repo has: source.spm,
target.spm, vocab.json) stands in for the repo id; nothing touches the Hub."""

import json

import pytest
import torch
from tiny_models import read_jsonl

from pipelines import TranslationPipeline
from pipelines.models.hf_adapter import aligned_spans
from viz.models import loading, model_choice

GERMAN = "Ein Mann fährt Fahrrad."


def make_spm_marian_dir(folder):
    """A 2+2-layer, 4-head MarianMTModel with a MarianTokenizer over a tiny sentencepiece model of the fixtures."""
    spm = pytest.importorskip("sentencepiece")
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    folder.mkdir(parents=True)
    rows = read_jsonl("multi30k_tiny.jsonl")
    text = folder / "text.txt"
    text.write_text("\n".join([r["de"] for r in rows] + [r["en"] for r in rows]))
    spm.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(folder / "m"), vocab_size=150, pad_id=-1, unk_id=1, bos_id=-1, eos_id=0,
        eos_piece="</s>", unk_piece="<unk>", minloglevel=2,
    )  # fmt: skip
    piece = spm.SentencePieceProcessor(model_file=str(folder / "m.model"))
    vocab = {"</s>": 0, "<unk>": 1, "<pad>": 2}
    for i in range(piece.get_piece_size()):
        vocab.setdefault(piece.id_to_piece(i), len(vocab))
    (folder / "vocab.json").write_text(json.dumps(vocab))
    model_file = str(folder / "m.model")
    tok = MarianTokenizer(source_spm=model_file, target_spm=model_file, vocab=str(folder / "vocab.json"))
    tok.model_max_length = 64
    torch.manual_seed(0)
    cfg = MarianConfig(
        vocab_size=len(vocab), d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
        pad_token_id=2, eos_token_id=0, decoder_start_token_id=2, forced_eos_token_id=0,
    )  # fmt: skip
    marian = folder / "opus-mt-de-en"
    MarianMTModel(cfg).save_pretrained(marian)
    tok.save_pretrained(marian)
    return marian


@pytest.fixture(scope="module")
def marian_dir(tmp_path_factory):
    return make_spm_marian_dir(tmp_path_factory.mktemp("hub") / "spm")


@pytest.fixture(scope="module")
def ours(translation_dir):
    return TranslationPipeline.from_pretrained(str(translation_dir))


def test_sentencepiece_tokens_get_their_characters():
    """A sentencepiece tokenizer gives no character offsets: each piece is found in the text after the last one."""
    spans = aligned_spans("Ein Mann fährt.", [5, 6, 7, 8, 9], ["▁Ein", "▁Ma", "nn", "▁fährt", "."])
    assert [(s.text, s.start, s.end) for s in spans] == [
        ("Ein", 0, 3), ("Ma", 4, 6), ("nn", 6, 8), ("fährt", 9, 14), (".", 14, 15)
    ]  # fmt: skip
    spans = aligned_spans("a ﬁ b", [1, 2, 3], ["▁a", "▁fi", "▁b"])  # normalized away: it covers nothing
    assert [(s.text, s.start, s.end) for s in spans] == [("a", 0, 1), ("fi", 1, 1), ("b", 4, 5)]


def test_the_choice_offers_marian_beside_ours_and_it_translates_with_cross_attention(
    monkeypatch, ours, marian_dir, translation_dir
):
    monkeypatch.setenv("TRANSLATION_MODEL", str(translation_dir))
    monkeypatch.setenv("TRANSLATION_HUB_MODEL", str(marian_dir))  # standing in for Helsinki-NLP/opus-mt-de-en
    sources = loading.alternative_sources("TRANSLATION_MODEL")
    assert sources == [str(marian_dir)]
    models = loading.translation_registry(ours, lambda p: p, sources)
    assert models.names[1] == "opus-mt-de-en" and models.loaded() == [models.default]  # loaded on first use
    assert model_choice.choice(models, "translation").visible and not model_choice.unavailable(models)
    marian, name = model_choice.resolve(models, "opus-mt-de-en")
    assert name == "opus-mt-de-en" and marian.adapter.kind == "transformers"
    result = marian(GERMAN)
    cross = result.cross_attentions  # per layer: (H, Tt, Ts)
    assert len(cross) == 2 and cross[0].shape[0] == 4 and cross[0].shape[-1] == len(result.source_tokens)
    assert torch.allclose(torch.as_tensor(cross[0]).sum(-1), torch.ones(cross[0].shape[:2]), atol=1e-4)
    words = [t for t in result.source_tokens if t.end > t.start]
    assert words and all(GERMAN[t.start : t.end] == t.text for t in words)  # offsets from the sentencepiece pieces


def test_offline_the_choice_names_marian_and_says_in_one_line_that_it_needs_the_hub(monkeypatch, ours):
    pytest.importorskip("sentencepiece")
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.delenv("TRANSLATION_HUB_MODEL", raising=False)
    sources = loading.alternative_sources("TRANSLATION_MODEL")
    assert sources == [loading.PRETRAINED_TRANSLATOR]
    models = loading.translation_registry(ours, lambda p: p, sources)
    assert models.names[1] == loading.PRETRAINED_TRANSLATOR_NAME
    line = model_choice.choice(models, "translation").info
    assert "needs the Hugging Face Hub" in line and "\n" not in line and models.default in line
    assert line in model_choice.notes(models)
    chosen, status = model_choice.resolve(models, loading.PRETRAINED_TRANSLATOR_NAME)
    assert chosen is None and status.startswith("⚠️")
    assert model_choice.resolve(models, models.default)[0](GERMAN).translation  # the tab works with ours


def test_none_offered_when_turned_off(monkeypatch):
    monkeypatch.setenv("TRANSLATION_HUB_MODEL", "")
    assert loading.alternative_sources("TRANSLATION_MODEL") == []
