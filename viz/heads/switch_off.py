"""Switching heads off: the chosen set (a clicked head added to it) and the model run again without those heads,
beside the intact model (the run is the task's, viz.tasks.TASKS[task].head_runs)."""

import logging

from ..tasks import TASKS
from .measure import HeadsView
from .names import parse_heads

log = logging.getLogger(__name__)


def add_head(selected: list[str] | None, value: str | None) -> list[str]:
    """The switched-off set with the clicked head added (a click in the grid or the table, then 'switch it off')."""
    selected = list(selected or [])
    if value and value not in selected:
        selected.append(value)
    return selected


def switch_off(pipe, heads: HeadsView | None, selected: list[str] | None) -> str:
    """Run the model again with the chosen heads off: HTML comparing it with the intact model."""
    if heads is None:
        return "<p>Run the model first: the heads are measured on its last input.</p>"
    mask = parse_heads(selected)
    if not mask:
        return "<p>Choose at least one head to switch off (pick it in the list, or click it in the grid or table).</p>"
    try:
        return TASKS[heads.task].head_runs.switch_off(pipe, heads, mask)
    except Exception:
        log.exception("switching heads off failed")
        return "<p>Sorry, the model failed with these heads off. Please try another set.</p>"
