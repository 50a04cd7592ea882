"""Inside one head of a decoder-only model, drawn: what inside_head_view shows for every head, plus the three things a
causal Llama-style head does differently (pipelines.attention.inside_head): which key/value head this query head
reads and which query heads share it, q and the top keys before and after the rotary rotation with the scores each
gives, and the causal mask (nothing above the diagonal). HTML only; tokens are escaped."""

from pipelines.attention.inside_head import CausalHeadInternals

from .inside_head_view import TOP_KEYS, _esc, _key, vector_html

MASK_GRID = 32  # tokens up to which the whole mask is drawn as a grid; past that, the query's row only
_GRID = "overflow-x:auto;max-width:100%;font:9px/9px monospace;letter-spacing:0;white-space:pre"


def _heads(group: range) -> str:
    """Query heads as the page numbers them (from 1): "5–8", or "3" for a group of one."""
    return f"{group.start + 1}–{group.stop}" if len(group) > 1 else f"{group.start + 1}"


def group_html(h: CausalHeadInternals) -> str:
    """Which key/value head this query head reads, and the query heads that share it (grouped-query attention)."""
    n_q = len(h.group) * h.n_kv_heads
    if len(h.group) == 1:
        own = f"query head {h.head + 1} has a key/value head of its own ({n_q} of each: no grouping)"
        return f"<p class='ih-group'><b>Key/value heads</b>: {own}.</p>"
    return (
        f"<p class='ih-group'><b>Grouped key/value heads</b>: query head {h.head + 1} reads key/value head "
        f"{h.kv_head + 1} of {h.n_kv_heads}, shared with query heads {_heads(h.group)} ({n_q} query heads, "
        f"{h.n_kv_heads} key/value heads: each key and value vector below serves {len(h.group)} query heads; "
        "only the queries differ).</p>"
    )


def rotation_html(h: CausalHeadInternals, k_labels: list[str]) -> str:
    """q and the top keys before and after the rotation, and q·k with and without it."""
    if not h.rotated:
        return "<p class='ih-rotary'>This model adds positions to the token vectors: q and k are not rotated.</p>"
    order = [int(j) for j in h.weights.argsort(descending=True, stable=True)[:TOP_KEYS]]
    q0, q1, k0, k1 = h.q_before.numpy(), h.q.numpy(), h.keys_before.numpy(), h.keys.numpy()
    top = float(max(abs(q0).max(), abs(q1).max(), abs(k0[order]).max(), abs(k1[order]).max()))
    q_name = _esc(f"{h.query}:{k_labels[h.query]}") if h.query < len(k_labels) else str(h.query)
    vectors = vector_html(f"q ({q_name}) before", q0, top) + vector_html(f"q ({q_name}) rotated", q1, top)
    for j in order:
        vectors += vector_html(f"k ({_key(j, k_labels)}) before", k0[j], top)
        vectors += vector_html(f"k ({_key(j, k_labels)}) rotated", k1[j], top)
    before, after = h.scores_before.numpy(), h.scores.numpy()
    rows = "".join(
        f"<tr><td>{_key(j, k_labels)}</td><td>{h.query - j}</td><td>{float(before[j]):.3f}</td>"
        f"<td>{float(after[j]):.3f}</td></tr>"
        for j in order
    )
    hs = h.q.numel()
    return f"""<div class="ih-rotary">
<p><b>Rotary positions</b>: before they meet, q and every k are rotated by their position, pair by pair (dim i with dim
i + {hs // 2}, by position × base<sup>−2i/{hs}</sup>); q·k then depends on the distance between them, not on where
they are. The lengths stay the same; the scores above are the rotated ones.</p>
{vectors}
<table class="ih-rotation"><tr><th>key</th><th>distance</th><th>q·k before</th><th>q·k rotated</th></tr>
{rows}</table></div>"""


def _mask_row(query: int, n: int, marked: bool) -> str:
    """One row of the causal mask as characters (a few bytes a cell): ■ a key it reads, □ a later one; the query's
    row in orange."""
    colour = "#ea580c" if marked else "#6366f1"
    return (
        f'<div class="ih-mrow"><span class="ih-m1" style="color:{colour}">{"■" * (query + 1)}</span>'
        f'<span class="ih-m0" style="color:#9ca3af">{"□" * (n - 1 - query)}</span></div>'
    )


def mask_html(h: CausalHeadInternals) -> str:
    """The causal mask over the keys shown: a grid (rows = queries) when it is small, else this query's row."""
    n = h.keys.size(0)
    hidden = n - 1 - h.query
    grid = range(n) if n <= MASK_GRID else [h.query]
    rows = "".join(_mask_row(i, n, i == h.query) for i in grid)
    shown = "every row; this query's in orange" if n <= MASK_GRID else "this query's row"
    return (
        f'<div class="ih-mask" data-query="{h.query}" data-keys="{n}"><p><b>Causal mask</b> ({shown}): row i reads '
        f"keys 0..i, nothing above the diagonal. Row {h.query} reads {h.query + 1} key(s); the {hidden} later one(s) "
        f"get −∞ before the softmax and exactly 0 after it.</p>"
        f'<div style="{_GRID}">{rows}</div></div>'
    )


def causal_html(h: CausalHeadInternals, k_labels: list[str]) -> str:
    """Everything this module adds for one query of one causal head."""
    group = list(h.group)
    data = f'data-kv-head="{h.kv_head}" data-group="{group[0]}-{group[-1]}" data-n-kv-heads="{h.n_kv_heads}"'
    return f'<div class="inside-causal" {data}>{group_html(h)}{rotation_html(h, k_labels)}{mask_html(h)}</div>'
