"""Our models out through `transformers`: the folder `python -m training.publish --dry-run` assembles, and the
checks that it loads with the Auto classes and trust_remote_code=True and gives the pipelines' numbers (for the tiny
models and the bundled ones)."""

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import transformers
from transformers import AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer

from pipelines import SentimentPipeline, TranslationPipeline
from pipelines.batching import pad
from training import publish
from transformer import greedy_decode
from transformer.generation import row_limits

REVIEWS = ["A wonderful, moving film.", "Dull and far too long. I left early.", "not bad at all"]


GERMAN = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.", "Eine Frau liest."]


def published(task: str, model_dir: Path, out: Path) -> Path:
    """The folder `python -m training.publish <task> --dry-run --out out` assembles from model_dir."""
    argv = [task, "--model", str(model_dir), "--repo-id", f"alice/demo-{task}", "--dry-run", "--out", str(out)]
    assert publish.main(argv) == 0
    return out / "main" if (out / "main").is_dir() else out  # a model with snapshots: one folder per branch


def auto(cls, folder: Path):
    return cls.from_pretrained(str(folder), trust_remote_code=True)


def check_classifier(folder: Path) -> None:
    """Same token ids, logits, attention maps, head switching and labels as SentimentPipeline on this folder."""
    pipe = SentimentPipeline.from_pretrained(str(folder))
    model, tok = auto(AutoModelForSequenceClassification, folder), auto(AutoTokenizer, folder)
    assert type(model).__name__ == "AttentionDemoForSequenceClassification" and not model.training
    assert model.config.id2label == dict(enumerate(pipe.labels))

    batch = tok(REVIEWS, padding=True, return_tensors="pt")  # right-padded with <pad>
    real = batch["attention_mask"].bool()
    assert [row[m].tolist() for row, m in zip(batch["input_ids"], real)] == pipe.encode_many(REVIEWS)
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
        ours = pipe.model(batch["input_ids"], need_weights=True)
    assert torch.equal(out.logits, ours.logits)
    raw, _ = pipe.raw_logits(REVIEWS)  # the pipeline's own batches (sorted by length, padded differently)
    torch.testing.assert_close(out.logits, raw, rtol=0, atol=1e-5)

    B, T = batch["input_ids"].shape
    assert len(out.attentions) == pipe.n_layers
    for layer, (theirs, mine) in enumerate(zip(out.attentions, ours.attentions)):
        assert theirs.shape == (B, pipe.n_heads, T, T) and torch.equal(theirs, mine)
        for i, text in enumerate(REVIEWS):  # each review run alone, as the app runs it
            n = int(real[i].sum())
            # alone or in a padded batch: the same maps up to float rounding (1.2e-6 seen on the 6 x 12 model)
            torch.testing.assert_close(theirs[i, :, :n, :n], pipe(text).attentions[layer], rtol=0, atol=1e-5)

    with torch.no_grad():
        plain = model(**batch)
        off = torch.ones(pipe.n_layers, pipe.n_heads)
        off[0, 1] = 0.0
        switched = model(**batch, head_mask=off, labels=torch.tensor([1, 0, 0]))
    assert plain.attentions is None  # and the model's fast path (no weights) ran, as the pipeline's raw_logits
    torch.testing.assert_close(plain.logits, raw, rtol=0, atol=1e-5)
    torch.testing.assert_close(switched.logits, pipe.raw_logits(REVIEWS, head_mask={("self", 0, 1): 0.0})[0])
    assert not torch.allclose(switched.logits, out.logits)
    torch.testing.assert_close(switched.loss, F.cross_entropy(switched.logits, torch.tensor([1, 0, 0])))

    classify = transformers.pipeline("text-classification", model=str(folder), trust_remote_code=True)
    probs = raw.softmax(-1)  # uncalibrated, as the card says
    for got, p in zip(classify(REVIEWS), probs):
        assert got["label"] == pipe.labels[int(p.argmax())] and got["score"] == pytest.approx(float(p.max()), abs=1e-5)


def check_translator(folder: Path) -> list[str]:
    """Same source ids, teacher-forced logits and the three kinds of attention as TranslationPipeline's model,
    and generate() decodes as greedy_decode. Returns the generated English."""
    pipe = TranslationPipeline.from_pretrained(str(folder))
    model, tok = auto(AutoModelForSeq2SeqLM, folder), auto(AutoTokenizer, folder)
    assert type(model).__name__ == "AttentionDemoForConditionalGeneration" and not model.training
    c = pipe.model.config

    batch = tok([t + tok.eos_token for t in GERMAN], padding=True, return_tensors="pt")  # as the card shows
    src_ids, _, _ = pipe.encode_source(GERMAN)
    real = batch["attention_mask"].bool()
    assert [row[m].tolist() for row, m in zip(batch["input_ids"], real)] == src_ids
    src = pad(src_ids, c.pad_id)  # (B, Ts)
    assert torch.equal(batch["input_ids"], src)

    limits = row_limits(pipe.model, src)
    hyps = greedy_decode(pipe.model, src, limits=limits)
    tgt = pad([[c.bos_id, *h.tokens] for h in hyps], c.pad_id)  # (B, Tt)
    with torch.no_grad():
        out = model(**batch, decoder_input_ids=tgt, output_attentions=True)
        enc = pipe.model.encode(src, need_weights=True)
        ours = pipe.model.decode(tgt, enc, need_weights=True)
    assert torch.equal(out.logits, ours.logits)
    (B, Ts), Tt, H = src.shape, tgt.size(1), pipe.n_heads
    for theirs, mine, shape in (
        (out.encoder_attentions, enc.attentions, (B, H, Ts, Ts)),
        (out.decoder_attentions, ours.self_attentions, (B, H, Tt, Tt)),
        (out.cross_attentions, ours.cross_attentions, (B, H, Tt, Ts)),
    ):
        assert len(theirs) == len(mine) and all(a.shape == shape and torch.equal(a, b) for a, b in zip(theirs, mine))

    generated = model.generate(**batch, max_new_tokens=int(limits.max()))  # (B, 1 + steps): decoder start first
    assert (generated[:, 0] == c.bos_id).all()
    for row, h in zip(generated[:, 1:].tolist(), hyps):
        assert row[: len(h.tokens)] == h.tokens
        if h.finished:
            assert row[len(h.tokens)] == c.eos_id
    return [tok.decode(row, skip_special_tokens=True).strip() for row in generated]
