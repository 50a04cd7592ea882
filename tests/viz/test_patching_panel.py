"""The Compare section's patching grids: the estimate first, the exact grids on a click with their agreement, a Stop
leaving blank rows (never NaN on the page), and inputs of other lengths patched by head only, with a message."""

import numpy as np

from viz.compare import patching_panel as pp

A, B = "The film was not bad.", "The film was very bad."


def cells(fig) -> list:
    return [v for row in fig.data[0].z for v in row]


def test_the_estimate_then_the_exact_grids_and_their_agreement(sentiment):
    resid, heads, notes, kept = pp.estimate(sentiment, A, B)
    assert "attribution patching" in resid.layout.title.text and set(kept) == {"resid", "heads"}
    assert len(resid.data[0].y) == sentiment.n_layers and len(heads.data[0].x) == sentiment.n_heads
    assert "clean run" in notes and "Pearson" not in notes
    done = []
    resid_x, heads_x, notes_x = pp.exact(sentiment, A, B, kept, progress=lambda d, t: done.append(d))
    assert "(exact)" in resid_x.layout.title.text and notes_x.count("Pearson") == 2
    assert done == list(range(1, sentiment.n_layers + 1)) * 2  # a layer at a time, for each grid
    exact = sentiment.patch(A, B, over="heads")
    np.testing.assert_allclose(np.array(heads_x.data[0].z, dtype=float), exact.grid, atol=1e-6)


def test_a_stop_leaves_the_rows_not_run_blank(sentiment):
    resid, heads, notes = pp.exact(sentiment, A, B, None, stop=lambda: True)
    assert all(v is None for v in cells(resid)) and all(v is None for v in cells(heads))
    assert "Pearson" not in notes


def test_inputs_of_other_lengths_are_patched_by_head_with_a_message(lm):
    resid, heads, notes, kept = pp.estimate(lm, "The film was a", "The film was a long and")
    assert resid is None and heads is not None and "not patched" in notes and set(kept) == {"heads"}
    assert all(v is None or np.isfinite(v) for v in cells(heads))


def test_the_heads_at_the_last_position_only_on_the_choice(lm):
    a, b = "The film was a fine", "The film was a poor"
    _, heads, notes, kept = pp.estimate(lm, a, b)
    _, heads_last, notes_last, kept_last = pp.estimate(lm, a, b, last_only=True)
    assert "last position only" in notes_last and "last position only" not in notes
    assert not np.allclose(kept["heads"], kept_last["heads"])
    _, exact_last, notes_exact = pp.exact(lm, a, b, kept_last, last_only=True)
    assert "last position only" in notes_exact and "Attribution patching against exact" in notes_exact


def test_nothing_to_compare_draws_nothing(lm):
    assert pp.estimate(lm, "The film", "")[:3] == (None, None, "")
    assert "Compare two inputs first" in pp.exact(lm, "", "x", None)[2]


def test_the_agreement_of_two_grids():
    g = np.arange(12.0).reshape(3, 4)
    assert pp.agreement(g, g).startswith("Pearson 1.00, Spearman 1.00")
    assert "too few cells" in pp.agreement(g, np.full_like(g, np.nan))
