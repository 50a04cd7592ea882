"""Sentiment on IMDB and SST-2 together, MLM pre-training, and the contrast set, on tiny fixtures."""

import json

import pandas as pd
import pytest
import torch
from tiny_models import read_jsonl

from training.cli import main as train_main
from training.contrast import PAIRS, load_pairs, score_pairs
from training.pretrain import MASK, N_SPECIAL, mask_tokens

TINY = "--vocab-size 300 --d-model 32 --n-heads 4 --n-layers 1 --d-ff 64 --threads 1 --ngram-buckets 101".split()
TINY += "--ngram-dim 8 --val-size 8 --sst2-val-size 6".split()


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory):
    imdb = tmp_path_factory.mktemp("imdb")
    reviews = pd.DataFrame(read_jsonl("imdb_tiny.jsonl"))
    reviews.to_parquet(imdb / "train.parquet")
    reviews.to_parquet(imdb / "test.parquet")
    unlabeled = reviews.assign(label=-1)
    unlabeled.to_parquet(imdb / "unsupervised.parquet")
    sst2 = tmp_path_factory.mktemp("sst2")
    pairs = load_pairs()
    rows = [{"sentence": p[s].lower(), "label": p[f"label_{s}"], "idx": i} for i, p in enumerate(pairs) for s in "ab"]
    pd.DataFrame(rows).to_parquet(sst2 / "train.parquet")
    return imdb, sst2


def test_contrast_set_is_balanced_minimal_pairs():
    pairs = load_pairs(PAIRS)
    assert len(pairs) >= 100
    assert all(p["label_a"] != p["label_b"] for p in pairs)  # every pair flips its label
    kinds = {p["kind"] for p in pairs}
    assert {"negation", "but", "yet", "intensifier", "hedge", "sarcasm"} <= kinds


def test_score_pairs_counts_flips():
    pairs = [
        {"kind": "negation", "a": "good", "label_a": 1, "b": "not good", "label_b": 0},
        {"kind": "but", "a": "x but bad", "label_a": 0, "b": "y but good", "label_b": 1},
    ]
    # A model that reads only the word "good": right on 3 of 4 sides, one pair flipped.
    predict = lambda texts: [
        {"negative": 0.1, "positive": 0.9} if "good" in t else {"negative": 0.9, "positive": 0.1} for t in texts
    ]  # noqa: E501, E731
    result = score_pairs(predict, pairs, ["negative", "positive"])
    assert result["contrast_accuracy"] == 0.75 and result["pairs_flipped"] == 1
    assert result["by_kind"]["negation"]["flipped"] == 0 and result["by_kind"]["but"]["flipped"] == 1


def test_mask_tokens_is_reproducible_and_never_masks_specials():
    ids = torch.tensor([[1, 10, 11, 12, 13, 14, 15, 16, 2, 0, 0]] * 50)
    a = mask_tokens(ids, seed=3, vocab_size=40)
    b = mask_tokens(ids, seed=3, vocab_size=40)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    corrupted, where, targets = a
    assert not where[ids < N_SPECIAL].any()  # padding, <s>, </s> are never predicted
    assert torch.equal(targets, ids[where]) and (corrupted[where] == MASK).float().mean() > 0.5
    assert torch.equal(corrupted[~where], ids[~where])  # only chosen positions change


def test_pretrain_then_finetune_on_imdb_and_sst2(data_dirs, tmp_path):
    imdb, sst2 = data_dirs
    pre = tmp_path / "pretrain"
    common = ["--data-dir", str(imdb), "--sst2-dir", str(sst2), *TINY]
    assert train_main(["pretrain", *common, "--out", str(pre), "--seq-len", "32", "--max-len", "64"]) == 0
    assert (pre / "best" / "tokenizer.json").is_file()
    summary = json.loads((pre / "summary.json").read_text())
    assert 0.0 <= summary["best_mlm_accuracy"] <= 1.0
    out = tmp_path / "finetune"
    args = ["sentiment", *common, "--out", str(out), "--init-from", str(pre / "best"), "--max-len", "64"]
    assert train_main([*args, "--head", "16", "--batch-size", "8", "--max-tokens", "256"]) == 0
    events = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    val = [e for e in events if e["event"] == "validation"][-1]
    assert {"imdb_accuracy", "sst2_accuracy"} <= set(val)
    assert val["accuracy"] == pytest.approx((val["imdb_accuracy"] + val["sst2_accuracy"]) / 2)
    # The fine-tuned encoder starts from the pre-trained one: same tokenizer, same embedding shape.
    from pipelines import SentimentPipeline

    pipe = SentimentPipeline.from_pretrained(str(out / "best"))
    assert pipe.tokenizer.get_vocab() == SentimentPipeline.from_pretrained(str(pre / "best")).tokenizer.get_vocab()
    held = [json.loads(line) for line in (out / "heldout-sst2.jsonl").read_text().splitlines()]
    assert len(held) == 6 and {"text", "label"} <= set(held[0])


def test_model_card_reports_the_contrast_set():
    from training.model_card import _evaluation

    metrics = {
        "test": {"accuracy": 0.9, "n": 10, "split": "test"},
        "contrast": {
            "contrast_accuracy": 0.75,
            "pairs_flipped": 3,
            "pairs": 5,
            "by_kind": {"negation": {"accuracy": 0.5, "flipped": 1, "pairs": 2}},
        },
    }
    text = _evaluation("sentiment", metrics)
    assert "Contrast set (5 hand-written minimal pairs" in text and "75.0%" in text and "negation 1/2" in text
    assert "Contrast set" not in _evaluation("sentiment", {"test": metrics["test"]})
