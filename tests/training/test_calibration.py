"""Calibration: ECE by hand, temperature fits that recover known temperatures, an overconfident tiny model made
honest without changing a single prediction, and the stored temperature surviving save, load and publish."""

import json
import math

import pytest
import torch
from tiny_models import read_jsonl

from pipelines import SentimentPipeline
from pipelines.trust.calibration import (
    Temperature,
    expected_calibration_error,
    fit_length_temperature,
    fit_temperature,
    reliability,
)
from pipelines.trust.domain import DomainModel, quantiles

REVIEWS = read_jsonl("imdb_tiny.jsonl")


def test_ece_and_reliability_by_hand():
    probs = torch.tensor([[0.96, 0.04], [0.96, 0.04], [0.43, 0.57], [0.57, 0.43]])
    labels = torch.tensor([0, 1, 1, 0])  # the two 0.96 answers: one right, one wrong; the 0.57 ones: both right
    rel = reliability(probs, labels, n_bins=10)
    assert rel.counts == [0, 2, 0, 0, 0, 0, 0, 0, 0, 2]
    assert rel.accuracy[1] == 1.0 and rel.accuracy[9] == 0.5
    assert rel.edges[0] == 0.5 and rel.edges[-1] == 1.0
    assert expected_calibration_error(probs, labels) == pytest.approx(0.5 * 0.43 + 0.5 * 0.46)


def _sampled(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """True logits (n, 3) and labels drawn from their softmax: a perfectly calibrated model."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, 3, generator=g) * 2
    return z, torch.multinomial(z.softmax(-1), 1, generator=g)[:, 0]


def test_fit_temperature_recovers_a_known_temperature():
    z, y = _sampled(6000)
    assert fit_temperature(z * 3.0, y) == pytest.approx(3.0, rel=0.1)  # overconfident by 3x
    assert fit_temperature(z / 2.0, y) == pytest.approx(0.5, rel=0.1)  # underconfident


def test_length_temperature_recovers_temperature_and_exponent():
    z, y = _sampled(8000, seed=1)
    lengths = torch.randint(8, 512, (len(y),))
    truth = Temperature(2.0, 0.5)
    fitted = fit_length_temperature(z * truth.values(lengths)[:, None], y, lengths)
    assert fitted.temperature == pytest.approx(2.0, rel=0.1)
    assert fitted.length_exponent == pytest.approx(0.5, abs=0.08)


@pytest.fixture
def overconfident(sentiment_dir):
    """The tiny untrained classifier with its output layer scaled up: near 0/1 probabilities, chance accuracy."""
    pipe = SentimentPipeline.from_pretrained(str(sentiment_dir))
    with torch.no_grad():
        pipe.model.head[-1].weight.mul_(40.0)
        pipe.model.head[-1].bias.mul_(40.0)
    return pipe


def test_temperature_scaling_lowers_ece_and_keeps_every_prediction(overconfident):
    texts, labels = [r["text"] for r in REVIEWS], torch.tensor([r["label"] for r in REVIEWS])
    logits, lengths = overconfident.raw_logits(texts)
    before = overconfident.predict(texts)
    ece_before = expected_calibration_error(logits.softmax(-1), labels)
    assert ece_before > 0.3  # made overconfident on purpose

    overconfident.calibration = Temperature(fit_temperature(logits, labels))
    assert overconfident.calibration.temperature > 5
    after = overconfident.predict(texts)
    probs_after = torch.tensor([[p["negative"], p["positive"]] for p in after])
    assert expected_calibration_error(probs_after, labels) < ece_before / 2
    assert [max(p, key=p.get) for p in after] == [max(p, key=p.get) for p in before]  # argmax unchanged
    one = overconfident(texts[0])
    assert one.probabilities == pytest.approx(after[0], abs=1e-5)  # the single-text path applies it too


def _domain(pipe, seed: int = 0) -> DomainModel:
    from pipelines.trust.domain import piece_letters

    V = pipe.model.config.vocab_size
    g = torch.Generator().manual_seed(seed)
    scores = (torch.randn(V, generator=g) * 2).numpy()
    letters = piece_letters(pipe.tokenizer, V)
    refs = {"words": quantiles([float(x) for x in torch.randn(300, generator=g)])}
    return DomainModel(scores, letters, refs, 0.2, {"target_rate": 0.03})


def test_temperature_and_domain_round_trip_through_save_load_and_the_published_folder(sentiment_dir, tmp_path):
    from training import publish

    pipe = SentimentPipeline.from_pretrained(str(sentiment_dir))
    pipe.calibration, pipe.domain = Temperature(1.7, -0.3), _domain(pipe)
    texts = [r["text"] for r in REVIEWS[:6]] + ["Der Zug hat Verspätung.", "def f(x): return x"]
    want_probs, want_domain = pipe.predict(texts), pipe.domain_scores(texts)

    pipe.save_pretrained(tmp_path / "saved")
    prep = json.loads((tmp_path / "saved" / "preprocessing.json").read_text())
    assert prep["temperature"] == 1.7 and prep["temperature_length_exponent"] == -0.3
    published = tmp_path / "published"
    args = ["sentiment", "--model", str(tmp_path / "saved"), "--repo-id", "a/b", "--dry-run", "--out", str(published)]
    assert publish.main(args) == 0
    for folder in (tmp_path / "saved", published):
        again = SentimentPipeline.from_pretrained(str(folder))
        assert again.calibration == Temperature(1.7, -0.3)
        assert again.domain.threshold == 0.2 and again.domain.references == pipe.domain.references
        assert [p["positive"] for p in again.predict(texts)] == pytest.approx([p["positive"] for p in want_probs])
        got = again.domain_scores(texts)
        assert [f for f, _ in got] == [f for f, _ in want_domain]
        assert [s for _, s in got] == pytest.approx([s for _, s in want_domain], abs=2e-3)  # fp16 token scores


def test_a_model_without_a_temperature_is_unchanged(sentiment_dir):
    pipe = SentimentPipeline.from_pretrained(str(sentiment_dir))
    assert pipe.calibration == Temperature(1.0, 0.0) and pipe.domain is None
    logits, lengths = pipe.raw_logits(["A fine film."])
    assert pipe.predict(["A fine film."])[0]["positive"] == pytest.approx(float(logits.softmax(-1)[0, 1]))
    result = pipe("A fine film.")
    assert result.out_of_domain is False and result.domain_score is None


def test_evaluate_reports_ece_and_reads_an_sst2_style_sentence_column(sentiment_dir, tmp_path, capsys):
    from training.evaluate import main as evaluate

    data = tmp_path / "sst2_like.jsonl"
    data.write_text(
        "".join(
            json.dumps({"sentence": r["text"], "label": r["label"], "idx": i}) + "\n" for i, r in enumerate(REVIEWS)
        )
    )
    assert evaluate(["sentiment", "--model", str(sentiment_dir), "--data", str(data)]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == len(REVIEWS) and 0 <= result["accuracy"] <= 1
    assert 0 <= result["ece"] <= 0.5 and not math.isnan(result["ece"])
    assert "out_of_domain_rate" not in result  # this folder has no out-of-domain statistics


def test_model_card_shows_ece_and_the_calibration_record():
    from training.release.model_card import model_card

    metrics = {
        "task": "sentiment",
        "test": {"accuracy": 0.9, "ece": 0.0152, "n": 100, "split": "test"},
        "calibration": {
            "temperature": 1.19,
            "temperature_length_exponent": -0.3,
            "temperature_fit": {"held.parquet": {"n": 50, "accuracy": 0.8, "ece_before": 0.12, "ece_after": 0.04}},
            "out_of_domain_threshold": 0.016,
            "test": {"sst2.parquet": {"accuracy": 0.74, "ece": 0.073, "out_of_domain_rate": 0.033}},
        },
    }
    config = {"d_model": 8, "n_layers": 1, "n_heads": 2}
    card = str(model_card("sentiment", "a/b", config, 1000, metrics))
    assert "type: ece" in card and "value: 0.0152" in card  # in the model-index
    assert "## Calibration and out-of-domain notice" in card
    assert "T(n) = 1.190 x (n / 64) ^ -0.300" in card and "ECE 0.120 before, 0.040 after" in card
    assert "sst2.parquet: accuracy 74.00%, ece 0.073, out_of_domain_rate 3.3%" in card
    assert "## Calibration" not in str(model_card("sentiment", "a/b", config, 1000, {"task": "sentiment"}))
    # one temperature, fitted on one held-out file and only measured on the other (--temperature-data)
    cal = metrics["calibration"]
    cal.update(temperature=0.91, temperature_length_exponent=0.0)
    cal["temperature_fit"]["phrases.jsonl"] = {**cal["temperature_fit"]["held.parquet"], "fitted_on": False}
    cal["temperature_fit"]["held.parquet"]["fitted_on"] = True
    card = str(model_card("sentiment", "a/b", config, 1000, metrics))
    assert "one temperature for every input length, T = 0.910" in card and "T(n)" not in card
    assert "held.parquet: ECE 0.120 before, 0.040 after (50 inputs)" in card
    assert "phrases.jsonl: ECE 0.120 before, 0.040 after (50 inputs; not fitted on, only measured)" in card
