"""Handlers of the attention views, the same for every kind of attention and every model: the large heatmap with
its colour scale, hidden tokens, cut marker and focused token; the small multiples of a layer; token focus; the
model view.

Every map and token comes from one source, a result's AttentionMaps (pipelines.attention.attention_maps), whichever
model made it (ours or a `transformers` one); `kinds_of` turns it into KindMaps, one per kind, their rows' and columns'
tokens kept as TokenAxis (viz.attention.token_labels: the tokens, and the axis labels built once from them). Tokens
are named "side:position" with side "src" (the input: the review, the German sentence) or "tgt" (the English output):
the token produced at step position. A row or column of a map is that token, or none (the decoder's start token).
"""

from dataclasses import dataclass

import numpy as np

from pipelines.attention import attention_views as av
from pipelines.attention.attention_maps import AttentionMaps
from pipelines.kinds import KINDS, SIDE_NAMES, SIDES

from ..inputs import clamp
from . import figures, view_figures
from .token_labels import TokenAxis, display_token, token_label


class LabelledAxes:
    """The rows' and columns' axis labels of a map whose tokens are `q` and `k` (TokenAxis)."""

    q: TokenAxis
    k: TokenAxis

    @property
    def q_labels(self) -> list[str]:
        return self.q.labels

    @property
    def k_labels(self) -> list[str]:
        return self.k.labels


@dataclass(frozen=True)
class KindMaps(LabelledAxes):
    """One kind of attention of one result: its maps by layer, and which tokens its rows and columns are."""

    kind: str  # "self" | "encoder" | "decoder" | "cross"
    title: str
    maps: np.ndarray  # (L, H, Tq, Tk), rows = queries
    q_side: str  # "src" | "tgt"
    k_side: str
    q: TokenAxis  # the rows' tokens and their labels
    k: TokenAxis  # the columns'
    q_ids: list[str | None]  # 'side:position' of each row's token
    k_ids: list[str | None]  # of each column's token (None: no token of the input or output, e.g. '<s>')
    query: str = "query"
    key: str = "key"
    cut_after: int | None = None  # a long review: the kept head ends here (same positions on both axes)
    n_skipped: int = 0
    carried: np.ndarray | None = None  # (L, H, Tk) ||v_j W_O^h|| for the norm scale (None: the run kept none)


def _ids(side: str, n: int, shift: int = 0) -> list[str | None]:
    return [None] * shift + [f"{side}:{i}" for i in range(n - shift)]


def kinds_of(maps: AttentionMaps, cut_after: int | None = None, n_skipped: int = 0) -> dict[str, KindMaps]:
    """Every kind of a result's AttentionMaps as the views draw it, in the maps' order."""
    out = {}
    for kind in maps.kinds:
        spec, Tq, Tk = KINDS[kind], len(maps.queries[kind]), len(maps.keys[kind])
        out[kind] = KindMaps(
            kind,
            spec.title,
            maps.maps[kind],
            spec.q_side,
            spec.k_side,
            TokenAxis.of(maps.queries[kind]),
            TokenAxis.of(maps.keys[kind]),
            _ids(spec.q_side, Tq),
            _ids(spec.k_side, Tk, spec.k_shift),
            spec.query,
            spec.key,
            cut_after,
            n_skipped,
            maps.carried.get(kind),
        )
    return out


def parse_token(value) -> tuple[str, int] | None:
    """'src:12' (or 'src:12#nonce' from a click) -> ('src', 12); None for no or a malformed token."""
    try:
        side, pos = str(value).split("#")[0].split(":")
        return (side, int(pos)) if side in SIDES else None
    except (ValueError, AttributeError):
        return None


@dataclass
class Shown(LabelledAxes):
    """A layer of one kind as it is drawn: hidden tokens dropped and rows renormalised."""

    maps: np.ndarray  # (H, Tq', Tk')
    q: TokenAxis  # the rows shown
    k: TokenAxis
    kept_q: np.ndarray  # original positions of the rows shown
    kept_k: np.ndarray
    hidden: bool


def layer_maps(km: KindMaps, layer: int, scale=None) -> np.ndarray:
    """(H, Tq, Tk) float32: the layer's weights, or, for the norm scale, each row's shares of ||w_ij v_j W_O^h||
    (pipelines.attention.attention_views.norm_shares)."""
    maps = figures.as_float32(km.maps[layer])
    if av.color_scale(scale).weighs_values and km.carried is not None:
        maps = av.norm_shares(maps, km.carried[layer])
    return maps


def shown(km: KindMaps, layer: int, hide: bool, scale=None) -> Shown:
    """The layer's maps (norm maps for the norm scale), with special tokens and punctuation hidden and rows
    renormalised when hide is on."""
    maps = layer_maps(km, layer, scale)
    Tq, Tk = maps.shape[-2:]
    if not hide:
        return Shown(maps, km.q, km.k, np.arange(Tq), np.arange(Tk), False)
    w, kept_q, kept_k = av.hide_tokens(maps, av.hidden_positions(km.q.tokens), av.hidden_positions(km.k.tokens))
    return Shown(w, km.q.kept(kept_q), km.k.kept(kept_k), kept_q, kept_k, len(kept_q) < Tq or len(kept_k) < Tk)


def _drawn_at(ids: list[str | None], kept: np.ndarray, token: str) -> int | None:
    """Where the token is drawn on an axis that shows the positions kept (None: not on it, or hidden)."""
    return next((n for n, i in enumerate(kept.tolist()) if ids[i] == token), None)


def focus_positions(km: KindMaps, s: Shown, token) -> tuple[int | None, int | None]:
    """(row, column) drawn for the token, where it is a query / a key of this kind."""
    parsed = parse_token(token)
    if parsed is None:
        return None, None
    token = f"{parsed[0]}:{parsed[1]}"
    return _drawn_at(km.q_ids, s.kept_q, token), _drawn_at(km.k_ids, s.kept_k, token)


def future(km: KindMaps, s: Shown) -> np.ndarray | None:
    """(Tq', Tk') True where a causal kind's row cannot read the column (a later position): no weight, drawn blank;
    None for a kind that reads every key."""
    if not KINDS[km.kind].causal:
        return None
    return s.kept_k[None, :] > s.kept_q[:, None]


def _hidden_note(s: Shown) -> str:
    return " · punctuation and special tokens hidden, rows renormalised" if s.hidden else ""


def heatmap(km: KindMaps, layer: int, head: int, title: str, scale="linear", hide=False, token=None):
    """One head large, with the cut of a long review, the focused token's row and column, and the scale named."""
    layer = clamp(layer, 0, len(km.maps) - 1, 0)
    s = shown(km, layer, bool(hide), scale)
    head = clamp(head, 0, s.maps.shape[0] - 1, 0)
    cut = av.cut_marker(km.cut_after, km.n_skipped, s.kept_q)
    row, col = focus_positions(km, s, token)
    shapes = figures.marks(cut, len(s.q_labels), len(s.k_labels), row, col, cut_rows=km.q_side == km.k_side)
    meta = dict(kind=km.kind, q=km.q_side, k=km.k_side)
    title = title.format(layer=layer + 1, head=head + 1)
    fig = figures.attention_heatmap(
        s.maps[head],
        s.q_labels,
        s.k_labels,
        title,
        (km.query, km.key),
        av.color_scale(scale),
        shapes,
        meta,
        future(km, s),
    )
    if s.hidden:
        fig.layout.title.subtitle.text += _hidden_note(s)
    return fig


def overview(km: KindMaps, layer: int, title: str, scale="linear", hide=False):
    """Every head of a layer as small multiples on one colour scale."""
    layer = clamp(layer, 0, len(km.maps) - 1, 0)
    s = shown(km, layer, bool(hide), scale)
    title = title.format(layer=layer + 1)
    fig = figures.heads_overview(s.maps, s.q, s.k, title, (km.query, km.key), scale=av.color_scale(scale))
    if s.hidden:
        fig.layout.title.subtitle.text += _hidden_note(s)
    return fig


def focus_panels(km: KindMaps, s: Shown, token) -> list:
    """The token's panels in this kind: where it looks (as a query), what looks at it (as a key)."""
    row, col = focus_positions(km, s, token)
    focus = av.token_focus(s.maps, row, col)
    label = s.q_labels[row] if row is not None else s.k_labels[col] if col is not None else ""
    panels = []  # each marks the token itself where it is on the other axis
    if focus.looks_at is not None:
        panels.append((f"where {label} looks", focus.looks_at, s.k_labels, col))
    if focus.looked_at_by is not None:
        panels.append((f"what looks at {label}", focus.looked_at_by, s.q_labels, row))
    return panels


def _not_shown(km: KindMaps, token: str) -> str:
    """Why token focus has nothing to draw for this token in this kind."""
    side = token.split(":")[0]
    if side not in (km.q_side, km.k_side):
        other = km.q_side if side != km.q_side else km.k_side
        name = SIDE_NAMES[other]
        article = "an" if name[0] in "AEIOU" else "a"
        return f"{km.title} has no {SIDE_NAMES[side]} tokens: pick {article} {name} token or another attention."
    named = dict(zip(km.q_ids, km.q.tokens)) | dict(zip(km.k_ids, km.k.tokens))
    if token in named:
        tok = token_label(named[token])
        return f"“{tok}” is hidden: untick “Hide special tokens and punctuation” to see it."
    return "This token is not in the last result: pick another."


def token_focus(km: KindMaps, layer: int, token, hide=False, scale=None):
    """Every head of the chosen layer for one token (None without a token; a short note when this kind does not
    show it); the norm scale draws ||w v W_O|| in place of the weights."""
    parsed = parse_token(token)
    if parsed is None:
        return None
    layer = clamp(layer, 0, len(km.maps) - 1, 0)
    s = shown(km, layer, bool(hide), scale)
    panels = focus_panels(km, s, token)
    title = f"{km.title}, layer {layer + 1}: one token in every head"
    if not panels:
        return view_figures.note(title, _not_shown(km, f"{parsed[0]}:{parsed[1]}"))
    what = (
        "share of ‖w·v·W_O‖" if av.color_scale(scale).weighs_values and km.carried is not None else "attention weight"
    )
    return view_figures.token_focus(panels, title, f"bars = {what}{_hidden_note(s)}")


def model_view(km: KindMaps, scale="linear", hide=False, max_cells: int = 24, layer_names=None):
    """Every layer x head of this kind as thumbnails on one colour scale."""
    layers = [shown(km, layer, bool(hide), scale) for layer in range(len(km.maps))]
    thumbs, starts_q, starts_k = av.thumbnails([s.maps for s in layers], max_cells)
    q, k = layers[0].q, layers[0].k
    title = f"{km.title}: every layer and head"
    return view_figures.model_view(
        thumbs,
        q.blocks(starts_q) if len(starts_q) < len(q) else q.labels,
        k.blocks(starts_k) if len(starts_k) < len(k) else k.labels,
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
    named = dict.fromkeys(SIDES, "")
    if any(km.q_side != km.k_side for km in kinds):  # two languages: say which
        named = {side: f" ({name})" for side, name in SIDE_NAMES.items()}
    for km in kinds:  # rows first: a token is named by its position there (the decoder's columns are shifted)
        for ids, axis in ((km.q_ids, km.q), (km.k_ids, km.k)):
            for i, (token, text) in enumerate(zip(ids, axis.tokens)):
                if token is not None and token not in seen:
                    seen.add(token)
                    out.append((f"{i}:{display_token(text)}{named[token.split(':')[0]]}", token))
    return sorted(out, key=lambda c: c[1].startswith(SIDES[1]))
