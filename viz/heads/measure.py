"""Measuring a model's heads on one input: the head table's rows, the grid and the table as the page shows them,
and the status line. What the model runs for it depends on the task (viz.tasks.TASKS[task].head_runs)."""

import logging
import time
from dataclasses import dataclass

import pandas as pd

from ..inputs import beam_width, check_text
from ..numbers import largest
from ..tasks import TASKS
from .effects import effect_decimals
from .grid import empty_grid, grid_styler
from .names import head_label
from .table import HeadTable, empty_table, head_table_view

log = logging.getLogger(__name__)


@dataclass
class HeadsView:
    """The head table of one run, kept in gr.State with what is needed to run the model again."""

    task: str  # its name in viz.tasks.TASKS
    text: str
    beam_size: int | None  # a task that decodes only
    rows: list[dict]  # pipelines' head table: 0-based layer and head
    effect_of: str  # what 'effect' measures, in words
    result: object = None  # a task that decodes: the intact result measured (switch_off reuses it)
    seconds: float | None = None  # how long this input's table took (every head switched off): the over-set estimate


def _unmeasured(pipe, error: str) -> tuple[None, pd.DataFrame, HeadTable, str]:
    """What a failed measurement leaves on the page: no HeadsView, the model's empty grid and table, the error."""
    return None, empty_grid(pipe.head_layers, pipe.n_heads), empty_table(pipe.head_layers), f"⚠️ {error}"


def head_table(pipe, task: str, text: str, decoding: str | None = None, beam_size=None, result=None, progress=None):
    """Measure every head on the text: (HeadsView, grid, table, status Markdown). The model runs here;
    result: the tab's last result (a translation's TranslationResult, a continuation), reused where it is of this
    text and decoding, to measure without decoding again. progress(done, total): where the task's model reports it."""
    spec = TASKS[task]
    checked = check_text(text, spec.max_chars, spec.unit)
    if checked.text is None:
        return _unmeasured(pipe, checked.error)
    beam = beam_width(decoding, beam_size, getattr(pipe, "beam_size", 4)) if spec.task.decodes else None
    start = time.perf_counter()
    try:
        rows, result = spec.head_runs.measure(pipe, checked.text, beam, result, progress)
    except ValueError:
        return _unmeasured(pipe, "The model found no words to read in this text.")
    except Exception:
        log.exception("head table failed")
        return _unmeasured(pipe, "Sorry, the heads could not be measured on this text.")
    seconds = time.perf_counter() - start
    effect_of = spec.task.effect_of
    view = HeadsView(task, checked.text, beam, rows, effect_of, result, seconds)
    top = min(rows, key=lambda r: r["effect"])
    lines = [
        f"{len(rows)} heads measured in {seconds:.2f} s. **Effect** = change of {effect_of} when that head "
        f"alone is switched off (orange: the output falls without it, blue: it rises). Largest drop: "
        f"**{head_label(top['kind'], top['layer'], top['head'])}** "
        f"({top['effect']:+.{effect_decimals(r['effect'] for r in rows)}f}).{_no_head_decides(rows)}",
        "Click a head in the grid or the table for its attention map; sort the table by clicking a column header.",
    ]
    return view, grid_styler(rows), head_table_view(rows), "\n\n".join(lines)


def _no_head_decides(rows: list[dict]) -> str:
    """A sentence where no head alone moves the output by 0.01 (a point of probability; for a translation's
    log-probability, 1% of its probability): the decision is spread over the heads."""
    if largest(r["effect"] for r in rows) >= 0.01:
        return ""
    return " No head alone moves it by 0.01: the output does not rest on one head; switch several off to see more."
