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


class Costly:
    """A pipeline whose exact residual grid is estimated past the bound: the page must say so, not run it."""

    def __init__(self, pipe, seconds: float):
        self.pipe, self.seconds, self.asked = pipe, seconds, []

    def patch(self, a, b, over="resid", exact=True, **run):
        self.asked.append((over, run.get("cells")))
        if exact and over == "resid" and run.get("cells") is None:
            grid = pp.cost.estimate(15, 30, True, self.seconds)
            raise pp.cost.TooCostly(grid, run["max_seconds"], pp.cost.coarser(15, 30, True, self.seconds, 60.0))
        return self.pipe.patch(a, b, over, exact, **run)


def test_a_grid_past_the_bound_is_not_run_and_the_page_offers_the_coarser_ones(sentiment):
    costly = Costly(sentiment, 1.0)  # 15 cells x 15.5 passes at 1 s: about 4 min
    resid, heads, notes = pp.exact(costly, A, B, None)
    assert resid is None and heads is not None
    assert "would take about 4 min" in notes and "groups of 5 (about 46 s)" in notes
    assert "the last 3 positions only" in notes
    assert "Under Positions: “grouped to fit a minute” or “the last ones that fit a minute”" in notes
    grouped, _, notes_grouped = pp.exact(costly, A, B, None, positions="grouped to fit a minute")
    assert grouped is not None and "would take" not in notes_grouped
    assert costly.asked[-2] == ("resid", pp.cost.Cells(fit="group"))


def test_a_coarser_exact_grid_agrees_with_the_estimate_summed_over_its_cells(sentiment):
    _, _, _, kept = pp.estimate(sentiment, A, B)
    resid, _, notes = pp.exact(sentiment, A, B, kept, positions="the last ones that fit a minute")
    exact = sentiment.patch(A, B, cells=pp.cost.Cells(fit="last"), max_seconds=pp.cost.BOUND_S)
    assert len(resid.data[0].x) == len(exact.columns) and notes.count("Pearson") == 2
