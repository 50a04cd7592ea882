"""The Learn tab's library (pipelines/learn): every step's check within 1e-5, its code the file's own lines, its text
at most 120 words, and its numbers the model's own, on the tiny test models and the bundled ones."""

from pathlib import Path

import numpy as np
import pytest

from pipelines.learn import walk

ROOT = Path(__file__).resolve().parents[2]
TEXT = "The film was not good at all, but the actors were great."


@pytest.fixture(scope="module")
def scratch_sentiment():
    from pipelines import SentimentPipeline

    return SentimentPipeline.from_pretrained(str(ROOT / "assets" / "sentiment-scratch"))


def assert_sound(w):
    """Each step: its check within 1e-5, its code the file's lines, its text at most 120 words, no NaN."""
    for step in w.steps:
        assert len(step.text.split()) <= 120, step.key
        if step.check is not None:
            assert step.check.difference <= 1e-5, (step.key, step.check)
        if step.code is not None:
            lines = (ROOT / step.code.path).read_text().splitlines(keepends=True)
            assert step.code.text == "".join(lines[step.code.start - 1 : step.code.end]), step.key
            assert step.code.text.strip() and step.code.shapes
        for name, a in step.arrays.items():
            if a.dtype.kind == "f":
                assert np.isfinite(a).all(), (step.key, name)


def test_the_scratch_classifier_walks_with_every_check_within_1e_5(scratch_sentiment):
    w = walk(scratch_sentiment, TEXT)
    assert_sound(w)
    assert [s.key for s in w.steps][:3] == ["tokens", "plain_attention", "qkv"]
    assert w.map.family == "encoder" and w.map.n_layers == 2 and w.map.n_heads == 4


def test_the_tiny_classifier_walks(sentiment):
    assert_sound(walk(sentiment, TEXT))
