"""The app's example reviews carry the label a reader gives them: the app says when the model gets one wrong, and
`training.contrast` (and so `training.ship`) counts how many a model gets right."""

from dataclasses import replace
from pathlib import Path

import pytest

from pipelines import SentimentPipeline
from training.contrast import evaluate_model, score_examples
from viz.examples import REVIEW_LABELS, REVIEWS, built_in_example
from viz.notices import example_notice
from viz.sentiment.handlers import analyze_review

ROOT = Path(__file__).resolve().parents[2]
WRONG = "The model gets this example wrong"


class FixedLabel:
    """A sentiment pipeline stand-in that answers one label, 80% sure, for every text."""

    def __init__(self, pipe, label: str):
        self.pipe, self.label = pipe, label

    def __call__(self, text, **kw):
        other = next(name for name in self.pipe.labels if name != self.label)
        return replace(self.pipe(text, **kw), label=self.label, probabilities={self.label: 0.8, other: 0.2})

    def __getattr__(self, name):
        return getattr(self.pipe, name)


def test_every_example_has_a_label_and_is_found_by_its_text():
    assert set(REVIEW_LABELS) == {name for name, _ in REVIEWS}
    assert set(REVIEW_LABELS.values()) == {"negative", "positive"}
    for name, text in REVIEWS:
        assert built_in_example(text) == (name, REVIEW_LABELS[name])
        assert built_in_example("  " + text.replace(" ", "\n", 3) + " ") == (name, REVIEW_LABELS[name])
    assert built_in_example(REVIEWS[0][1] + " And more.") is None
    assert built_in_example("") is None


def test_the_notice_names_what_a_reader_says_only_when_the_model_disagrees():
    name, text = next((n, t) for n, t in REVIEWS if REVIEW_LABELS[n] == "positive")
    assert example_notice(text, "positive") is None
    notice = example_notice(text, "negative")
    assert WRONG in notice and f'"{name}"' in notice and "**positive**" in notice
    assert example_notice("A text of my own.", "negative") is None


@pytest.mark.parametrize("label", ["negative", "positive"])
def test_the_status_line_flags_exactly_the_examples_the_model_gets_wrong(sentiment, label):
    pipe = FixedLabel(sentiment, label)
    for name, text in REVIEWS:
        _, _, status = analyze_review(pipe, text, redraws=False)
        assert (WRONG in status) == (REVIEW_LABELS[name] != label), name
    _, _, status = analyze_review(pipe, "A fine film of my own making.", redraws=False)
    assert WRONG not in status


def test_score_examples_counts_and_names_the_wrong_ones():
    examples = [("a", "good film"), ("b", "bad film"), ("c", "not good")]
    expected = {"a": "positive", "b": "negative", "c": "negative"}
    predict = lambda texts: [  # noqa: E731  reads only the word "good"
        {"negative": 0.1, "positive": 0.9} if "good" in t else {"negative": 0.9, "positive": 0.1} for t in texts
    ]
    assert score_examples(predict, examples, expected, ["negative", "positive"]) == {
        "right": 2,
        "examples": 3,
        "wrong": ["c"],
    }
    with pytest.raises(ValueError, match="neutral"):
        score_examples(predict, examples, {**expected, "c": "neutral"}, ["negative", "positive"])


def test_the_shipped_model_is_flagged_on_the_examples_it_misreads():
    """The app's notice and the count in training.contrast agree with the shipped model's own answers."""
    folder = ROOT / "assets" / "sentiment"
    pipe = SentimentPipeline.from_pretrained(str(folder))
    wrong = [name for name, text in REVIEWS if pipe(text, need_weights=False).label != REVIEW_LABELS[name]]
    counted = evaluate_model(str(folder))["builtin_examples"]
    assert counted == {"right": len(REVIEWS) - len(wrong), "examples": len(REVIEWS), "wrong": wrong}
    for name, text in REVIEWS:
        _, _, status = analyze_review(pipe, text, redraws=False)
        assert (WRONG in status) == (name in wrong), name
