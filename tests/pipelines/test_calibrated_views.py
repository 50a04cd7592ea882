"""Every probability a user sees is the calibrated one the prediction shows: the explanation's, the deletion
curve's first point, and the head table's effects (issue 25, items 1 and 4)."""

import pytest
import torch

from pipelines import SentimentPipeline
from pipelines.explanations.faithfulness import target_probs
from pipelines.trust.calibration import Temperature

REVIEW = "I expected to hate this film, but by the end I was completely won over. The cast is superb."


@pytest.fixture(scope="module")
def calibrated(sentiment_dir):
    """The tiny model with a temperature far from 1 and a length exponent, so raw and calibrated differ."""
    raw = SentimentPipeline.from_pretrained(str(sentiment_dir))
    return SentimentPipeline(raw.model, raw.tokenizer, raw.max_len, raw.head_tokens, raw.labels, Temperature(0.3, 0.2))


def test_the_deletion_curve_starts_at_the_predictions_probability(calibrated):
    result = calibrated(REVIEW)
    with torch.no_grad():
        raw = calibrated.model(torch.tensor([calibrated.encode(REVIEW)[0]])).logits[0].softmax(-1)
    assert abs(float(raw[calibrated.labels.index(result.label)]) - result.confidence) > 0.01  # they differ here
    for method in ("gradient_x_input", "attention"):
        expl = calibrated.explain(REVIEW, method)
        assert expl.probability == pytest.approx(result.confidence, abs=1e-5)
        report = calibrated.faithfulness(expl)
        assert float(report.method.curve[0]) == pytest.approx(result.confidence, abs=1e-5)
        assert float(report.random.curve[0]) == pytest.approx(result.confidence, abs=1e-5)


def test_a_deleted_variant_scores_as_the_pipeline_scores_that_text(calibrated):
    """Each point of the curve is the calibrated probability of the shorter sequence (its own length)."""
    ids = calibrated.encode(REVIEW)[0]
    short = ids[: len(ids) // 2]
    text = calibrated.tokenizer.decode(short)
    label = calibrated.labels.index(calibrated(REVIEW).label)
    got = target_probs(calibrated, [ids, short], label)
    expected = calibrated.predict([REVIEW])[0][calibrated.labels[label]]
    assert got[0] == pytest.approx(expected, abs=1e-5)
    if calibrated.encode(text)[0] == short:  # the decoded text reads as the same ids
        assert got[1] == pytest.approx(calibrated.predict([text])[0][calibrated.labels[label]], abs=1e-5)


def test_head_effects_are_changes_of_the_calibrated_probability(calibrated):
    rows = calibrated.head_table(REVIEW)
    intact = calibrated(REVIEW)
    for r in rows:
        off = calibrated(REVIEW, head_mask={("self", r["layer"], r["head"]): 0.0})
        expected = off.probabilities[intact.label] - intact.probabilities[intact.label]
        assert r["effect"] == pytest.approx(expected, abs=1e-5)
    assert any(abs(r["effect"]) > 1e-4 for r in rows)
