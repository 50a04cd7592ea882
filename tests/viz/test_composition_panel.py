"""The composition view (viz/heads/composition.py, composition_panel.py): each head's strongest composition from an
earlier head is the largest of the pipeline's scores into it, the matrix and the clicked head's list say the same
numbers, a click's head is parsed from the matrix's labels, and a model that cannot compute it is a plain message."""

import numpy as np
import pytest

from pipelines.lens.composition import Composition, Copying
from viz.heads import composition as cv
from viz.heads import composition_panel as panel


@pytest.fixture
def comp() -> Composition:
    """Scores of a 3-layer, 2-head model, zero where the earlier head is not earlier (as the pipeline gives them)."""
    rng = np.random.default_rng(0)
    L, H = 3, 2
    scores, baseline = rng.uniform(0, 1, (L, H, L, H)), np.full((L, H, L, H), 0.1)
    earlier = np.arange(L)[:, None, None, None] < np.arange(L)[None, None, :, None]  # l1 < l2
    return Composition("k", "self", np.where(earlier, scores, 0.0), np.where(earlier, baseline, 0.0))


def test_each_head_shows_its_strongest_earlier_head(comp):
    best = cv.strongest_into(comp)
    assert np.isnan(best[0]).all()  # the first layer reads no earlier head
    for layer in (1, 2):
        for head in range(2):
            assert best[layer, head] == comp.scores[:layer, :, layer, head].max()
    copying = Copying("self", np.array([[1.0, -0.5], [0.2, 0.0], [0.9, 0.3]]))
    fig = cv.composition_figure(comp, copying)
    top, bottom = fig.data
    assert list(top.z[0]) == [None, None] and top.z[2][1] == pytest.approx(best[2, 1], abs=1e-4)
    assert top.meta == {"pick": cv.PICK_BOX} and bottom.meta == {"pick": cv.PICK_BOX}  # a click names its head
    assert [list(row) for row in bottom.z] == copying.scores.tolist()
    assert top.zmin == pytest.approx(comp.baseline_mean)  # the colour starts at the random baseline
    assert list(top.y) == ["layer 1", "layer 2", "layer 3"] and list(top.x) == ["head 1", "head 2"]
    assert len(fig.to_json()) < 300_000


def test_a_click_names_a_head_from_its_labels():
    assert cv.parse_head("3:2#99", 3, 2) == (2, 1)
    for bad in (None, "", "0:1", "4:1", "1:3", "a:b", "1"):
        assert cv.parse_head(bad, 3, 2) is None


def test_the_clicked_heads_list_is_the_pipelines(comp):
    copying = Copying("self", np.array([[1.0, -0.5], [0.2, 0.0], [0.9, 0.3]]))
    note = cv.head_note(comp, copying, [("the", 2.5), ("<b>", 1.0)], 2, 1)
    for layer, head, score in comp.into(2, 1, cv.TOP):
        assert f"L{layer}H{head} {score:.3f}" in note
    assert "Later heads whose keys it feeds most: none" in note  # the last layer feeds none
    assert "Copying score +0.300" in note
    assert "`'<b>'` +1.00" in note  # a token as typed, in a code span (shown as text, never as HTML)


def test_a_model_that_cannot_compute_it_is_a_message(sentiment):
    class Broken:
        def composition(self, kind, attention):
            raise ValueError("not for a transformers model")

    fig, note, kept = panel.compute(Broken(), None, "K-composition", "self")
    assert fig is None and kept is None and "not for a transformers model" in note
    assert panel.pick(None, None, "1:1") == "Compute the composition first."


def test_the_kinds_of_attention_that_compose():
    assert cv.attentions("sentiment") == ["self"]
    assert cv.attentions("translation") == ["encoder", "decoder"]
    assert cv.attentions("lm") == ["causal"]


@pytest.mark.parametrize("task", ["sentiment", "translation", "lm"])
def test_every_tabs_model_draws_it_and_lists_a_head(request, task):
    pipe = request.getfixturevalue(task)
    for attention in cv.attentions(task):
        fig, note, kept = panel.compute(pipe, None, "Q-composition", attention)
        assert fig is not None, note
        comp = pipe.composition("q", attention)
        np.testing.assert_allclose(kept.composition.scores, comp.scores)
        L, H = comp.scores.shape[:2]
        assert f"{L} layers × {H} heads" in note and len(fig.to_json()) < 300_000
        listed = panel.pick(pipe, kept, f"{L}:1#5")  # a head of the last layer, as its matrix cell names it
        layer, head, score = comp.into(L - 1, 0, 1)[0]
        assert f"L{layer}H{head} {score:.3f}" in listed
        if task != "sentiment":  # a model with an output vocabulary: the tokens it copies
            assert "Tokens it copies most" in listed
