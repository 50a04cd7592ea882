"""A click on a head, in the grid or in the head table: which head it points at ('kind:layer:head'), and that
head's attention map from the tab's last result."""

import gradio as gr

from pipelines.kinds import BY_ROW, KINDS

from ..attention import figures, view_handlers
from .effects import effect_decimals
from .measure import HeadsView
from .names import head_value


def selected_head(heads: HeadsView | None, evt: gr.SelectData) -> str | None:
    """The head a click in the grid points at ('kind:layer:head'), or None (the name column, nothing measured)."""
    if heads is None or evt is None:
        return None
    row_value, col = evt.row_value, evt.index[1] if isinstance(evt.index, list | tuple) else None
    if not row_value or not col:
        return None
    name, layer = str(row_value[0]).rsplit(" ", 1)
    kind = BY_ROW[name]
    return head_value(kind, int(layer) - 1, int(col) - 1)


def table_head(heads: HeadsView | None, evt: gr.SelectData) -> str | None:
    """The head of a clicked row of the head table (its data-head, sent by head_table.js), or None where it is not
    one of the measured heads (nothing measured, or a value that names no head)."""
    if heads is None or evt is None:
        return None
    return evt.value if _row(heads, str(evt.value)) else None


def _row(heads: HeadsView, value: str) -> dict | None:
    """The measured row of the head `value` ('kind:layer:head'), None where no measured head has that id."""
    return next((r for r in heads.rows if head_value(r["kind"], r["layer"], r["head"]) == value), None)


def head_heatmap(view, heads: HeadsView | None, value: str | None):
    """One head's attention map from the last result (any task's view); None without one."""
    if view is None or heads is None or not value:
        return None
    kind, layer, head = value.split(":")
    layer, head = int(layer), int(head)
    row = _row(heads, value)
    km = view_handlers.kinds_of(view.maps)[kind]  # one source of attention for every view
    decimals = effect_decimals(r["effect"] for r in heads.rows)
    stats = f"effect {row['effect']:+.{decimals}f} · entropy {row['entropy']:.2f}" if row else ""
    title = f"{KINDS[kind].title}, layer {layer + 1}, head {head + 1}: {stats}"
    return figures.attention_heatmap(km.maps[layer][head], km.q_labels, km.k_labels, title, (km.query, km.key))
