import json

import pytest
import torch

from pipelines import SentimentPipeline, TranslationPipeline
from transformer import CheckpointError, TransformerClassifier, load_model


def test_sentiment_pipeline_result(sentiment_dir):
    pipe = SentimentPipeline.from_pretrained(str(sentiment_dir))
    text = "A wonderful film.<br /><br />The acting is great!"
    r = pipe(text)
    assert r.label in ("negative", "positive")
    assert sum(r.probabilities.values()) == pytest.approx(1.0, abs=1e-5)
    T = len(r.tokens)
    assert len(r.attentions) == 2 and r.attentions[0].shape == (4, T, T)
    torch.testing.assert_close(r.attentions[1].sum(-1), torch.ones(4, T))
    assert r.pool_weights.shape == (T,)
    for t in r.tokens:  # offsets point into the raw input, and the <br /> tag is not a token
        assert text[t.start : t.end] == t.text
        assert "<br" not in t.text
    assert not r.truncated


def test_sentiment_long_review_keeps_head_and_tail(sentiment_dir):
    pipe = SentimentPipeline.from_pretrained(str(sentiment_dir))
    text = "Great start. " + "filler words here " * 200 + "Terrible ending."
    r = pipe(text)
    assert r.truncated and r.n_tokens > len(r.tokens) == pipe.max_len
    assert r.tokens[0].start == 0 and r.tokens[-1].end == len(text)
    # The batched fast path agrees with the explicit path.
    fast = pipe.predict([text, "Dull."])[0]
    assert fast["positive"] == pytest.approx(r.probabilities["positive"], abs=1e-5)


def test_translation_pipeline_result(translation_dir):
    pipe = TranslationPipeline.from_pretrained(str(translation_dir))
    text = "Ein Mann fährt Fahrrad."
    r = pipe(text, beam_size=2)
    Ts, Tt = len(r.source_tokens), len(r.target_tokens)
    assert r.source_tokens[-1].text == "" and Ts >= 2
    assert all(text[t.start : t.end] == t.text for t in r.source_tokens)
    assert len(r.steps) == Tt >= 1
    assert r.cross_attentions[0].shape == (4, Tt, Ts)
    assert r.decoder_attentions[0].shape == (4, Tt, Tt)
    assert r.encoder_attentions[0].shape == (4, Ts, Ts)
    assert all(len(s.top_k) == 5 for s in r.steps)
    # Each step's top-1 is the token produced (greedy) or near it (beam); for greedy it must match.
    g = pipe(text, beam_size=1)
    assert all(s.top_k[0][0] == s.token for s in g.steps)
    assert pipe.translate([text], beam_size=1) == [g.translation]


def test_missing_folder_and_incomplete_checkpoint(tmp_path, sentiment_dir):
    with pytest.raises(CheckpointError, match="no such folder"):
        SentimentPipeline.from_pretrained(str(tmp_path / "nope"))
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text((sentiment_dir / "config.json").read_text())
    with pytest.raises(CheckpointError, match="missing model.safetensors"):
        SentimentPipeline.from_pretrained(str(tmp_path / "half"))


def test_damaged_and_mismatched_checkpoints(tmp_path, sentiment_dir):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(sentiment_dir, bad)
    (bad / "model.safetensors").write_bytes((sentiment_dir / "model.safetensors").read_bytes()[:200])
    with pytest.raises(CheckpointError, match=str(bad)):
        load_model(TransformerClassifier, bad)
    wrong = tmp_path / "wrong"
    shutil.copytree(sentiment_dir, wrong)
    cfg = json.loads((wrong / "config.json").read_text())
    cfg["d_model"] = 64
    (wrong / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match="does not load"):
        load_model(TransformerClassifier, wrong)


def test_hub_repo_offline_gives_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    with pytest.raises(CheckpointError, match="someone/some-model.*offline"):
        SentimentPipeline.from_pretrained("someone/some-model")


def test_save_pretrained_round_trip_gives_identical_outputs(tmp_path, sentiment_dir):
    model = load_model(TransformerClassifier, sentiment_dir)
    model.save_pretrained(tmp_path / "copy")
    again = load_model(TransformerClassifier, tmp_path / "copy")
    ids = torch.randint(4, 300, (2, 20))
    assert torch.equal(model(ids).logits, again(ids).logits)
    assert again.config == model.config


def test_a_checkpoint_of_the_other_model_is_refused(translation_dir, sentiment_dir):
    with pytest.raises(CheckpointError, match="does not describe a TransformerClassifier"):
        SentimentPipeline.from_pretrained(str(translation_dir))
    with pytest.raises(CheckpointError, match="does not describe a Seq2SeqTransformer"):
        TranslationPipeline.from_pretrained(str(sentiment_dir))


def test_missing_tensor_is_refused(tmp_path, sentiment_dir):
    import shutil

    from safetensors.torch import load_file, save_file

    bad = tmp_path / "bad"
    shutil.copytree(sentiment_dir, bad)
    tensors = load_file(bad / "model.safetensors")
    tensors.pop("head.1.weight")
    save_file(tensors, bad / "model.safetensors")
    with pytest.raises(CheckpointError, match="head.1.weight"):
        load_model(TransformerClassifier, bad)


def test_sentiment_without_attention_maps_gives_the_same_answer(sentiment):
    """need_weights=False (the API's path: nobody sees the maps) runs the fast attention and keeps no maps."""
    texts = ["A warm, funny film.", "Dull and far too long; the actors looked bored.", ""]
    for full, fast in zip(sentiment.analyze_many(texts), sentiment.analyze_many(texts, need_weights=False)):
        if isinstance(full, ValueError):
            assert isinstance(fast, ValueError)
            continue
        assert fast.attentions == [] and fast.label == full.label and fast.tokens == full.tokens
        assert fast.probabilities == pytest.approx(full.probabilities, abs=1e-5)
        torch.testing.assert_close(fast.pool_weights, full.pool_weights, atol=1e-5, rtol=0)
