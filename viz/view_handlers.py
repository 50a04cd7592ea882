"""Handlers of the attention views, the same for every kind of attention: the large heatmap with its colour scale,
hidden tokens, cut marker and focused token; the small multiples of a layer; token focus; the model view.

A result in gr.State (handlers.SentimentView / TranslationView) offers its maps by kind (`kind_maps`); tokens are
named "side:position" with side "src" (the input: the review, the German sentence) or "tgt" (the English output).
"""

import html
from dataclasses import dataclass

import numpy as np

from pipelines import attention_views as av

from . import figures, view_figures
from .inputs import clamp


@dataclass(frozen=True)
class KindMaps:
    """One kind of attention of one result: its maps by layer, and which tokens its rows and columns are."""

    kind: str  # "self" | "encoder" | "decoder" | "cross"
    title: str  # "Self-attention", "Cross-attention", ...
    maps: list  # per layer (H, Tq, Tk)
    q_side: str  # "src" | "tgt"
    k_side: str
    q_labels: list[str]  # unique 'i:token' labels
    k_labels: list[str]
    query: str = "query"  # the axes' words
    key: str = "key"
    cut_after: int | None = None  # a long review: the kept head ends here (same positions on both axes)
    n_skipped: int = 0


def token_text(label: str) -> str:
    """The token of an 'i:token' axis label, unescaped."""
    return html.unescape(label.split(":", 1)[1])


def parse_token(value) -> tuple[str, int] | None:
    """'src:12' (or 'src:12#nonce' from a click) -> ('src', 12); None for no or a malformed token."""
    try:
        side, pos = str(value).split("#")[0].split(":")
        return (side, int(pos)) if side in ("src", "tgt") else None
    except (ValueError, AttributeError):
        return None


@dataclass
class Shown:
    """A layer of one kind as it is drawn: hidden tokens dropped and rows renormalised."""

    maps: np.ndarray  # (H, Tq', Tk')
    q_labels: list[str]
    k_labels: list[str]
    kept_q: np.ndarray  # original positions of the rows shown
    kept_k: np.ndarray
    hidden: bool


def shown(km: KindMaps, layer: int, hide: bool) -> Shown:
    """The layer's maps, with special tokens and punctuation hidden and rows renormalised when hide is on."""
    maps = figures.as_float32(km.maps[layer])
    Tq, Tk = maps.shape[-2:]
    if not hide:
        return Shown(maps, km.q_labels, km.k_labels, np.arange(Tq), np.arange(Tk), False)
    hide_q = av.hidden_positions([token_text(lab) for lab in km.q_labels])
    hide_k = av.hidden_positions([token_text(lab) for lab in km.k_labels])
    w, kept_q, kept_k = av.hide_tokens(maps, hide_q, hide_k)
    labels = [km.q_labels[i] for i in kept_q], [km.k_labels[i] for i in kept_k]
    return Shown(w, *labels, kept_q, kept_k, len(kept_q) < Tq or len(kept_k) < Tk)


def _position(kept: np.ndarray, pos: int) -> int | None:
    """Where original position pos is drawn among the kept ones (None: hidden)."""
    where = np.flatnonzero(kept == pos)
    return int(where[0]) if len(where) else None


def focus_positions(km: KindMaps, s: Shown, token) -> tuple[int | None, int | None]:
    """(row, column) drawn for the token, where it is a query / a key of this kind."""
    parsed = parse_token(token)
    if parsed is None:
        return None, None
    side, pos = parsed
    row = _position(s.kept_q, pos) if side == km.q_side else None
    col = _position(s.kept_k, pos) if side == km.k_side else None
    return row, col


def _hidden_note(s: Shown) -> str:
    return " · punctuation and special tokens hidden, rows renormalised" if s.hidden else ""


def heatmap(km: KindMaps, layer: int, head: int, title: str, scale="linear", hide=False, token=None):
    """One head large, with the cut of a long review, the focused token's row and column, and the scale named."""
    layer = clamp(layer, 0, len(km.maps) - 1, 0)
    s = shown(km, layer, bool(hide))
    head = clamp(head, 0, s.maps.shape[0] - 1, 0)
    cut = av.cut_marker(km.cut_after, km.n_skipped, s.kept_q)
    row, col = focus_positions(km, s, token)
    shapes = figures.marks(cut, len(s.q_labels), len(s.k_labels), row, col, cut_rows=km.q_side == km.k_side)
    meta = dict(kind=km.kind, q=km.q_side, k=km.k_side)
    title = title.format(layer=layer + 1, head=head + 1)
    fig = figures.attention_heatmap(
        s.maps[head], s.q_labels, s.k_labels, title, km.query, km.key, av.color_scale(scale), shapes, meta
    )
    if s.hidden:
        fig.layout.title.subtitle.text += _hidden_note(s)
    return fig


def overview(km: KindMaps, layer: int, title: str, scale="linear", hide=False):
    """Every head of a layer as small multiples on one colour scale."""
    layer = clamp(layer, 0, len(km.maps) - 1, 0)
    s = shown(km, layer, bool(hide))
    title = title.format(layer=layer + 1)
    fig = figures.heads_overview(s.maps, s.q_labels, s.k_labels, title, km.query, km.key, scale=av.color_scale(scale))
    if s.hidden:
        fig.layout.title.subtitle.text += _hidden_note(s)
    return fig


def focus_panels(km: KindMaps, s: Shown, token) -> list:
    """The token's panels in this kind: where it looks (as a query), what looks at it (as a key)."""
    row, col = focus_positions(km, s, token)
    focus = av.token_focus(s.maps, row, col)
    label = s.q_labels[row] if row is not None else s.k_labels[col] if col is not None else ""
    panels = []
    if focus.looks_at is not None:
        panels.append((f"where {label} looks", focus.looks_at, s.k_labels, _position(s.kept_k, s.kept_q[row])))
    if focus.looked_at_by is not None:
        panels.append((f"what looks at {label}", focus.looked_at_by, s.q_labels, _position(s.kept_q, s.kept_k[col])))
    return panels


def token_focus(km: KindMaps, layer: int, token, hide=False):
    """Every head of the chosen layer for one token (None without a token this kind shows)."""
    if parse_token(token) is None:
        return None
    layer = clamp(layer, 0, len(km.maps) - 1, 0)
    s = shown(km, layer, bool(hide))
    panels = focus_panels(km, s, token)
    if not panels:
        return None
    title = f"{km.title}, layer {layer + 1}: one token in every head"
    return view_figures.token_focus(panels, title, f"bars = attention weight{_hidden_note(s)}")


def model_view(km: KindMaps, scale="linear", hide=False, max_cells: int = 24, layer_names=None):
    """Every layer x head of this kind as thumbnails on one colour scale."""
    layers = [shown(km, layer, bool(hide)) for layer in range(len(km.maps))]
    thumbs, starts_q, starts_k = av.thumbnails([s.maps for s in layers], max_cells)
    q_labels = figures._block_labels(layers[0].q_labels, starts_q) if len(starts_q) < len(layers[0].q_labels) else None
    k_labels = figures._block_labels(layers[0].k_labels, starts_k) if len(starts_k) < len(layers[0].k_labels) else None
    title = f"{km.title}: every layer and head"
    return view_figures.model_view(
        thumbs,
        q_labels or layers[0].q_labels,
        k_labels or layers[0].k_labels,
        title,
        km.kind,
        av.color_scale(scale),
        layer_names,
        km.query,
        km.key,
    )


def token_choices(kinds: list[KindMaps]) -> list[tuple[str, str]]:
    """(label, 'side:position') of every token the kinds show, input first."""
    seen, out = set(), []
    named = {"src": "", "tgt": ""}
    if any(km.q_side != km.k_side for km in kinds):  # two languages: say which
        named = {"src": " (German)", "tgt": " (English)"}
    for km in kinds:
        for side, labels in ((km.k_side, km.k_labels), (km.q_side, km.q_labels)):
            if side not in seen:
                seen.add(side)
                out += [(f"{html.unescape(lab)}{named[side]}", f"{side}:{i}") for i, lab in enumerate(labels)]
    return sorted(out, key=lambda c: c[1].startswith("tgt"))
