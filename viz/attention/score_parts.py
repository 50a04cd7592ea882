"""A clicked cell's attention score taken apart, drawn: the top (query-side part x key-side part) terms and each
side's totals, beside the same decomposition for the key the head looks at least. The numbers come from the
pipeline's score_attribution (the frozen-norm decomposition of the residual stream at the query and at the key);
this module only picks the cell, calls it on what the view shows and draws.

A cell arrives from the page as 'kind:query:key' (viz/page/js/plot_clicks.js): positions index the kind's maps, as
the heatmap's axis labels count them."""

import html
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pipelines.kinds import KINDS
from pipelines.lens.score_parts import ScoreParts

from . import task_views

TOP_TERMS = 10  # pairs of parts drawn, by size
TOP_PARTS = 10  # parts drawn on each side, by size
CLICKED, LEAST = "#ea580c", "#2563eb"  # the clicked key, the key the head looks at least
PICK = "Click a cell of a large heatmap: its attention score is taken apart here."
NO_RESULT = "Run the model first, then click a cell of a large heatmap."


@dataclass(frozen=True)
class Cell:
    """A clicked cell: the kind of attention, the query's row and the key's column (positions from 0)."""

    kind: str
    query: int
    key: int


def parse_cell(value) -> Cell | None:
    """'cross:3:5' (or with '#nonce' from a click) -> Cell('cross', 3, 5); None for no or a malformed cell."""
    try:
        kind, query, key = str(value).split("#")[0].split(":")
        return Cell(kind, int(query), int(key)) if kind in KINDS else None
    except (ValueError, AttributeError):
        return None


def least_key(view, cell: Cell, layer: int, head: int) -> int | None:
    """The key the head weighs least for the cell's query (among the keys it may read: a causal head's are the
    earlier ones), from the view's maps; None where the query has no other key."""
    km = task_views.kinds(view)[cell.kind]
    row = np.asarray(km.maps[layer][head][cell.query], dtype=np.float64)  # (Tk,)
    allowed = np.arange(len(row)) <= cell.query if KINDS[cell.kind].causal else np.ones(len(row), dtype=bool)
    allowed[cell.key] = False
    if not allowed.any():
        return None
    return int(np.flatnonzero(allowed)[np.argmin(row[allowed])])


def cell_parts(pipe, view, cell: Cell, layer: int, head: int) -> ScoreParts:
    """The pipeline's ScoreParts (pipelines.lens.score_parts) of the cell, on what the view's maps were made of: its
    text and, where it has one, its result (the translation shown: the rows of the decoder and of cross-attention are
    its decoder positions; a continuation's prompt and generated tokens); a review has none."""
    result = getattr(view, "result", None)
    return pipe.score_attribution(view.text, layer, head, cell.query, cell.key, kind=cell.kind, result=result)


def pair_label(parts: ScoreParts, i: int, j: int) -> str:
    """Term (i, j) in words: 'L0H3 × L1H2' (query-side part × key-side part)."""
    return f"{parts.parts[i]} × {parts.key_parts[j]}"


def top_pairs(parts: ScoreParts, n: int = TOP_TERMS) -> list[tuple[int, int]]:
    """The n largest terms by size, as (query-side part, key-side part) indices, largest first."""
    pairs = np.asarray(parts.pairs, dtype=np.float64)  # (P, Pk)
    flat = np.argsort(-np.abs(pairs), axis=None, kind="stable")[:n]
    return [(int(i), int(j)) for i, j in zip(*np.unravel_index(flat, pairs.shape))]


def top_parts(side: np.ndarray, other: np.ndarray | None, n: int = TOP_PARTS) -> list[int]:
    """The n parts of one side with the largest totals by size (over both keys where the other one is given)."""
    size = np.abs(side) if other is None else np.maximum(np.abs(side), np.abs(other))
    return [int(i) for i in np.argsort(-size, kind="stable")[:n]]


def _bars(fig, labels: list[str], values, name: str, color: str, row: int, legend: bool) -> None:
    values = np.round(np.asarray(values, dtype=np.float64), 4).tolist()
    fig.add_trace(
        go.Bar(y=labels, x=values, name=name, orientation="h", marker_color=color, legendgroup=name,
               showlegend=legend, hovertemplate="%{y}: %{x:.3f}<extra>" + name + "</extra>"),
        row=row, col=1,
    )  # fmt: skip


def parts_figure(clicked: ScoreParts, least: ScoreParts | None, names: tuple[str, str]) -> go.Figure:
    """Three panels of horizontal bars: the top terms, the query side's totals, the key side's totals; the clicked
    key orange, the key the head weighs least blue beside it (names: how the legend calls the two keys). Both keys
    share the query and its parts, so the same labels name both keys' bars."""
    titles = ("Top terms: query part × key part", "Query side: what looks for the key", "Key side: what is found")
    fig = make_subplots(rows=3, cols=1, subplot_titles=titles, vertical_spacing=0.09)
    fig.update_annotations(font_size=13)  # the titles fit a phone's width
    pairs = top_pairs(clicked)
    shown = [(clicked, names[0], CLICKED)] + ([] if least is None else [(least, names[1], LEAST)])
    q_order = top_parts(clicked.query_side, None if least is None else least.query_side)
    k_order = top_parts(clicked.key_side, None if least is None else least.key_side)
    for parts, name, color in shown:
        terms = [pair_label(clicked, i, j) for i, j in pairs]
        _bars(fig, terms, [parts.pairs[i, j] for i, j in pairs], name, color, 1, True)
        _bars(fig, [clicked.parts[i] for i in q_order], parts.query_side[q_order], name, color, 2, False)
        _bars(fig, [clicked.key_parts[i] for i in k_order], parts.key_side[k_order], name, color, 3, False)
    fig.update_yaxes(autorange="reversed", type="category", tickfont=dict(size=10), automargin=True)
    bars = max(len(pairs), len(q_order), len(k_order))  # per panel: a small model's few parts get a short figure
    fig.update_layout(height=int(min(820, 200 + 3 * 26 * bars)), barmode="group", margin=dict(l=10, r=10, t=40, b=30),
                      legend=dict(orientation="h", y=-0.05), template="plotly_white")  # fmt: skip
    return fig


def parts_note(clicked: ScoreParts, least: ScoreParts | None, names: tuple[str, str], least_name: str = "") -> str:
    """What the figure says, in words (Markdown; names: the query's and the key's tokens, escaped): the score, its
    largest term, each side's largest part, and the check that the terms add up to the model's own score."""
    q_name, k_name = names
    (i, j), gap = top_pairs(clicked, 1)[0], clicked.score - (float(np.sum(clicked.pairs)) + clicked.rest)
    q_top, k_top = clicked.top_side("query", 1)[0], clicked.top_side("key", 1)[0]
    lines = [
        f"**Layer {clicked.layer + 1}, head {clicked.head + 1}: why {q_name} looks at {k_name}.** Its score there "
        f"(before the softmax, as the model computes it) is **{clicked.score:.3f}**. The score is the query · the key, "
        "and each is a sum of what the parts of the model before this layer wrote at that token (the embeddings, each "
        "earlier head `L{l}H{h}`, each earlier feed-forward layer `{l}_mlp_out`), with every norm's scale held at its "
        "value: so the score splits into one term for each pair of parts.",
        f"Largest term: **{html.escape(pair_label(clicked, i, j))}** ({clicked.pairs[i, j]:+.3f}). What makes the "
        f"query look for this key most: **{html.escape(q_top[0])}** ({q_top[1]:+.3f}); what makes this key findable "
        f"most: **{html.escape(k_top[0])}** ({k_top[1]:+.3f}). Below the top terms, each side's totals: the query's "
        "parts summed over the key's (which parts make the query look for this key), and the other way round (which "
        "parts make this key findable).",
        f"The {len(clicked.parts)} × {len(clicked.key_parts)} terms ({float(np.sum(clicked.pairs)):.4f}) plus the "
        f"rest ({clicked.rest:.4f}: the projections' own biases, no pair of parts) add up to the model's own score: "
        f"difference {gap:.1e}.",
    ]
    if least is not None:
        lines.append(f"In blue, the same for the key this head weighs least in that row, {least_name}: score "
                     f"{least.score:.3f}.")  # fmt: skip
    return "\n\n".join(lines)


def _token(view, cell: Cell, axis: str, position: int) -> str:
    """A row's or a column's token as the heatmap's axis names it, in backticks ('`3:film`')."""
    km = task_views.kinds(view)[cell.kind]
    labels = (km.q if axis == "q" else km.k).labels
    name = labels[position] if 0 <= position < len(labels) else str(position)
    return f"`{name.replace('`', '')}`"  # a code span: shown as it is


def score_parts(pipe, view, value, layer, head) -> tuple[go.Figure | None, str]:
    """(figure, note) for a clicked cell ('kind:query:key') of the view's head (layer, head), run by `pipe` (the model
    that made the view); a plain message where the cell or the model cannot be taken apart."""
    cell = parse_cell(value)
    if view is None:
        return None, NO_RESULT
    km = None if cell is None else task_views.kinds(view).get(cell.kind)
    if km is None or not (0 <= cell.query < km.maps.shape[2] and 0 <= cell.key < km.maps.shape[3]):
        return None, PICK  # no cell, or one of a step no longer shown
    layer, head = min(max(int(layer or 0), 0), km.maps.shape[0] - 1), min(max(int(head or 0), 0), km.maps.shape[1] - 1)
    try:
        clicked = cell_parts(pipe, view, cell, layer, head)
        other = least_key(view, cell, layer, head)
        least = None if other is None else cell_parts(pipe, view, Cell(cell.kind, cell.query, other), layer, head)
    except (NotImplementedError, AttributeError, TypeError, ValueError, IndexError) as e:
        return None, f"This score cannot be taken apart here: {html.escape(str(e) or type(e).__name__)}"
    names = _token(view, cell, "q", cell.query), _token(view, cell, "k", cell.key)
    least_name = "" if other is None else _token(view, cell, "k", other)
    legend = (f"key {names[1].strip('`')}", f"least-weighed key {least_name.strip('`')}")
    return parts_figure(clicked, least, legend), parts_note(clicked, least, names, least_name)
