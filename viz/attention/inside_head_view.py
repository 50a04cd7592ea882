"""Inside one head, drawn: one query's row of attention step by step (scores, scaled, masked, softmax) with the
head's numbers, the query and the top keys as small coloured vectors, the top keys' arithmetic written out, the
weighted sum; and the layer's heads assembled (each head's projected output for that query, as a bar of norms).

The numbers come from pipelines.attention.inside_head (an AttentionInternals recorded in the run that makes the maps);
this module only writes HTML and draws. Tokens are escaped: nothing typed is rendered as HTML."""

import html

import numpy as np
import plotly.graph_objects as go

from pipelines.attention.inside_head import AttentionInternals, HeadInternals

from .figures import _layout

TOP_KEYS = 4  # keys whose arithmetic is written out
VECTOR_CELLS = 16  # components shown of a vector (the head's width may be larger: "…" says so)


def _cell(x: float, top: float) -> str:
    """One component as a small coloured square: blue for negative, orange for positive, stronger for larger."""
    alpha = min(abs(x) / top, 1.0) if top > 0 else 0.0
    rgb = "234,88,12" if x > 0 else "37,99,235"
    return f'<span class="ih-cell" title="{x:.3f}" style="background:rgba({rgb},{alpha:.2f})"></span>'


def vector_html(name: str, vec: np.ndarray, top: float) -> str:
    """A named vector as a row of coloured squares (the first VECTOR_CELLS components)."""
    cells = "".join(_cell(float(x), top) for x in vec[:VECTOR_CELLS])
    more = "…" if len(vec) > VECTOR_CELLS else ""
    return f'<div class="ih-vec"><span class="ih-name">{name}</span>{cells}{more}</div>'


def _esc(token: str) -> str:
    return html.escape(token, quote=True)


def _key(j: int, k_labels: list[str]) -> str:
    """Key j as the heatmap's axis names it ("10:,"): a review may hold the same token at several places."""
    return _esc(f"{j}:{k_labels[j]}")


def _dot(q: np.ndarray, k: np.ndarray, score: float) -> str:
    """q · k written out: the first three products, then the sum."""
    terms = " + ".join(f"({a:.2f}×{b:.2f})" for a, b in zip(q[:3], k[:3]))
    return f"{terms} + … = {score:.3f}"


def steps_html(h: HeadInternals, q_label: str, k_labels: list[str], extra: str = "") -> str:
    """The formula with this head's numbers, step by step, for one query; every key's weight in a table
    (class ih-weights, one cell per key, in key order) that a reader, or a test, can check against the heatmap.
    The outer div names what it shows (data-kind, -layer, -head, -query: positions from 0); `extra`: HTML of what a kind
    of head adds (a causal head's rotation, group and mask: inside_head_causal), before the table of every weight."""
    q, keys = h.q.numpy(), h.keys.numpy()
    order = [int(j) for j in np.argsort(-h.weights.numpy(), kind="stable")[:TOP_KEYS]]
    top = float(max(np.abs(q).max(initial=0), np.abs(keys[order]).max(initial=0)))
    rows = []
    for j in order:
        masked = "−∞" if not bool(h.mask[j]) else f"{float(h.scaled[j]):.3f}"
        rows.append(
            f"<tr><td>{_key(j, k_labels)}</td><td>{_dot(q, keys[j], float(h.scores[j]))}</td>"
            f"<td>× {h.scale:.3f} = {float(h.scaled[j]):.3f}</td><td>{masked}</td>"
            f"<td><b>{float(h.weights[j]):.3f}</b></td><td>{float(h.carried[j]):.3f}</td></tr>"
        )
    vectors = vector_html(f"q ({_esc(f'{h.query}:{q_label}')})", q, top) + "".join(
        vector_html(f"k ({_key(j, k_labels)})", keys[j], top) for j in order
    )
    hidden = int((~h.mask).sum())
    why = "(causal: no later step)" if hidden else "(none: every key is seen)"
    mixed = " + ".join(f"{float(h.weights[j]):.3f}·v({_key(j, k_labels)})" for j in order)
    weights = "".join(f'<td data-key="{j}">{float(w):.3f}</td>' for j, w in enumerate(h.weights.numpy()))
    labels = "".join(f"<th>{_key(j, k_labels)}</th>" for j in range(len(k_labels)))
    shown = f'data-kind="{h.kind}" data-layer="{h.layer}" data-head="{h.head}" data-query="{h.query}"'
    return f"""<div class="inside-head" {shown}>
<p class="ih-formula">weights = softmax(mask(q·kᵀ / √{h.q.numel()})) · output = Σ<sub>j</sub> w<sub>j</sub>
v<sub>j</sub> · layer {h.layer + 1}, head {h.head + 1}, query <b>{_esc(q_label)}</b> (row {h.query})</p>
<ol class="ih-steps">
<li><b>scores</b> q·k<sub>j</sub> for every key ({len(k_labels)} keys; the top {len(order)} by weight below)</li>
<li><b>scaled</b> by 1/√{h.q.numel()} = {h.scale:.3f}</li>
<li><b>masked</b>: {hidden} key(s) hidden (−∞) {why}</li>
<li><b>softmax</b>: the weights, the heatmap's row</li>
</ol>
{vectors}
<table class="ih-top"><tr><th>key</th><th>q·k</th><th>scaled</th><th>masked</th><th>softmax</th><th>‖w·v·W_O‖</th></tr>
{"".join(rows)}</table>
<p class="ih-sum">output = {mixed} + … (‖output‖ = {float(h.output.norm()):.3f}); through the head's slice of W_O:
‖output·W_O‖ = {h.projected_norm:.3f}</p>
{extra}
<details><summary>Every weight of this row</summary>
<table class="ih-weights"><tr>{labels}</tr><tr>{weights}</tr></table></details>
</div>"""


def heads_figure(internals: AttentionInternals, kind: str, layer: int, query: int, q_label: str) -> go.Figure:
    """Multi-head, assembled: each head's output for this query through its slice of W_O, as a bar of its norm,
    beside the norm of their sum (the block's output, bias apart)."""
    ki = internals.kinds[kind]
    norms = ki.head_norms(layer, query).numpy()  # (H,)
    total = float(ki.projected[layer, :, query].sum(0).norm())
    names = [f"head {h + 1}" for h in range(len(norms))] + ["all heads (sum)"]
    fig = go.Figure(
        go.Bar(
            x=names,
            y=[*norms.tolist(), total],
            marker_color=["#6366f1"] * len(norms) + ["#ea580c"],
            hovertemplate="%{x}: ‖·‖ = %{y:.3f}<extra></extra>",
        )
    )
    title = f"Layer {layer + 1}, the heads of “{html.escape(q_label, quote=False)}” concatenated and projected"
    _layout(fig, title, 320, "bars = ‖head output · W_O slice‖; the sum is the attention block's output")
    fig.update_layout(margin=dict(l=40, r=10, t=100, b=40), dragmode=False)
    return fig
