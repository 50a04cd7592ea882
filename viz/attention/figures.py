"""Plotly figures: attention heatmaps (one head large, all heads of a layer as small multiples), the heads
at one decoding step, and the top-k next tokens. Labels come in unique and escaped (token_labels.axis_labels); the small
multiples take each axis's tokens too (token_labels.TokenAxis), to name the token blocks of a long input."""

import functools
import html
import math

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from pipelines.attention import attention_views as av

from .token_labels import TokenAxis

COLORSCALE = "Blues"
FONT = dict(family="system-ui, -apple-system, Segoe UI, sans-serif", size=12)


def as_float32(weights) -> np.ndarray:
    """The one cast of attention maps (kept as float16 in gr.State) before plotting."""
    return np.asarray(weights, dtype=np.float32)


WEIGHT = "weight 0.%{z:03d}"  # z holds thousandths (see thousandths): 'weight 0.042'
AXES = ("query", "key")  # the words for a map's rows and columns (a kind names its own: pipelines.kinds)
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


@functools.cache
def slim_template() -> go.layout.Template:
    """Plotly's default look for 2-D plots only: the full template is 7 KB in every figure sent to a page. Built on
    the first figure, not at import (reading plotly's template takes a few tenths of a second of the app's start)."""
    layout = pio.templates["plotly"].layout.to_plotly_json()
    keep = ("autotypenumbers", "font", "hovermode", "hoverlabel", "paper_bgcolor", "plot_bgcolor", "xaxis", "yaxis")
    return go.layout.Template(
        layout={k: layout[k] for k in keep if k in layout},
        data={"heatmap": [go.Heatmap(colorbar=dict(outlinewidth=0, ticks=""))]},
    )


def _heatmap(weights: np.ndarray, x: list[str], y: list[str], hover: str, colorbar: bool = True, **kw) -> go.Heatmap:
    """A heatmap of attention weights from 0 to the largest, with a weight color bar or none (small multiples).
    The weights travel as thousandths (see thousandths)."""
    weights = as_float32(weights)
    top = _top(weights)  # given, so that the browser need not scan every cell for it
    scale = dict(colorbar=_colorbar(top)) if colorbar else dict(showscale=False)
    z = thousandths(weights)
    return go.Heatmap(z=z, x=x, y=y, zmin=0, zmax=top, colorscale=COLORSCALE, hovertemplate=hover, **scale, **kw)


SCALE_STEPS = 250  # colour positions of a non-linear scale travel as 0..250: one byte a cell


def colors(weights: np.ndarray, scale: av.ColorScale, hover: str) -> tuple[dict, dict]:
    """(trace keywords: z, zmin, zmax, hovertemplate and, for a non-linear scale, customdata; its colour bar).
    Linear: z holds the weights in thousandths. Otherwise (pipelines.attention.attention_views) z holds each cell's
    colour position and customdata its weight in thousandths, for the hover. One call for several maps shares a
    scale."""
    weights = as_float32(weights)
    if scale.linear:
        top = _top(weights)
        return dict(z=thousandths(weights), zmin=0, zmax=top, hovertemplate=hover), _colorbar(top)
    scaled = scale.apply(weights.astype(np.float64))
    colorbar = dict(
        title=dict(text=scaled.title),
        thickness=12,
        tickvals=[round(p * SCALE_STEPS, 2) for p in scaled.tick_positions],
        ticktext=scaled.tick_labels,
    )
    kw = dict(z=np.rint(scaled.positions * SCALE_STEPS).astype(np.uint8), zmin=0, zmax=SCALE_STEPS)
    kw.update(customdata=thousandths_array(weights), hovertemplate=hover.replace("%{z:03d}", "%{customdata:03d}"))
    return kw, colorbar


def _scaled_heatmap(weights: np.ndarray, x, y, hover: str, scale: av.ColorScale, **kw) -> go.Heatmap:
    """A heatmap coloured by any scale, with its colour bar."""
    color, colorbar = colors(weights, scale, hover)
    return go.Heatmap(x=x, y=y, colorscale=COLORSCALE, colorbar=colorbar, **color, **kw)


def thousandths_array(weights: np.ndarray) -> np.ndarray:
    """thousandths as a numpy array (uint8 when every value fits a byte, else int16): sent base64-encoded."""
    z = np.clip(np.rint(np.asarray(weights, dtype=np.float64) * 1000), 0, 999).astype(np.int16)
    return z.astype(np.uint8) if z.size and z.max() < 256 else z


def _hover(query: str, key: str, extra: str = "") -> str:
    # %{y} and %{x} are the 'i:token' labels: the token itself, and which occurrence of it.
    return f"{query} %{{y}}<br>{key} %{{x}}<br>{WEIGHT}<extra>{extra}</extra>"


TITLE_TOP = 40  # pixels above the title: plotly's tool bar sits there, off the title
MARGIN_TOP = 100  # the tool bar, the title and its one-line subtitle
HIGHLIGHT = "#ea580c"  # the focused token's row and column, and the cut marker


def _layout_dict(title: str, height: int, subtitle: str = "") -> dict:
    title_dict = dict(text=title, x=0, xanchor="left", yref="container", y=1, yanchor="top", font=dict(size=15))
    title_dict.update(pad=dict(t=TITLE_TOP), subtitle=dict(text=subtitle, font=dict(size=12, color="#6b7280")))
    return dict(
        template=slim_template(),
        title=title_dict,
        height=height,
        margin=dict(l=10, r=10, t=MARGIN_TOP if subtitle else MARGIN_TOP - 18, b=10),
        font=FONT,
        dragmode="zoom",
        hoverlabel=dict(bgcolor="white", font_size=13),
        paper_bgcolor="rgba(0,0,0,0)",  # the page's own background, light or dark (viz/page/theme.py does the rest)
        plot_bgcolor="rgba(0,0,0,0)",
    )


def _layout(fig: go.Figure, title: str, height: int, subtitle: str = "") -> go.Figure:
    fig.update_layout(**_layout_dict(title, height, subtitle))
    return fig


def _label_margin(labels: list[str], slant: float = 1.0) -> int:
    """Pixels for an axis's tick labels (10 px font, about 6 px a character) and its title, so that plotly
    need not measure them and draw the figure a second time with wider margins (its automargin)."""
    longest = max((len(html.unescape(label)) for label in labels), default=1)
    return int(min(170, 34 + slant * 6.2 * longest))


def _ticks(labels: list[str], pixels: int) -> dict:
    """Tick labels for a category axis: every token when they fit (12 px each), else every k-th; hover names all."""
    shown = av.tick_positions(len(labels), max(2, min(MAX_TICKS, pixels // 12)))
    return dict(tickmode="array", tickvals=[labels[i] for i in shown], ticktext=[labels[i] for i in shown])


def marks(cut: av.CutMarker | None, n_rows: int, n_cols: int, row: int | None, col: int | None, cut_rows=True):
    """Layout shapes and annotations: the cut of a long input on both axes (rows only with cut_rows), and the
    focused token's row and column (display positions)."""
    shapes, notes = [], []
    if cut is not None:
        line = dict(type="line", line=dict(color=HIGHLIGHT, width=2, dash="dot"), name="cut")
        shapes.append(dict(x0=cut.boundary, x1=cut.boundary, y0=0, y1=1, xref="x", yref="y domain", **line))
        if cut_rows:
            shapes.append(dict(x0=0, x1=1, y0=cut.boundary, y1=cut.boundary, xref="x domain", yref="y", **line))
        notes.append(
            dict(x=cut.boundary, y=1, xref="x", yref="y domain", yanchor="bottom", xanchor="left", text=cut.text,
                 showarrow=False,
                 font=dict(size=11, color=HIGHLIGHT), bgcolor="rgba(255,255,255,0.8)")
        )  # fmt: skip
    box = dict(type="rect", line=dict(color=HIGHLIGHT, width=2), fillcolor="rgba(0,0,0,0)")
    if row is not None:
        shapes.append(dict(x0=-0.5, x1=n_cols - 0.5, y0=row - 0.5, y1=row + 0.5, name="focus-row", **box))
    if col is not None:
        shapes.append(dict(x0=col - 0.5, x1=col + 0.5, y0=-0.5, y1=n_rows - 0.5, name="focus-col", **box))
    return shapes, notes


def attention_heatmap(
    weights: np.ndarray,
    q_labels: list[str],
    k_labels: list[str],
    title: str,
    axes: tuple[str, str] = AXES,
    scale: av.ColorScale | None = None,
    shapes: tuple[list, list] = ([], []),
    meta: dict | None = None,
    blank: np.ndarray | None = None,
) -> go.Figure:
    """One head: weights (Tq, Tk), rows = queries. Drag to zoom into long inputs, double-click to reset.
    scale: the colour scale (linear when None); shapes: (shapes, annotations) from marks(); meta: kept on the
    trace for the page's click handlers (which token a row or column is); axes: the words for rows and columns;
    blank: (Tq, Tk) True where a cell is no weight at all (a causal map's future keys): left empty, no hover."""
    query, key = axes
    Tq, Tk = weights.shape
    assert (len(q_labels), len(k_labels)) == (Tq, Tk), "one label per row and column"
    scale = scale or av.color_scale("linear")
    # Built as one dict (plotly's update_* calls took 30 ms for a long review) with margins fixed in advance.
    height = int(min(820, max(480, 260 + 9 * max(Tq, Tk))))
    area = height - MARGIN_TOP - _label_margin(k_labels, slant=0.87)
    ticks = dict(tickfont=dict(size=10), type="category", automargin=False)
    layout = _layout_dict(title, height, f"row = {query} (attending), column = {key} · {scale.label}")
    layout.update(
        # ranges given: the cut marker's note must not widen them (plotly's autorange makes room for annotations)
        xaxis=dict(title=dict(text=f"{key} (attended to)"), tickangle=-60, range=[-0.5, Tk - 0.5], **ticks,
                   **_ticks(k_labels, area)),
        yaxis=dict(title=dict(text=f"{query} (attending)"), range=[Tq - 0.5, -0.5], **ticks, **_ticks(q_labels, area)),
    )  # fmt: skip
    layout.update(
        margin=dict(l=_label_margin(q_labels), r=80, t=MARGIN_TOP, b=_label_margin(k_labels, slant=0.87)),
        shapes=shapes[0],
        annotations=shapes[1],
    )
    trace = _scaled_heatmap(weights, k_labels, q_labels, _hover(query, key), scale, hoverongaps=False, meta=meta)
    if blank is not None and blank.any():
        trace.z = blanked(trace.z, blank)
    return go.Figure(trace, layout)


def blanked(z, blank: np.ndarray) -> list[list]:
    """z (an array or nested lists) with None (a gap plotly leaves empty) where blank is True."""
    return [[None if b else v for v, b in zip(row, brow)] for row, brow in zip(np.asarray(z).tolist(), blank.tolist())]


def pool_blocks(weights: np.ndarray, q: TokenAxis, k: TokenAxis, max_cells: int):
    """Shrink (H, Tq, Tk) maps to at most max_cells per side by token blocks
    (pipelines.attention.attention_views.pool_blocks) for small multiples of long inputs. Returns (weights, row labels,
    column labels); the labels name each block's first token (TokenAxis.blocks)."""
    pooled, starts_q, starts_k = av.pool_blocks(weights, max_cells)
    if pooled.shape[-2:] == weights.shape[-2:]:
        return weights, q.labels, k.labels
    return pooled, q.blocks(starts_q), k.blocks(starts_k)


def heads_overview(
    weights: np.ndarray,
    q: TokenAxis,
    k: TokenAxis,
    title: str,
    axes: tuple[str, str] = AXES,
    max_cells: int = OVERVIEW_CELLS,
    scale: av.ColorScale | None = None,
) -> go.Figure:
    """All heads of one layer as small multiples: weights (H, Tq, Tk) with the rows' and columns' tokens, on one
    colour scale with its colour bar and tick labels on the outer axes. Inputs longer than max_cells tokens are shown
    in token blocks (pool_blocks) to keep the figure small."""
    query, key = axes
    weights = as_float32(weights)
    H, Tq, Tk = weights.shape
    weights, q_labels, k_labels = pool_blocks(weights, q, k, max_cells)
    subtitle = f"every head on one {(scale or av.color_scale('linear')).label}"
    if len(q_labels) < Tq or len(k_labels) < Tk:
        subtitle += f"; in blocks of {math.ceil(max(Tq, Tk) / max_cells)} tokens"
    cols = min(H, 2) if H <= 4 else 3  # two a row: readable on a phone; three for 6 x 12-head models (4 rows of 12)
    rows = math.ceil(H / cols)
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=[f"head {h + 1}" for h in range(H)],
        shared_xaxes=True,
        shared_yaxes=True,
        horizontal_spacing=0.04,
        vertical_spacing=0.1 if rows > 1 else 0.0,
    )
    if cols == 3:  # three columns on a phone: "head 10head 11head 12" ran together at the default size
        fig.update_annotations(font=dict(size=12))
    color, colorbar = colors(weights, scale or av.color_scale("linear"), _hover(query, key, "%{meta}"))
    for h in range(H):
        head = {k: (v[h] if k in ("z", "customdata") else v) for k, v in color.items()}
        trace = go.Heatmap(x=k_labels, y=q_labels, coloraxis="coloraxis", meta=f"head {h + 1}", **head)
        fig.add_trace(trace, row=h // cols + 1, col=h % cols + 1)
    fig.update_xaxes(tickfont=dict(size=8), tickangle=-60, type="category", automargin=False, **_ticks(k_labels, 180))
    fig.update_yaxes(tickfont=dict(size=8), autorange="reversed", type="category", automargin=False)
    fig.update_yaxes(**_ticks(q_labels, 220))
    _layout(fig, title, MARGIN_TOP + _label_margin(k_labels, 0.7) + 230 * rows, subtitle)
    zmin, zmax = color["zmin"], color["zmax"]
    fig.update_layout(
        coloraxis=dict(colorscale=COLORSCALE, cmin=zmin, cmax=zmax, colorbar=colorbar),
        margin=dict(l=_label_margin(q_labels, 0.8), r=80, b=_label_margin(k_labels, 0.7), t=MARGIN_TOP),
    )
    return fig


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
