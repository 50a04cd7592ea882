"""The numbers behind the attention views, on plain maps (..., Tq, Tk) and token lists: colour scales, hidden
tokens with renormalised rows, the marker where a long review was cut, token focus, tick plans and the
thumbnails of the model view. No plotting here (viz/ draws); any source of attention maps can feed it."""

import math
from dataclasses import dataclass

import numpy as np

from pipelines.text import is_punctuation

SPECIAL_TOKENS = frozenset({"<s>", "</s>", "<pad>", "<unk>", "[CLS]", "[SEP]", "[PAD]", "␣", ""})


# --- colour scales --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scaled:
    """Where each weight falls on a colour scale: positions in [0, 1], and the colour bar's ticks."""

    positions: np.ndarray  # same shape as the weights, in [0, 1]
    tick_positions: list[float]  # in [0, 1]
    tick_labels: list[str]  # what each tick means, in weights
    title: str  # the colour bar's title


class ColorScale:
    """How weights map to colours. `label` says, in the plot, which scale is on."""

    name = ""
    label = ""
    linear = False  # True: colour is proportional to the weight (a plot can colour the weights themselves)
    weighs_values = False  # True: drawn over the norm maps ||w v W_O||, not the weights

    def apply(self, weights: np.ndarray) -> Scaled:
        raise NotImplementedError


def _top(weights: np.ndarray) -> float:
    return max(float(np.max(weights, initial=0.0)), 1e-3)


def nice_ticks(top: float, n: int = 5) -> list[float]:
    """Round tick values from 0 up to top, at most n + 1 of them."""
    raw = top / n
    step = next(s * 10**e for e in range(math.floor(math.log10(raw)), 3) for s in (1, 2, 2.5, 5) if s * 10**e >= raw)
    return [round(i * step, 10) for i in range(int(top / step + 1e-9) + 1)]


class Linear(ColorScale):
    name, label, linear = "linear", "linear colour scale", True

    def apply(self, weights: np.ndarray) -> Scaled:
        top = _top(weights)
        ticks = nice_ticks(top)
        return Scaled(np.clip(weights / top, 0, 1), [t / top for t in ticks], [f"{t:g}" for t in ticks], "weight")


class Log(ColorScale):
    """Logarithmic over `decades` powers of ten below the largest weight; smaller weights take the lightest colour."""

    name, label = "log", "log colour scale"

    def __init__(self, decades: int = 3):
        self.decades = decades

    def apply(self, weights: np.ndarray) -> Scaled:
        top = _top(weights)
        low = math.log10(top) - self.decades
        positions = (np.log10(np.maximum(weights, 10**low)) - low) / self.decades
        powers = range(math.ceil(low), math.floor(math.log10(top)) + 1)
        ticks = [10.0**p for p in powers]  # decades only: a tick at the top would run into the bar's title
        return Scaled(
            np.clip(positions, 0, 1),
            [(math.log10(t) - low) / self.decades for t in ticks],
            [f"{t:.2g}" for t in ticks],
            "weight (log)",
        )


class RowMax(ColorScale):
    """Each row (query) divided by its own largest weight: where every token looks most, however spread out."""

    name, label = "row", "each row scaled to its own maximum"

    def apply(self, weights: np.ndarray) -> Scaled:
        row_max = np.max(weights, axis=-1, keepdims=True)
        positions = np.divide(weights, row_max, out=np.zeros_like(weights, dtype=np.float64), where=row_max > 0)
        ticks = [0.0, 0.25, 0.5, 0.75, 1.0]
        return Scaled(positions, ticks, [f"{t:g}" for t in ticks], "÷ row max")


class Norm(Linear):
    """Linear, over the maps weighted by what each value carries (norm_shares): the views swap the weights for
    those maps when this scale is on."""

    name, label, weighs_values = "norm", "weight × ‖v·W_O‖ (what each key carries), each row's shares, linear", True


def norm_shares(weights: np.ndarray, carried: np.ndarray) -> np.ndarray:
    """weights (H, Tq, Tk), carried (H, Tk) ||v_j W_O^h|| -> (H, Tq, Tk) ||w_ij v_j W_O^h|| (Kobayashi et al.
    2020), each row divided by its sum: the share of the head's weighted, projected values that comes from key j
    (a row of zeros stays zero). In [0, 1] with rows summing to 1, as the weights they replace."""
    norms = np.asarray(weights, np.float32) * np.asarray(carried, np.float32)[:, None, :]
    total = norms.sum(axis=-1, keepdims=True)
    return np.divide(norms, total, out=np.zeros_like(norms), where=total > 0)


COLOR_SCALES: dict[str, ColorScale] = {s.name: s for s in (Linear(), Log(), RowMax(), Norm())}
SCALE_CHOICES = [("linear", "linear"), ("log", "log"), ("each row to its max", "row"), ("weight × value norm", "norm")]


def color_scale(name: str | None) -> ColorScale:
    """The scale of that name; linear for an unknown one."""
    return COLOR_SCALES.get(str(name), COLOR_SCALES["linear"])


# --- hiding tokens --------------------------------------------------------------------------------------


def hidden_positions(tokens: list[str], specials=SPECIAL_TOKENS) -> np.ndarray:
    """(T,) True for special tokens and punctuation: the tokens that soak up attention without content."""
    return np.array([t.strip() in specials or is_punctuation(t) for t in tokens], dtype=bool)


def hide_tokens(weights: np.ndarray, hide_q: np.ndarray, hide_k: np.ndarray):
    """Drop hidden queries (rows) and keys (columns) of maps (..., Tq, Tk) and renormalise every row to sum to 1
    over the keys that remain (a row that gave all its weight to hidden keys stays 0).
    Returns (maps (..., Tq', Tk'), kept query positions, kept key positions)."""
    kept_q, kept_k = np.flatnonzero(~hide_q), np.flatnonzero(~hide_k)
    if len(kept_q) == 0 or len(kept_k) == 0:  # nothing would remain: hide nothing
        kept_q, kept_k = np.arange(len(hide_q)), np.arange(len(hide_k))
    w = np.asarray(weights, dtype=np.float64)[..., kept_q, :][..., kept_k]
    total = w.sum(axis=-1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0), kept_q, kept_k


# --- the cut of a long review ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CutMarker:
    """Where the kept head of a long review meets its kept tail, on a plot's axis."""

    boundary: float  # between axis positions boundary - 0.5 and boundary + 0.5 (a half-integer)
    n_skipped: int  # tokens of the middle the model never read

    @property
    def text(self) -> str:
        return f"✂ {self.n_skipped:,} tokens skipped"


def cut_marker(cut_after: int | None, n_skipped: int, kept: np.ndarray | None = None) -> CutMarker | None:
    """The marker between token cut_after - 1 (the last of the head) and cut_after (the first of the tail), on an
    axis that shows the token positions `kept` (all when None); None when nothing was cut or a side is empty."""
    if cut_after is None or n_skipped <= 0:
        return None
    shown_before = cut_after if kept is None else int(np.sum(np.asarray(kept) < cut_after))
    shown = None if kept is None else len(kept)
    if shown_before == 0 or shown_before == shown:
        return None
    return CutMarker(shown_before - 0.5, n_skipped)


# --- ticks ----------------------------------------------------------------------------------------------


def tick_positions(n: int, max_ticks: int) -> list[int]:
    """Every position when n fit, else every k-th (k = 2, 5, 10, 20, ...: easy to count)."""
    if n <= max_ticks:
        return list(range(n))
    k = next(s * 10**e for e in range(0, 6) for s in (2, 5, 10) if math.ceil(n / (s * 10**e)) <= max_ticks)
    return list(range(0, n, k))


# --- token focus ----------------------------------------------------------------------------------------


@dataclass
class TokenFocus:
    """One token in every head of a layer: where it looks (as a query) and what looks at it (as a key)."""

    looks_at: np.ndarray | None  # (H, Tk) its row in every head; None when it is not a query of this map
    looked_at_by: np.ndarray | None  # (H, Tq) its column in every head; None when it is not a key here


def token_focus(weights: np.ndarray, query: int | None, key: int | None) -> TokenFocus:
    """weights (H, Tq, Tk) of one layer; query / key: the token's position on each axis (None: not on it)."""
    H, Tq, Tk = weights.shape
    looks = np.asarray(weights[:, query, :]) if query is not None and 0 <= query < Tq else None
    looked = np.asarray(weights[:, :, key]) if key is not None and 0 <= key < Tk else None
    return TokenFocus(looks, looked)


def top_k(weights: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest of a 1-D array, largest first (ties: earlier position first)."""
    order = np.argsort(-np.asarray(weights), kind="stable")
    return order[:k]


# --- the model view -------------------------------------------------------------------------------------


def pool_blocks(weights: np.ndarray, max_cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shrink maps (..., Tq, Tk) to at most max_cells a side by token blocks: a cell holds the attention mass the
    block's queries give the block's keys, averaged over the queries (rows still sum to 1).
    Returns (pooled maps, first query position of each block, first key position of each block)."""
    Tq, Tk = weights.shape[-2:]
    bq, bk = math.ceil(Tq / max_cells), math.ceil(Tk / max_cells)
    starts_q, starts_k = np.arange(0, Tq, bq), np.arange(0, Tk, bk)
    if bq == bk == 1:
        return np.asarray(weights), starts_q, starts_k
    mass = np.add.reduceat(np.add.reduceat(np.asarray(weights, np.float64), starts_k, axis=-1), starts_q, axis=-2)
    rows = np.diff(np.append(starts_q, Tq))  # queries per block
    return mass / rows[:, None], starts_q, starts_k


def thumbnails(layers: list[np.ndarray], max_cells: int = 24) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every layer's heads (each (H, Tq, Tk)) pooled to at most max_cells a side, for one shared colour scale:
    (maps (L, H, nq, nk), query block starts, key block starts)."""
    pooled = [pool_blocks(np.asarray(layer, np.float32), max_cells) for layer in layers]
    return np.stack([p[0] for p in pooled]), pooled[0][1], pooled[0][2]
