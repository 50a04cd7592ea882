"""What a sentiment model is measured to misread: found in a short review, said in the status line with the
model's own contrast-set score, and silent for a model that reads that kind well or has no scores."""

import json
import shutil
from pathlib import Path

import pytest

from pipelines import SentimentPipeline
from pipelines.trust.weak_spots import WEAK_BELOW, contrast_scores, find_weak_spots
from transformer import CheckpointError
from viz.examples import REVIEW_LABELS, REVIEWS
from viz.sentiment.handlers import analyze_review

ROOT = Path(__file__).resolve().parents[2]
WEAK = {"negation": (11, 30), "but": (9, 20), "yet": (7, 10), "sarcasm": (3, 15)}
NOTICE = "This model often misreads"


def kinds(text, scores=WEAK):
    return {s.kind: s.words for s in find_weak_spots(text, scores)}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("This movie was not bad.", {"negation": ("not",)}),
        ("I didn't like it, and it isn’t funny.", {"negation": ("didn't", "isn't")}),  # straight and curly
        ("Nothing works. NEVER again, no.", {"negation": ("nothing", "never", "no")}),
        ("Great cast, but a hollow story; however, the music...", {"but": ("but", "however")}),
        ("It is long, yet never boring.", {"yet": ("yet",), "negation": ("never",)}),
        ("A note on the butter scene: nothingness, anyhow.", {}),  # words inside other words are not cues
        ("Oh great, another masterpiece of boredom.", {}),  # sarcasm has no surface cue: not looked for
    ],
)
def test_cues_are_whole_words_in_any_case(text, expected):
    assert kinds(text) == expected


def test_a_kind_is_weak_below_the_share_of_pairs_it_flips():
    at_the_bar = round(WEAK_BELOW * 30)  # 24 of 30 flip: read well enough
    assert kinds("not good", {"negation": (at_the_bar, 30)}) == {}
    assert kinds("not good", {"negation": (at_the_bar - 1, 30)}) == {"negation": ("not",)}
    assert kinds("not good", {"but": (0, 20)}) == {}  # no score for negation: nothing said about it
    assert kinds("not good", {}) == {}


def test_long_reviews_are_not_looked_at():
    """Nearly every long review holds a "not" or a "but"; the minimal pairs are single sentences."""
    assert kinds("not " + "good " * 39) == {"negation": ("not",)}  # 40 words
    assert kinds("not " + "good " * 40) == {}


def test_scores_come_from_the_contrast_entry_of_metrics():
    metrics = {"contrast": {"by_kind": {
        "negation": {"accuracy": 0.6, "flipped": 11, "pairs": 30},
        "but": {"flipped": "x", "pairs": 20},  # not a number
        "yet": {"flipped": 12, "pairs": 10},  # more flipped than pairs
        "hedge": {"pairs": 15},  # no count
    }}}  # fmt: skip
    assert contrast_scores(metrics) == {"negation": (11, 30)}
    assert contrast_scores({}) == {} and contrast_scores({"contrast": {"by_kind": [1]}}) == {}
    assert contrast_scores([]) == {}


def test_the_shipped_model_reads_its_own_scores():
    folder = ROOT / "assets" / "sentiment"
    recorded = json.loads((folder / "metrics.json").read_text())["contrast"]["by_kind"]
    pipe = SentimentPipeline.from_pretrained(str(folder))
    assert pipe.contrast == {kind: (k["flipped"], k["pairs"]) for kind, k in recorded.items()}
    _, _, status = analyze_review(pipe, "Not bad at all, I actually enjoyed it.", redraws=False)
    negation = recorded["negation"]
    if negation["flipped"] < WEAK_BELOW * negation["pairs"]:
        assert f'{NOTICE} negation ("not")' in status
        assert f"{negation['flipped']} of {negation['pairs']}" in status
    else:
        assert NOTICE not in status


def test_not_said_of_text_that_is_no_english_review():
    pipe = SentimentPipeline.from_pretrained(str(ROOT / "assets" / "sentiment"))
    pipe.contrast = {"negation": (0, 30)}  # whatever the shipped model's score, negation is weak here
    spanish = "No, mañana no vamos a la playa con mis primos."
    assert pipe(spanish, need_weights=False).out_of_domain, "pick a text the shipped model flags"
    assert [s.kind for s in pipe.weak_spots(spanish)] == ["negation"]  # the cue alone would fire
    _, _, status = analyze_review(pipe, spanish, redraws=False)
    assert "This does not look like an English review" in status and NOTICE not in status


def with_metrics(sentiment_dir, tmp_path, metrics) -> SentimentPipeline:
    folder = tmp_path / "model"
    shutil.copytree(sentiment_dir, folder)
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return SentimentPipeline.from_pretrained(str(folder))


def by_kind(**scores):
    return {"contrast": {"by_kind": {k: {"flipped": f, "pairs": n} for k, (f, n) in scores.items()}}}


def test_the_status_names_the_weak_construction_and_its_score(sentiment_dir, tmp_path):
    pipe = with_metrics(sentiment_dir, tmp_path, by_kind(negation=(11, 30), yet=(7, 10)))
    _, _, status = analyze_review(pipe, "I liked it, yet I would not watch it twice.", redraws=False)
    assert f'{NOTICE} negation ("not") and contrast with "yet" ("yet")' in status
    assert "11 of 30 and 7 of 10" in status
    _, _, status = analyze_review(pipe, "A warm and funny film.", redraws=False)
    assert NOTICE not in status


def test_no_notice_for_a_model_that_reads_negation_well_or_has_no_scores(sentiment_dir, sentiment, tmp_path):
    good = with_metrics(sentiment_dir, tmp_path, by_kind(negation=(28, 30)))
    for pipe in (good, sentiment):  # the tiny model has no metrics.json
        _, _, status = analyze_review(pipe, "This movie was not bad.", redraws=False)
        assert NOTICE not in status
    assert sentiment.contrast == {}


def test_a_wrong_example_is_said_once(sentiment_dir, tmp_path):
    """An example the model gets wrong gets the example notice alone, not both."""
    pipe = with_metrics(sentiment_dir, tmp_path, by_kind(negation=(0, 30), but=(0, 20), yet=(0, 10)))
    for name, text in REVIEWS:
        if not pipe.weak_spots(text):
            continue
        _, _, status = analyze_review(pipe, text, redraws=False)
        wrong = status.split()[0].strip("*") != REVIEW_LABELS[name]
        assert ("The model gets this example wrong" in status) == wrong
        assert (NOTICE in status) == (not wrong), name


def test_metrics_that_are_not_an_object_refuse_to_load(sentiment_dir, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(sentiment_dir, folder)
    (folder / "metrics.json").write_text("[1, 2]")
    with pytest.raises(CheckpointError, match="not a valid JSON object"):
        SentimentPipeline.from_pretrained(str(folder))
