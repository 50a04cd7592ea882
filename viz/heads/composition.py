"""Heads composing, drawn: for each head, how much the earlier heads' outputs feed its queries, keys or values (the
pipeline's composition: Q-, K- or V-composition from the weights, beside random matrices of the same shapes), and
each head's copying score (its OV circuit through the embeddings and unembedding), as two layers x heads matrices; a
click on a head lists what it composes with and the tokens it copies most. The numbers are the pipeline's
(pipelines.lens.composition); this module only draws and words them."""

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pipelines.kinds import CROSS
from pipelines.lens.composition import Composition, Copying
from pipelines.tasks import TASKS

from ..attention.figures import COLORSCALE

KINDS = {"Q-composition": "q", "K-composition": "k", "V-composition": "v"}  # the choice -> the pipeline's kind
WHAT = {"q": "queries", "k": "keys", "v": "values"}
PICK_BOX = "composition-click"  # the hidden box a click on a head writes 'layer:head' into (plot_clicks.js)
TOP = 8  # heads listed each way


def attentions(task: str) -> list[str]:
    """The kinds of attention whose heads compose with each other in the task's model (its self-attention; the
    translator's encoder and decoder): every kind it draws but cross-attention, whose keys come from the encoder."""
    return [kind for kind in TASKS[task].shown if kind != CROSS.name]


def strongest_into(comp: Composition) -> np.ndarray:
    """(L, H) each head's largest composition score from any earlier head; NaN in the first layer (none earlier)."""
    L, H = comp.scores.shape[:2]
    best = np.full((L, H), np.nan)
    for layer in range(1, L):
        best[layer] = comp.scores[:layer, :, layer, :].reshape(-1, H).max(0)  # over earlier (layer, head)
    return best


def _matrix(values: np.ndarray, hover: str) -> go.Heatmap:
    """A layers x heads matrix; each cell a head (labels 'layer 1' / 'head 1'), blank where NaN."""
    L, H = values.shape
    z = [[None if np.isnan(v) else round(float(v), 4) for v in row] for row in values]
    return go.Heatmap(z=z, x=[f"head {h + 1}" for h in range(H)], y=[f"layer {i + 1}" for i in range(L)],
                      hovertemplate=hover, meta={"pick": PICK_BOX}, hoverongaps=False)  # fmt: skip


def composition_figure(comp: Composition, copying: Copying | None, title: str = "") -> go.Figure:
    """Two layers x heads matrices: each head's strongest composition from an earlier head (its colour bar from the
    random baseline's mean, so a cell near the bottom composes no more than random matrices would), and each head's
    copying score (-1 to 1). A click on a head sends it to the page (meta.pick)."""
    base = comp.baseline_mean
    titles = (f"{comp.kind.upper()}-composition into each head (random {base:.3f})", "Copying score of each head")
    fig = make_subplots(rows=2, cols=1, subplot_titles=titles, vertical_spacing=0.14)
    fig.update_annotations(font_size=13)  # the titles fit a phone's width
    into = strongest_into(comp)
    trace = _matrix(into, "%{y}, %{x}: %{z:.3f}<extra>strongest composition</extra>")
    vmax = float(np.nanmax(into)) if np.isfinite(into).any() else base
    trace.update(zmin=base, zmax=max(vmax, base * 1.01 + 1e-9), colorscale=COLORSCALE,
                 colorbar=dict(len=0.42, y=0.79, thickness=12))  # fmt: skip
    fig.add_trace(trace, row=1, col=1)
    if copying is not None:
        copy = _matrix(np.asarray(copying.scores, dtype=np.float64), "%{y}, %{x}: %{z:.3f}<extra>copying</extra>")
        copy.update(zmin=-1, zmax=1, colorscale="RdBu", reversescale=True, colorbar=dict(len=0.42, y=0.2, thickness=12))
        fig.add_trace(copy, row=2, col=1)
    L = comp.scores.shape[0]
    fig.update_yaxes(autorange="reversed", type="category", tickfont=dict(size=10))
    fig.update_xaxes(type="category", tickfont=dict(size=10))
    fig.update_layout(height=int(min(900, 260 + 2 * 22 * L)), margin=dict(l=10, r=10, t=50, b=20),
                      title=dict(text=title, font=dict(size=13)), template="plotly_white")  # fmt: skip
    return fig


def parse_head(value, n_layers: int, n_heads: int) -> tuple[int, int] | None:
    """'3:2' (1-based, as the matrix labels them; '#nonce' from a click) -> (2, 1) from 0; None where malformed."""
    try:
        layer, head = (int(x) - 1 for x in str(value).split("#")[0].split(":"))
    except (ValueError, AttributeError):
        return None
    return (layer, head) if 0 <= layer < n_layers and 0 <= head < n_heads else None


def _heads(rows: list[tuple[int, int, float]], base: float) -> str:
    if not rows:
        return "none"
    return ", ".join(f"L{i}H{h} {s:.3f} ({s / base:.1f}× random)" if base > 0 else f"L{i}H{h} {s:.3f}"
                     for i, h, s in rows)  # fmt: skip


def head_note(comp: Composition, copying: Copying | None, copied, layer: int, head: int) -> str:
    """Markdown for a clicked head: the earlier heads feeding its queries/keys/values most, the later heads it feeds
    most (heads named as TransformerLens names them, from 0), its copying score and the tokens it copies most."""
    base, what = comp.baseline_mean, WHAT[comp.kind]
    lines = [
        f"**L{layer}H{head}** (layer {layer + 1}, head {head + 1}). {comp.kind.upper()}-composition: how much an "
        f"earlier head's output, as written, reaches this head's {what} (1: all of it; random matrices of the same "
        f"shapes give {base:.3f} on average).",
        f"Earlier heads feeding its {what} most: {_heads(comp.into(layer, head, TOP), base)}.",
        f"Later heads whose {what} it feeds most: {_heads(comp.out_of(layer, head, TOP), base)}.",
    ]
    if copying is not None:
        score = float(np.asarray(copying.scores)[layer, head])
        lines.append(
            f"Copying score {score:+.3f} (its OV circuit's eigenvalues: their real parts' sum over their sizes' sum; "
            "near 1, whatever token it attends to, it raises that token's logit)."
        )
    if copied:
        tokens = ", ".join(f"`{repr(str(t)).replace('`', '')}` {float(v):+.2f}" for t, v in copied)  # code: as typed
        lines.append(f"Tokens it copies most: {tokens}.")
    return "\n\n".join(lines)
