"""The head table over a data set: the pipeline's HeadTableOverSet (each column's mean and standard deviation per
head over many inputs, n) as the page shows it, 'mean ± sd' in each cell coloured by the mean as the one-input table
is, its status line and its CSV download."""

import csv
import io
import math

from pipelines.attention import over_set as sets
from pipelines.attention.over_set import HeadTableOverSet

from ..numbers import number
from ..tasks import TASKS
from .names import head_value
from .table import COLUMNS, HeadTable, head_table_view

CHOICES = ("this input", "over the set")


def bundled_set(task: str) -> tuple[list[str], str] | None:
    """(texts, name in words) of the task's bundled set (viz.tasks: TaskUI.head_set; pipelines.attention.over_set),
    None where its file is missing."""
    name, words = TASKS[task].head_set
    try:
        return sets.bundled_set(name), words
    except (FileNotFoundError, ValueError):
        return None


def means(result: HeadTableOverSet) -> list[dict]:
    """The rows as the one-input head table's rows (each column its mean): what colours the cells and sorts them."""
    return [{"kind": r["kind"], "layer": r["layer"], "head": r["head"],
             **{c: r.get(f"{c}_mean") for c in result.columns}} for r in result.rows]  # fmt: skip


def _sd(value) -> str:
    return "" if value is None or not math.isfinite(float(value)) else f" ± {number(value)}"


def over_set_table(result: HeadTableOverSet) -> HeadTable:
    """The head table with 'mean ± sd' in each numeric cell (the colours of the means), one row per head."""
    table = head_table_view(means(result))
    keys = {header: key for key, header in COLUMNS.items()}
    rows = []
    for r, cells in zip(result.rows, table.rows, strict=True):
        row = []
        for header, (text, css) in zip(table.columns, cells, strict=True):
            key = keys[header]
            row.append((text + _sd(r.get(f"{key}_std")), css) if key in result.columns else (text, css))
        rows.append(row)
    ids = [head_value(r["kind"], r["layer"], r["head"]) for r in result.rows]
    return HeadTable(table.columns, rows, ids)


def over_set_status(result: HeadTableOverSet, unit: str) -> str:
    """The status line: n measured of how many asked, on which set, stopped or not."""
    name = f" of the set *{result.name}*" if result.name else ""
    stopped = " Stopped: the mean is over those measured." if result.stopped else ""
    if result.skipped:
        stopped += f" {result.skipped} left out: this model could not read them (too long for it, or no tokens)."
    return (f"**Over the set**: n = {result.n} of {result.asked} {unit}{name}; each cell is the mean ± the standard "
            f"deviation over them.{stopped} Sort by a header; download the numbers as CSV.")  # fmt: skip


def over_set_csv(result: HeadTableOverSet) -> str:
    """The numbers as CSV: kind, layer, head (from 0), each column's mean and sd, n."""
    fields = ["kind", "layer", "head", *[f"{c}_{s}" for c in result.columns for s in ("mean", "std")], "n"]
    out = io.StringIO()
    writer = csv.DictWriter(out, fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for r in result.rows:
        writer.writerow({**{k: ("" if r.get(k) is None else r.get(k)) for k in fields[:-1]}, "n": result.n})
    return out.getvalue()
