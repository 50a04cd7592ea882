"""The shipped models load from their unchanged config.json and give the outputs recorded before refactoring."""

import dataclasses
import json

import pytest
import torch
from shipped_outputs import GOLDEN, shipped_outputs


@pytest.fixture(scope="module")
def outputs():
    return shipped_outputs(), json.loads(GOLDEN.read_text())


def close(got, want):
    torch.testing.assert_close(torch.tensor(got), torch.tensor(want), atol=1e-4, rtol=1e-4)


def test_sentiment_outputs_are_unchanged(outputs):
    got, want = outputs
    assert len(got["sentiment"]) == len(want["sentiment"]) == 3
    for g, w in zip(got["sentiment"], want["sentiment"]):
        assert g["label"] == w["label"]
        close(g["logits"], w["logits"])
        close(g["pool_weights"], w["pool_weights"])
        close(g["attention_last_row"], w["attention_last_row"])


def test_translation_outputs_are_unchanged(outputs):
    got, want = outputs
    assert len(got["translation"]) == len(want["translation"]) == 3
    for g, w in zip(got["translation"], want["translation"]):
        assert (g["beam"], g["greedy"]) == (w["beam"], w["greedy"])
        close([g["beam_score"], g["greedy_score"]], [w["beam_score"], w["greedy_score"]])
        close(g["cross_last_row"], w["cross_last_row"])
        close(g["top_k"], w["top_k"])


def test_shipped_configs_load_as_written():
    from transformer import ClassifierConfig, Seq2SeqConfig

    root = GOLDEN.parents[2] / "assets"
    for cls, name in ((ClassifierConfig, "sentiment"), (Seq2SeqConfig, "translation")):
        raw = json.loads((root / name / "config.json").read_text())
        loaded = vars(cls(**raw))
        assert {k: loaded[k] for k in raw} == raw
        # fields added since a model was saved take their defaults (BERT's options: off, as before them)
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        # but the sizes derived from others when left 0: one key/value head a query head, d_model / n_heads wide
        defaults |= {"n_kv_heads": loaded["n_heads"], "head_dim": loaded["d_model"] // loaded["n_heads"]}
        assert all(loaded[k] == defaults[k] for k in loaded.keys() - raw.keys())
