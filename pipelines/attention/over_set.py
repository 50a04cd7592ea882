"""Heads over a data set: the head table (pipelines.attention.heads) measured on many inputs, each number's mean and
standard deviation per head, with n; and the bundled sets it is measured on (a hundred short lines a task, under
pipelines/attention/sets/, each file saying its source) plus the standard induction set (random tokens repeated)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class HeadTableOverSet:
    """One row per head: kind, layer, head, then `<column>_mean` and `<column>_std` for every column of the head
    table (None where a number is undefined on every input); n inputs measured (fewer than asked when stopped)."""

    rows: list[dict]
    columns: tuple[str, ...]  # the head table's numeric columns: "effect", "entropy", ...
    n: int
    asked: int  # how many inputs were given
    stopped: bool = False  # stop() ended it before every input was measured
    name: str = ""  # the set's name, where it is a bundled one
