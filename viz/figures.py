"""Plotly figures: attention heatmaps (one head large, all heads of a layer as small multiples), the heads
at one decoding step, and the top-k next tokens. Labels come in unique and escaped (explain.axis_labels)."""

import html
import math

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

COLORSCALE = "Blues"
FONT = dict(family="system-ui, -apple-system, Segoe UI, sans-serif", size=12)


def as_float32(weights) -> np.ndarray:
    """The one cast of attention maps (kept as float16 in gr.State) before plotting."""
    return np.asarray(weights, dtype=np.float32)


WEIGHT = "weight 0.%{z:03d}"  # z holds thousandths (see thousandths): 'weight 0.042'
OVERVIEW_CELLS = 32  # small multiples of longer inputs are drawn in token blocks: a light page
# Tick labels per axis at most (zoom in for the others; hover names every cell). Left to itself, plotly lays out
# a label for each of a long review's 361 tokens before thinning them: 180-470 ms of drawing in chromium, against
# 80-90 ms with 30 (benchmarks/app_latency.py).
MAX_TICKS = 30


def thousandths(weights: np.ndarray) -> np.ndarray | list[list[int]]:
    """Weights in [0, 1] as whole thousandths, the precision the hover shows (1.000 shows as 0.999).

    Sent as bytes when every value fits one (uint8: plotly's base64 takes 1.3 bytes a cell where float32
    takes 5.3), else as plain JSON integers (about 2 bytes a cell: attention weights are mostly small).
    A 361-token heatmap drops from 709 KB to 175-270 KB this way.
    """
    z = np.clip(np.rint(np.asarray(weights, dtype=np.float64) * 1000), 0, 999).astype(np.int16)
    return z.astype(np.uint8) if z.size and z.max() < 256 else z.tolist()


def _top(weights: np.ndarray) -> int:
    """The largest weight in thousandths (at least 1): the top of the color range."""
    return int(np.clip(np.rint(np.max(weights, initial=0.0) * 1000), 1, 999))


def _colorbar(top: int) -> dict:
    """A colorbar for z in thousandths up to `top`, labelled as weights."""
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 250) if top / s <= 5)
    ticks = list(range(0, top + 1, step))
    return dict(title=dict(text="weight"), thickness=12, tickvals=ticks, ticktext=[f"{t / 1000:g}" for t in ticks])


def _slim_template() -> go.layout.Template:
    """Plotly's default look for 2-D plots only: the full template is 7 KB in every figure sent to a page."""
    layout = pio.templates["plotly"].layout.to_plotly_json()
    keep = ("autotypenumbers", "font", "hovermode", "hoverlabel", "paper_bgcolor", "plot_bgcolor", "xaxis", "yaxis")
    return go.layout.Template(
        layout={k: layout[k] for k in keep if k in layout},
        data={"heatmap": [go.Heatmap(colorbar=dict(outlinewidth=0, ticks=""))]},
    )


SLIM_TEMPLATE = _slim_template()


def _heatmap(weights: np.ndarray, x: list[str], y: list[str], hover: str, colorbar: bool = True, **kw) -> go.Heatmap:
    """A heatmap of attention weights from 0 to the largest, with a weight color bar or none (small multiples).
    The weights travel as thousandths (see thousandths)."""
    weights = as_float32(weights)
    top = _top(weights)  # given, so that the browser need not scan every cell for it
    scale = dict(colorbar=_colorbar(top)) if colorbar else dict(showscale=False)
    z = thousandths(weights)
    return go.Heatmap(z=z, x=x, y=y, zmin=0, zmax=top, colorscale=COLORSCALE, hovertemplate=hover, **scale, **kw)


def _hover(query: str, key: str, extra: str = "") -> str:
    # %{y} and %{x} are the 'i:token' labels: the token itself, and which occurrence of it.
    return f"{query} %{{y}}<br>{key} %{{x}}<br>{WEIGHT}<extra>{extra}</extra>"


def _layout_dict(title: str, height: int) -> dict:
    return dict(
        template=SLIM_TEMPLATE,
        title=dict(text=title, x=0, xanchor="left", font=dict(size=15)),
        height=height,
        margin=dict(l=10, r=10, t=60, b=10),
        font=FONT,
        dragmode="zoom",
        hoverlabel=dict(bgcolor="white", font_size=13),
        plot_bgcolor="white",
    )


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(**_layout_dict(title, height))
    return fig


def _label_margin(labels: list[str], slant: float = 1.0) -> int:
    """Pixels for an axis's tick labels (10 px font, about 6 px a character) and its title, so that plotly
    need not measure them and draw the figure a second time with wider margins (its automargin)."""
    longest = max((len(html.unescape(label)) for label in labels), default=1)
    return int(min(170, 34 + slant * 6.2 * longest))


def attention_heatmap(
    weights: np.ndarray, q_labels: list[str], k_labels: list[str], title: str, query: str = "query", key: str = "key"
) -> go.Figure:
    """One head: weights (Tq, Tk), rows = queries. Drag to zoom into long inputs, double-click to reset."""
    Tq, Tk = weights.shape
    assert (len(q_labels), len(k_labels)) == (Tq, Tk), "one label per row and column"
    # Built as one dict (plotly's update_* calls took 30 ms for a long review) with margins fixed in advance.
    ticks = dict(tickfont=dict(size=10), type="category", nticks=MAX_TICKS, automargin=False)
    layout = _layout_dict(title, int(min(820, max(480, 260 + 9 * max(Tq, Tk)))))
    layout.update(
        xaxis=dict(title=dict(text=f"{key} (attended to)"), tickangle=-60, **ticks),
        yaxis=dict(title=dict(text=f"{query} (attending)"), autorange="reversed", **ticks),
        margin=dict(l=_label_margin(q_labels), r=80, t=60, b=_label_margin(k_labels, slant=0.87)),
    )
    return go.Figure(_heatmap(weights, k_labels, q_labels, _hover(query, key), hoverongaps=False), layout)


def pool_blocks(weights: np.ndarray, labels_q: list[str], labels_k: list[str], max_cells: int):
    """Shrink (H, Tq, Tk) maps to at most max_cells per side by token blocks, for small multiples of long
    inputs: a cell holds the attention mass the block's queries give the block's keys (rows still sum to 1).
    Returns (weights, row labels, column labels); the labels name each block's first token."""
    H, Tq, Tk = weights.shape
    bq, bk = math.ceil(Tq / max_cells), math.ceil(Tk / max_cells)
    if bq == bk == 1:
        return weights, labels_q, labels_k
    starts_q, starts_k = np.arange(0, Tq, bq), np.arange(0, Tk, bk)
    mass = np.add.reduceat(np.add.reduceat(weights, starts_k, axis=2), starts_q, axis=1)  # (H, nq, nk)
    rows = np.diff(np.append(starts_q, Tq))  # queries per block
    return mass / rows[None, :, None], _block_labels(labels_q, starts_q), _block_labels(labels_k, starts_k)


def _block_labels(labels: list[str], starts: np.ndarray) -> list[str]:
    ends = np.append(starts[1:], len(labels)) - 1
    return [f"{a}–{b}:{labels[a].split(':', 1)[1]}…" for a, b in zip(starts, ends)]


def heads_overview(
    weights: np.ndarray,
    q_labels: list[str],
    k_labels: list[str],
    title: str,
    query: str = "query",
    key: str = "key",
    max_cells: int = OVERVIEW_CELLS,
) -> go.Figure:
    """All heads of one layer as small multiples: weights (H, Tq, Tk). Each head has its own color range.
    Inputs longer than max_cells tokens are shown in token blocks (pool_blocks) to keep the figure small."""
    weights = as_float32(weights)
    H, Tq, Tk = weights.shape
    weights, q_labels, k_labels = pool_blocks(weights, q_labels, k_labels, max_cells)
    if len(q_labels) < Tq or len(k_labels) < Tk:
        block = math.ceil(max(Tq, Tk) / max_cells)
        note = f"(in blocks of {block} tokens: the large plot has every token)"
        title += f" <span style='font-size:12px;color:#6b7280'>{note}</span>"
    cols = min(H, 4)
    rows = math.ceil(H / cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[f"head {h + 1}" for h in range(H)],
        horizontal_spacing=0.03,
        vertical_spacing=0.08 if rows > 1 else 0.0,
    )
    small = max(Tq, Tk) <= 20  # tick labels only where they can be read
    for h in range(H):
        fig.add_trace(
            _heatmap(weights[h], k_labels, q_labels, _hover(query, key, f"head {h + 1}"), colorbar=False),
            row=h // cols + 1,
            col=h % cols + 1,
        )
    fig.update_xaxes(showticklabels=small, tickfont=dict(size=8), tickangle=-60, type="category")
    fig.update_yaxes(showticklabels=small, tickfont=dict(size=8), autorange="reversed", type="category")
    return _layout(fig, title, 60 + 270 * rows)


def step_heatmap(weights: np.ndarray, src_labels: list[str], title: str) -> go.Figure:
    """What every head attended to in the source at one decoding step: weights (H, Ts)."""
    H, Ts = weights.shape
    heads = [f"head {h + 1}" for h in range(H)]
    fig = go.Figure(_heatmap(weights, src_labels, heads, f"%{{y}}<br>source %{{x}}<br>{WEIGHT}<extra></extra>"))
    fig.update_xaxes(tickangle=-60, tickfont=dict(size=10), type="category", title_text="German token")
    fig.update_yaxes(autorange="reversed", type="category")
    return _layout(fig, title, 200 + 28 * H)


def topk_bar(top_k: list[tuple[str, float]], chosen: str, title: str) -> go.Figure:
    """The k most likely next tokens at one step; the token that was produced is drawn in orange."""
    labels = [f"{r + 1}. {html.escape(tok, quote=False)}" for r, (tok, _) in enumerate(top_k)]
    probs = [p for _, p in top_k]
    colors = ["#ea580c" if tok == chosen else "#93c5fd" for tok, _ in top_k]
    fig = go.Figure(
        go.Bar(
            x=probs,
            y=labels,
            orientation="h",
            marker_color=colors,
            text=[f"{p:.1%}" for p in probs],
            textposition="auto",
            hovertemplate="%{y}<br>probability %{x:.3f}<extra></extra>",
        )
    )
    fig.update_xaxes(range=[0, 1], tickformat=".0%", title_text="probability")
    fig.update_yaxes(autorange="reversed", type="category")
    return _layout(fig, title, 300)
