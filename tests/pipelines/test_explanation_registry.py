"""Adding an explanation method is one registered class: a toy method shows up in the app's choices, the
pipeline's API (explanation_methods, explain, faithfulness, the JSON download) and the faithfulness benchmark."""

import json
from pathlib import Path

import numpy as np
import pytest

from pipelines import explanations
from pipelines.explanations import Attribution, Method, register
from pipelines.explanations.registry import unregister

ROOT = Path(__file__).resolve().parents[2]
TEXT = "A wonderful film with a dull ending."


class TokenLength(Method):
    """Toy: each token's score is the number of characters it covers (longer words 'matter more')."""

    name = "toy_token_length"
    label = "Token length (toy)"
    signed = False

    def review(self, adapter, ids, target, words):
        return Attribution(np.arange(ids.shape[1], dtype=np.float32) + 1.0)


@pytest.fixture
def toy():
    register(TokenLength)
    yield TokenLength
    unregister(TokenLength.name)


def test_a_registered_method_is_everywhere(toy, sentiment):
    from viz.explanations import explanation_panel

    assert ("Token length (toy)", "toy_token_length") in explanation_panel.method_choices()
    assert "toy_token_length" in sentiment.explanation_methods
    assert "toy_token_length" not in explanations.names("translation")  # it explains reviews only

    expl = sentiment.explain(TEXT, "toy_token_length")
    assert expl.method == "toy_token_length" and not expl.signed
    np.testing.assert_array_equal(expl.scores, np.arange(len(expl.tokens)) + 1.0)
    report = sentiment.faithfulness(expl)
    assert 0.0 <= report.method.curve[0] <= 1.0

    from viz.share import downloads

    path, _ = downloads.sentiment_download(sentiment, TEXT, "toy_token_length")
    assert json.loads(Path(path).read_text())["explanation"]["method"] == "toy_token_length"


def test_an_unregistered_method_is_refused(sentiment):
    with pytest.raises(ValueError, match="unknown method"):
        sentiment.explain(TEXT, "toy_token_length")


def test_a_method_without_progress_runs_when_progress_is_asked_for(sentiment):
    """The app passes a progress callback (issue 25 item 11); a registered method need not take it."""
    from pipelines.explanations.run import _with_progress

    calls = []
    assert _with_progress(lambda a, b: a + b, 1, 2, progress=lambda d, t: calls.append(d)) == 3
    assert _with_progress(lambda a, progress=None: (a, progress), 1, progress=print) == (1, print)


def test_a_models_default_comes_from_its_own_measurements():
    """A model's metrics.json records the default measured on it; a model without one is told so, and is never
    given the bundled model's numbers."""
    from pipelines.explanations import default_method

    project = default_method("sentiment")
    own = {"explanation_default": {"method": "occlusion", "why": "Measured on this model."}}
    assert default_method("sentiment", own) == {"method": "occlusion", "why": "Measured on this model."}
    unmeasured = default_method("sentiment", {})
    assert unmeasured["method"] == project["method"] and "not been measured on this model" in unmeasured["why"]
    assert project["why"] not in unmeasured["why"]
    bogus = {"explanation_default": {"method": "no-such-method"}}
    assert default_method("sentiment", bogus)["method"] == project["method"]


def test_the_pipeline_explains_with_its_models_default(sentiment):
    sentiment.metrics = {"explanation_default": {"method": "occlusion", "why": "x"}}
    try:
        assert sentiment.explain("A wonderful film.").method == "occlusion"
    finally:
        sentiment.metrics = {}


def test_every_task_says_what_its_explanation_is():
    """registry.EXPLAINS names each of pipelines.tasks' tasks once, and a method serves a task by implementing the
    function its entry names: the attention method serves every task, under the label of that task's function."""
    from pipelines.explanations.registry import EXPLAINS
    from pipelines.tasks import TASKS

    assert set(EXPLAINS) == set(TASKS)
    assert sorted(e.function for e in EXPLAINS.values()) == ["next_token", "review", "steps"]
    for name in TASKS:
        assert "attention" in explanations.names(name)
    assert explanations.label("sentiment", "attention") == "Attention (pooling weights)"
    assert explanations.label("translation", "attention") == "Cross-attention (mean of every head)"
    assert explanations.label("lm", "attention").startswith("Attention (the predicting position's")


def test_a_download_names_the_fields_of_its_task(sentiment):
    expl = sentiment.explain(TEXT, "attention")
    fields = expl.as_dict()
    assert list(fields)[4:] == ["tokens", "ids", "target", "probability", "words", "steps", "delta"]
    assert fields["target"] == expl.outputs[0] and "source_tokens" not in fields
