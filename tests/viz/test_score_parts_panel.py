"""A clicked cell's score taken apart (viz/attention/score_parts.py), on the tiny models of every tab, by the model
that made the view: the figure's bars are the pipeline's terms, the note's sum of terms is the model's own score
(its printed difference tiny), the least-weighed key is the row's smallest weight; a bad cell, no result or a model
that cannot take a score apart is a plain message, never a traceback."""

import numpy as np
import pytest

from pipelines.kinds import KINDS
from viz.attention import score_parts as sp
from viz.attention import task_views

REVIEW = "A wonderful film, but the ending was dull and far too long."
GERMAN = "Ein Mann fährt mit dem Fahrrad."


def test_a_cell_is_parsed_from_a_click():
    assert sp.parse_cell("cross:3:5#1712") == sp.Cell("cross", 3, 5)
    assert sp.parse_cell("self:0:2") == sp.Cell("self", 0, 2)
    for bad in (None, "", "self:3", "nokind:1:2", "self:a:2", "src:1"):
        assert sp.parse_cell(bad) is None


def check_drawn(pipe, view, cell: sp.Cell, layer: int, head: int):
    """The figure and note of one cell against the pipeline's own decomposition of it."""
    fig, note = sp.score_parts(pipe, view, f"{cell.kind}:{cell.query}:{cell.key}#7", layer, head)
    assert fig is not None, note
    parts = sp.cell_parts(pipe, view, cell, layer, head)
    assert abs(parts.score - (parts.pairs.sum() + parts.rest)) <= 1e-4 * max(1.0, abs(parts.score))
    # the top terms' bars are the pipeline's largest terms, largest first
    clicked = fig.data[0]
    top = parts.top(len(clicked.x))
    assert list(clicked.y) == [f"{q} × {k}" for q, k, _ in top]
    np.testing.assert_allclose(clicked.x, [v for *_, v in top], atol=1e-4)
    # the least-weighed key: the smallest weight of the row among the keys the head may read
    km = task_views.kinds(view)[cell.kind]
    row = np.asarray(km.maps[layer][head][cell.query], dtype=np.float64)
    allowed = [j for j in range(len(row)) if j != cell.key and (not KINDS[cell.kind].causal or j <= cell.query)]
    least = sp.least_key(view, cell, layer, head)
    assert least in allowed and row[least] == min(row[j] for j in allowed)
    assert len(fig.data) == 6  # three panels, two keys
    other = sp.cell_parts(pipe, view, sp.Cell(cell.kind, cell.query, least), layer, head)
    np.testing.assert_allclose(fig.data[3].x[0], other.pairs[_index(parts, top[0])], atol=1e-4)
    # the note prints the model's score and the terms' difference from it
    assert f"**{parts.score:.3f}**" in note and "difference" in note
    assert abs(float(note.split("difference ")[1].split(".\n")[0].rstrip("."))) <= 1e-4 * max(1.0, abs(parts.score))
    assert len(fig.to_json()) < 300_000
    return parts


def _index(parts, term) -> tuple[int, int]:
    q, k, _ = term
    return parts.parts.index(q), parts.key_parts.index(k)


def test_a_review_cell(sentiment):
    from viz.sentiment.handlers import analyze_review

    view = analyze_review(sentiment, REVIEW)[0]
    parts = check_drawn(sentiment, view, sp.Cell("self", 3, 1), 1, 0)
    assert parts.query == 3 and parts.key == 1 and parts.layer == 1


@pytest.mark.parametrize("kind", ["cross", "encoder", "decoder"])
def test_a_translation_cell(translation, kind):
    from viz.translation.handlers import translate

    view = translate(translation, GERMAN, "greedy")[0]
    km = task_views.kinds(view)[kind]
    query = min(2, km.maps.shape[2] - 1)
    parts = check_drawn(translation, view, sp.Cell(kind, query, 1 if kind != "decoder" else 0), 0, 1)
    assert parts.kind == kind


def test_a_continuation_cell(lm):
    from viz.next_word.handlers import generate

    view = list(generate(lm, "the film was good and", "greedy", max_new_tokens=3))[-1][0]
    n = view.maps.maps["causal"].shape[2]
    check_drawn(lm, view, sp.Cell("causal", n - 1, 1), 1, 1)


def test_no_result_or_no_cell_is_a_message(sentiment):
    from viz.sentiment.handlers import analyze_review

    assert sp.score_parts(sentiment, None, "self:1:1", 0, 0) == (None, sp.NO_RESULT)
    view = analyze_review(sentiment, REVIEW)[0]
    for bad in (None, "cross:1:1", "self:999:1", "self:1:999"):
        assert sp.score_parts(sentiment, view, bad, 0, 0) == (None, sp.PICK)


def test_a_model_that_cannot_take_a_score_apart_is_a_message(sentiment):
    from viz.sentiment.handlers import analyze_review

    class NoDecomposition:  # as a model served by transformers without hook points would answer
        def score_attribution(self, *args, **kwargs):
            raise NotImplementedError("this model has no decomposition")

    view = analyze_review(sentiment, REVIEW)[0]
    fig, note = sp.score_parts(NoDecomposition(), view, "self:1:1", 0, 0)
    assert fig is None and "cannot be taken apart" in note and "no decomposition" in note


def test_the_panel_takes_apart_by_the_model_that_made_the_view(sentiment):
    from pipelines.models.model_registry import ModelRegistry
    from viz.attention.score_parts_panel import take_apart
    from viz.sentiment.handlers import analyze_review

    view = analyze_review(sentiment, REVIEW)[0]
    fig, note = take_apart(ModelRegistry.of(sentiment), view, "self:2:1#3", 1, 1)
    assert fig is not None and "difference" in note
    assert take_apart(ModelRegistry.of(sentiment), None, "self:2:1", 1, 1) == (None, sp.NO_RESULT)

    class Failing:
        def get(self, name=None):
            raise RuntimeError("the model process ended")

    fig, note = take_apart(Failing(), view, "self:2:1", 1, 1)
    assert fig is None and note == "Could not take this score apart: the model process ended"


def test_a_transformers_model_gets_plain_messages(hf_classifier):
    """A classifier served by transformers has no hook points to take a score apart by: every view says so."""
    from viz.heads.composition_panel import compute
    from viz.heads.panel import measure_over_set
    from viz.sentiment.handlers import analyze_review

    view = analyze_review(hf_classifier, REVIEW)[0]
    fig, note = sp.score_parts(hf_classifier, view, "self:2:1", 0, 0)
    assert fig is None and note.startswith("This score cannot be taken apart here:") and "transformers" in note
    fig, note, kept = compute(hf_classifier, None, "K-composition", "self")
    assert fig is None and kept is None and note.startswith("Could not compute the composition:")
    _, status, text = measure_over_set(hf_classifier, "sentiment")
    assert status.startswith("Could not measure the heads over the set:") and text == ""
