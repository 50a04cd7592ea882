"""The head table over a data set: the pipeline's HeadTableOverSet (each column's mean and standard deviation per
head over many inputs, n) as the page shows it, 'mean ± sd' in each cell coloured by the mean as the one-input table
is, its status line and its CSV download; and what each choice of the switch measures. "over the set" measures the
attention columns alone: the effect (each head switched off on each input, one run a head) is most of the cost (about
16 s an input on SmolLM2), so it is a choice of its own, its cost estimated first (the status of a run without it says
n inputs x this input's measured seconds)."""

import csv
import io
import math
from dataclasses import dataclass

from pipelines.attention import over_set as sets
from pipelines.attention.over_set import HeadTableOverSet, InductionSet

from ..numbers import number
from ..tasks import TASKS
from .names import head_value
from .table import COLUMNS, HeadTable, head_table_view

THIS, OVER, EFFECTS = "this input", "over the set", "over the set, with effects"
INDUCTION = "over random tokens written twice"  # the standard induction score (a causal model's tab)
CHOICES = (THIS, OVER, EFFECTS)


def switch_choices(task: str) -> list[str]:
    """The head table's switch on the task's tab: the induction set besides where the tab offers it."""
    return [*CHOICES, *([INDUCTION] if TASKS[task].induction_set else [])]


@dataclass(frozen=True)
class OverSet:
    """What a choice measures: the inputs (a bundled set's texts or an InductionSet), their name and unit in words,
    and whether each head is switched off on each of them (the effect column)."""

    inputs: object
    name: str
    unit: str
    effects: bool


def chosen_set(task: str, choice: str) -> OverSet | None:
    """The inputs of a choice ("over the set" and its effects: the task's bundled set; INDUCTION: random tokens
    written twice, no effect, as a random sequence has no answer to measure it on); None where the set is missing."""
    if choice == INDUCTION:
        s = InductionSet(name="random tokens written twice (the standard induction score)")  # its result's name
        return OverSet(s, s.name, "sequences", False)
    found = bundled_set(task)
    if found is None:
        return None
    return OverSet(found[0], found[1], TASKS[task].units, choice == EFFECTS)


def effects_note(result: HeadTableOverSet, chosen: OverSet, seconds: float | None) -> str:
    """Where the effect column was left out of a bundled set: what measuring it would cost, estimated as n inputs x
    the seconds this input's head table took (every head switched off once), before anything runs."""
    if "effect" in result.columns or isinstance(chosen.inputs, InductionSet):
        return ""
    n = result.asked
    if seconds is None:
        cost = f"about {n} times one input's head table (run the model first for a measured estimate)"
    else:
        cost = f"about {n} inputs × {seconds:.1f} s (this input's head table, measured) ≈ {_duration(n * seconds)}"
    return (f" **Effect** is left out: switching each head off on every input costs {cost}. Choose *{EFFECTS}* to "
            f"measure it.")  # fmt: skip


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


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
