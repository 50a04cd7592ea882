"""Figures of the model view (every layer x head as thumbnails on one colour scale) and of token focus (one
token in every head of a layer: where it looks, what looks at it). The numbers come from
pipelines.attention.attention_views; this module only draws."""

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pipelines.attention import attention_views as av

from .figures import COLORSCALE, HIGHLIGHT, MARGIN_TOP, _hover, _layout, _ticks, colors

THUMB_PX = 140  # height of one thumbnail row
BAR_PX = 78  # height of one head's bars in token focus
MANY_HEADS = 6  # more heads than this in a layer (a 6 x 12 BERT-family model): shorter bars, short column titles
BAR_PX_MANY = 56


def model_view(
    thumbs: np.ndarray,
    q_labels: list[str],
    k_labels: list[str],
    title: str,
    kind: str,
    scale: av.ColorScale,
    layer_names: list[str] | None = None,
    query: str = "query",
    key: str = "key",
) -> go.Figure:
    """thumbs (L, H, nq, nk) from attention_views.thumbnails, labelled by their blocks. One colour scale and colour
    bar for all; each trace's meta is {kind, layer, head} (0-based) for the page's click handler."""
    L, H = thumbs.shape[:2]
    layer_names = layer_names or [f"layer {i + 1}" for i in range(L)]
    fig = make_subplots(
        rows=L,
        cols=H,
        column_titles=[f"head {h + 1}" if H <= MANY_HEADS else f"{h + 1}" for h in range(H)],
        row_titles=layer_names,
        horizontal_spacing=0.02,
        vertical_spacing=0.03,
    )
    color, colorbar = colors(thumbs, scale, _hover(query, key, "%{meta.name}"))
    for layer in range(L):
        for h in range(H):
            one = {k: (v[layer][h] if k in ("z", "customdata") else v) for k, v in color.items()}  # array or list
            meta = dict(kind=kind, layer=layer, head=h, name=f"{layer_names[layer]}, head {h + 1}")
            trace = go.Heatmap(x=k_labels, y=q_labels, coloraxis="coloraxis", meta=meta, **one)
            fig.add_trace(trace, row=layer + 1, col=h + 1)
    fig.update_xaxes(showticklabels=False, type="category", fixedrange=True)
    fig.update_yaxes(showticklabels=False, type="category", autorange="reversed", fixedrange=True)
    many = H > MANY_HEADS  # 12 columns on a phone: numbers alone, smaller ("h10h11h12" ran together)
    subtitle = f"{'columns: heads 1-' + str(H) + ' · ' if many else ''}click a map to open it large · {scale.label}"
    _layout(fig, title, MARGIN_TOP + 92 + THUMB_PX * L, subtitle)
    colorbar.update(orientation="h", y=-0.02, yanchor="top", x=0, xanchor="left", len=0.6, thickness=10)
    colorbar["title"] = dict(text=colorbar["title"]["text"], side="top")
    fig.update_layout(
        coloraxis=dict(colorscale=COLORSCALE, cmin=color["zmin"], cmax=color["zmax"], colorbar=colorbar),
        margin=dict(l=10, r=30, t=MARGIN_TOP + 22, b=70),  # the column titles stand above the maps
        dragmode=False,
    )
    if many:  # the column titles (the row titles are "layer N")
        fig.update_annotations(font=dict(size=11), selector=lambda a: a.text.isdigit())
    return fig


def _bars(weights: np.ndarray, labels: list[str], meta: str) -> go.Bar:
    """One head's weights over the tokens."""
    return go.Bar(
        x=labels,
        y=np.round(weights.astype(np.float64), 3).tolist(),
        marker=dict(color="#3b82f6", line=dict(width=0)),
        hovertemplate=f"{meta}<br>%{{x}}<br>weight %{{y:.3f}}<extra></extra>",
        showlegend=False,
    )


# Bar names must not run into each other on the narrowest screen: a phone's plot is about 280 px wide, and a
# 9-px name takes about 5.5 px a character.
PHONE_PLOT_PX, NAME_CHAR_PX = 280, 5.5


def name_half_width(name: str, n_bars: int) -> float:
    """Half a bar name's width on a phone, in bar positions."""
    return len(name) * NAME_CHAR_PX / 2 / (PHONE_PLOT_PX / max(n_bars, 1))


def name_anchor(i: int, name: str, n_bars: int) -> str:
    """How the name of bar i is anchored: centred over its bar, or leaning inwards at either end of the axis."""
    reach = name_half_width(name, n_bars)
    return "left" if i - reach < -0.5 else "right" if i + reach > n_bars - 0.5 else "center"


def name_span(i: int, name: str, n_bars: int) -> tuple[float, float]:
    """The bar positions bar i's name covers on a phone, as it is anchored."""
    width = 2 * name_half_width(name, n_bars)
    start = {"left": i - 0.5, "center": i - width / 2, "right": i + 0.5 - width}[name_anchor(i, name, n_bars)]
    return start, start + width


def named_bars(weights: np.ndarray, names: list[str], k: int = 3) -> list[int]:
    """Positions of the (up to) k largest bars over 0 to name, largest first, skipping a bar whose name would run
    into one already chosen on a phone (there "rushWorth", "[CLS]stunning" and "Meadowbody" ran together)."""
    T = len(weights)
    chosen: list[int] = []
    spans: list[tuple[float, float]] = []
    for i in av.top_k(weights, T).tolist():
        if not weights[i] > 0:  # the rest are no larger: nothing to name
            break
        lo, hi = name_span(i, names[i], T)
        if all(hi <= a or lo >= b for a, b in spans):
            chosen.append(i)
            spans.append((lo, hi))
        if len(chosen) == k:
            break
    return chosen


def _top_names(fig: go.Figure, weights: np.ndarray, labels: list[str], row: int) -> None:
    """The three largest bars of a head (whose names fit apart) named above them; a name at either end of the
    axis leans inwards, not past the plot's edge."""
    names = [label.split(":", 1)[1] for label in labels]
    T = len(labels)
    for i in named_bars(weights, names):
        fig.add_annotation(x=labels[i], y=float(weights[i]), text=names[i], showarrow=False, yanchor="bottom",
                           xanchor=name_anchor(i, names[i], T), font=dict(size=9), row=row, col=1)  # fmt: skip


def token_focus(
    panels: list[tuple[str, np.ndarray, list[str], int | None]], title: str, subtitle: str = ""
) -> go.Figure:
    """panels: (what it shows, weights (H, T), token labels, the focused token's position or None), e.g. "looks
    at" over the keys and "is looked at by" over the queries. One bar chart a head, stacked, panel after panel."""
    H = panels[0][1].shape[0]
    titles = [f"head {h + 1}: {what}" for what, _, _, _ in panels for h in range(H)]
    fig = make_subplots(rows=H * len(panels), cols=1, subplot_titles=titles, vertical_spacing=0.3 / (H * len(panels)))
    fig.update_annotations(font=dict(size=11), x=0, xanchor="left")  # the subplot titles, on the left
    for p, (what, weights, labels, focus) in enumerate(panels):
        top = float(np.max(weights, initial=0.0))
        for h in range(H):
            row = p * H + h + 1
            fig.add_trace(_bars(weights[h], labels, f"head {h + 1}: {what}"), row=row, col=1)
            _top_names(fig, weights[h], labels, row)
            if focus is not None:  # the token itself
                fig.add_vline(x=focus, line=dict(color=HIGHLIGHT, width=1.5, dash="dot"), row=row, col=1)
            fig.update_yaxes(range=[0, max(top, 1e-3) * 1.35], row=row, col=1, nticks=3, tickfont=dict(size=9))
            last = row == H * len(panels)  # the panels of a token share its sequence: labels once, at the bottom
            ticks = _ticks(labels, 700) if last else {}
            # a fixed range: every head's token at the same x (on a phone, heads with a name at an edge shifted)
            span = [-0.5, len(labels) - 0.5]
            fig.update_xaxes(type="category", showticklabels=last, range=span, row=row, col=1, **ticks)
    fig.update_xaxes(tickfont=dict(size=9), tickangle=-60, automargin=True)
    height = MARGIN_TOP + len(panels) * H * (BAR_PX if H <= MANY_HEADS else BAR_PX_MANY) + 110
    _layout(fig, title, height, subtitle)
    fig.update_layout(bargap=0.1, margin=dict(l=40, r=10, t=MARGIN_TOP, b=20), dragmode=False)
    return fig


def note(title: str, text: str) -> go.Figure:
    """A plot with nothing to draw: its title and a short message where the bars would be."""
    fig = go.Figure()
    fig.add_annotation(text=text, x=0, y=0.5, xref="paper", yref="paper", xanchor="left", showarrow=False,
                       font=dict(size=13), name="note")  # fmt: skip
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    _layout(fig, title, MARGIN_TOP + 60)
    fig.update_layout(dragmode=False)
    return fig
