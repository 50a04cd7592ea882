"""Which state carries the answer, in a tab's Compare section: once two inputs are compared (a click or an example
pair), each state of the first (clean) input is put back into a run on the second (corrupted) one, and the grids
say how much of the clean answer returns: 0 the corrupted run, 1 the clean one. Attribution patching first (one
forward and one backward for a grid), the exact grids on a click (one batched pass a layer, with progress and a
Stop), drawn on the same scale, with how far the approximation agreed (pipelines.lens.patching through the served
pipeline, in the background queue). An exact grid estimated past a minute is not run: the notes say what it would
cost and the Positions choice offers the coarser grids that fit (pipelines.lens.cost)."""

import html
from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from pipelines.lens import cost

from ..numbers import correlations
from ..page.progress import reporter
from ..page.theme import waiting_plot
from ..server import hosting
from ..server.events import FOLLOW_UP, PRIVATE
from ..server.stops import Stops

PROGRESS = gr.Progress()
GRIDS = ("resid", "heads")  # what the two grids patch: each block's input at each position, each head's output
TITLES = {"resid": "Each block's input at each position", "heads": "Each head's output"}
EXACT = Stops()  # Stop: a client's exact patching ends after the layer it is at
EVERY = "every position"
POSITIONS = {  # the exact residual grid's positions: every one, or a coarser grid within cost.BOUND_S
    EVERY: None,
    "grouped to fit a minute": cost.Cells(fit="group"),
    "the last ones that fit a minute": cost.Cells(fit="last"),
}
HELP = (
    "**Which state carries the answer?** The model runs on the second input with one state of the first put back: "
    "a cell says how much of the first input's answer that one state brings back (1: all of it, 0: none; the metric "
    "is the logit difference between the two inputs' answers). First drawn by *attribution patching*, a first-order "
    "estimate from one forward and one backward pass; *Patch exactly* runs the model once a cell and prints how far "
    "the estimate agreed. States are patched by position only between inputs of one length."
)


@dataclass
class PatchingUI:
    resid: gr.Plot
    heads: gr.Plot
    exact: gr.Button
    stop: gr.Button
    notes: gr.Markdown
    estimates: gr.State  # the attribution grids of the pair shown, to measure the agreement against
    last_only: gr.Checkbox  # heads patched at the last position only (else at every position, inputs of one length)
    positions: gr.Dropdown  # the exact residual grid's positions (POSITIONS)


def build(task: str) -> PatchingUI:
    gr.Markdown(HELP)
    with gr.Row():
        exact = gr.Button("Patch exactly", size="sm", elem_id=f"{task}-patch-exact")
        stop = gr.Button("Stop", size="sm", variant="stop", elem_id=f"{task}-patch-stop")
        last_only = gr.Checkbox(False, label="heads at the last position only", elem_id=f"{task}-patch-last")
        positions = gr.Dropdown(list(POSITIONS), value=EVERY, label="Positions (exact)", elem_id=f"{task}-patch-cells")
    notes = gr.Markdown(elem_id=f"{task}-patch-notes")
    resid, heads = waiting_plot(f"{task}-patch-resid"), waiting_plot(f"{task}-patch-heads")
    estimates = gr.State(None, time_to_live=hosting.STATE_TTL_S)  # the attribution grids (a result)
    return PatchingUI(resid, heads, exact, stop, notes, estimates, last_only, positions)


def figure(p, title: str) -> go.Figure:
    """Layers x cells, diverging at 0, the same scale for the estimate and the exact grid (-1 to 1 at least)."""
    finite = np.isfinite(p.grid)
    z = np.where(finite, p.grid, 0.0).astype(object)
    z[~finite] = None  # a row a Stop left out, or no difference to normalise by: blank, never NaN
    top = max(1.0, float(np.abs(p.grid[finite]).max()) if finite.any() else 1.0)
    how = "exact" if p.exact else "attribution patching"
    named = p.over == "heads" or p.cells is not None  # heads, or a coarser grid's columns (named by their positions)
    x = p.columns if named else [f"{i}: {c}" for i, c in enumerate(p.columns)]
    fig = go.Figure(go.Heatmap(z=z.tolist(), x=x, y=p.rows, zmin=-top, zmax=top, zmid=0, colorscale="RdBu",
                               hoverongaps=False, hovertemplate="%{y}, %{x}: %{z:.3f}<extra></extra>"))  # fmt: skip
    fig.update_layout(title=f"{title} put back ({how})", height=140 + 24 * len(p.rows),
                      margin=dict(l=70, r=20, t=50, b=80), xaxis=dict(tickangle=-45))  # fmt: skip
    return fig


def agreement(estimate: np.ndarray, exact: np.ndarray) -> str:
    """Pearson and Spearman over the cells both have, and the cell where they differ most."""
    both = np.isfinite(estimate) & np.isfinite(exact)
    said = correlations(estimate, exact)
    if not said.startswith("Pearson"):
        return said
    far = np.unravel_index(np.argmax(np.where(both, np.abs(estimate - exact), -1)), exact.shape)
    return (f"{said}; most apart: layer {far[0]}, cell {far[1]} ({estimate[far]:+.2f} estimated, {exact[far]:+.2f} "
            "exact)")  # fmt: skip


@dataclass(frozen=True)
class Grid:
    """One of GRIDS: its Patching, or None and why it could not be patched."""

    over: str
    patching: object  # pipelines.lens.patching.Patching | None
    why_not: str = ""


def _grids(pipe, a: str, b: str, exact: bool, progress=None, stop=None, last_only=False, positions=EVERY) -> list:
    """GRIDS patched; last_only: the heads at the last position only; positions: an exact grid's (POSITIONS), each
    exact grid within cost.BOUND_S."""
    out = []
    run = dict(cells=POSITIONS.get(positions), max_seconds=cost.BOUND_S) if exact else {}
    for over in GRIDS:
        try:
            p = pipe.patch(a, b, over=over, exact=exact, progress=progress, stop=stop, last_only=last_only, **run)
            out.append(Grid(over, p))
        except cost.TooCostly as e:  # past the bound: what it would cost, and the choices that fit
            out.append(Grid(over, None, f"{e}{offered(e)}"))
        except ValueError as e:  # inputs of other lengths (by position), one answer for both, a transformers model
            out.append(Grid(over, None, str(e)))
    return out


def offered(e: cost.TooCostly) -> str:
    """Where the page offers the coarser grids a TooCostly names."""
    kinds = [next(k for k, c in POSITIONS.items() if c is not None and c.fit == fit) for fit in cost.FITS]
    return f". Under Positions: “{kinds[0]}” or “{kinds[1]}”." if e.options else "."


def _estimate_of(estimate: np.ndarray, p) -> np.ndarray:
    """The attribution grid (L, T) over the cells of p: a coarser grid's cell the sum over its positions (patching
    several states at once, to first order)."""
    if p.cells is None:
        return estimate
    return np.stack([estimate[:, cell].sum(axis=1) for cell in p.cells], axis=1)


def _draw(grids: list[Grid], estimates: dict | None) -> tuple:
    """(resid figure, heads figure, notes) of the grids; agreement where estimates are given."""
    figures, lines = [], []
    for grid in grids:
        over, p = grid.over, grid.patching
        if p is None:
            figures.append(None)
            lines.append(f"{TITLES[over]}: not patched: {html.escape(grid.why_not)}")
            continue
        figures.append(figure(p, TITLES[over]))
        line = f"{TITLES[over]}: clean run {p.clean:+.3f}, corrupted run {p.corrupted:+.3f} (logit difference)."
        if p.note:
            line += f" {p.note}"
        if estimates and isinstance(estimates.get(over), np.ndarray) and p.exact:
            line += f" Attribution patching against exact: {agreement(_estimate_of(estimates[over], p), p.grid)}."
        lines.append(line)
    return (*figures, "\n\n".join(lines))


def estimate(pipe, a: str, b: str, last_only: bool = False) -> tuple:
    """(resid figure, heads figure, notes, the estimates kept) by attribution patching."""
    if pipe is None or not (a or "").strip() or not (b or "").strip():
        return None, None, "", None
    grids = _grids(pipe, a, b, exact=False, last_only=bool(last_only))
    kept = {g.over: g.patching.grid for g in grids if g.patching is not None}
    return (*_draw(grids, None), kept)


def exact(pipe, a: str, b: str, estimates, progress=None, stop=None, last_only=False, positions=EVERY) -> tuple:
    """(resid figure, heads figure, notes) patched exactly (the residual grid at `positions`, one of POSITIONS); a
    Stop leaves the rows not run blank; a grid past cost.BOUND_S is not run, its note says why and what fits."""
    if pipe is None or not (a or "").strip() or not (b or "").strip():
        return None, None, "Compare two inputs first: the grids patch the first into the second."
    grids = _grids(pipe, a, b, True, progress, stop, bool(last_only), positions)
    return _draw(grids, estimates)


def wire(ui: PatchingUI, compared: list, pipe_of: Callable, inputs: list) -> None:
    """After each event in `compared` (the Compare button, an example pair), the estimates; the exact grids on the
    button. inputs: (first, second, *options); pipe_of(*options) -> the pipeline shown (None: not available)."""

    def first_look(a, b, last_only, *options, request: gr.Request = None):
        try:
            return hosting.run_as(request, lambda: estimate(pipe_of(*options), a, b, last_only))
        except Exception as e:  # the page says so; the comparison above stands
            return None, None, f"Could not patch: {html.escape(str(e))}", None

    def run_exact(a, b, estimates, last_only, positions, *options, request: gr.Request = None, progress=PROGRESS):
        report = reporter(progress, "Patching exactly", "layers")
        try:
            with EXACT.watch(request) as stopped:
                how = (report, stopped, last_only, positions)
                patched = lambda: exact(pipe_of(*options), a, b, estimates, *how)  # noqa: E731
                return hosting.run_as(request, patched)
        except Exception as e:
            return None, None, f"Could not patch: {html.escape(str(e))}"

    first, second, *options = inputs
    outputs, looked_at = [ui.resid, ui.heads, ui.notes], [first, second, ui.last_only, *options]
    for event in compared:
        event.then(first_look, looked_at, outputs + [ui.estimates], **FOLLOW_UP)
    ui.last_only.input(first_look, looked_at, outputs + [ui.estimates], trigger_mode="always_last", **PRIVATE)
    run_inputs = [first, second, ui.estimates, ui.last_only, ui.positions, *options]
    ui.exact.click(run_exact, run_inputs, outputs, trigger_mode="always_last", **PRIVATE)
    ui.stop.click(EXACT.press, None, None, concurrency_limit=None, **PRIVATE)
