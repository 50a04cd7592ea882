"""Heads over a data set: the head table (pipelines.attention.heads) measured on many inputs, each number's mean and
standard deviation per head, with n; the bundled sets it is measured on (100 short lines a task, under
pipelines/attention/sets/, each file's first line naming its source) and the standard induction set (random tokens,
repeated: Olsson et al. 2022, TransformerLens's recipe)."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from pipelines.attention.head_roles import duplicate_share, induction_share, repeated_random_ids
from pipelines.attention.head_stats import stats_rows
from pipelines.hosting.microbatch import pause_point

SETS_DIR = Path(__file__).parent / "sets"
SETS = {  # name -> its file: the first 100 sentences of SST-2's validation split, ...
    "sst2": "sst2.txt",
    "multi30k": "multi30k.txt",
    "imdb": "imdb.txt",
}
KEYS = ("kind", "layer", "head")


def bundled_set(name: str) -> list[str]:
    """The lines of a bundled set (its source comment left out)."""
    if name not in SETS:
        raise ValueError(f"no bundled set {name!r}: {', '.join(SETS)}")
    lines = (SETS_DIR / SETS[name]).read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


@dataclass(frozen=True)
class InductionSet:
    """`n` sequences of <s> + `length` random tokens repeated once (seeded): the standard induction score's input.
    Passed as `texts` to a language model's head_table_over."""

    n: int = 20
    length: int = 50
    seed: int = 0
    name: str = "induction"

    def ids(self, vocab_size: int, bos_id: int, max_len: int) -> torch.Tensor:
        """(n, 1 + 2 length') long, length' = length cut to fit max_len."""
        return repeated_random_ids(vocab_size, self.fitted(max_len), self.n, self.seed, bos_id)

    def fitted(self, max_len: int) -> int:
        return min(self.length, (max_len - 1) // 2)


@dataclass(frozen=True)
class HeadTableOverSet:
    """One row per head: kind, layer, head, then `<column>_mean`, `<column>_std` and `<column>_n` (the inputs on which
    it is defined) for every column of the head table (None where a number is undefined on every input)."""

    rows: list[dict]
    columns: tuple[str, ...]  # the head table's numeric columns: "effect", "entropy", ...
    n: int  # the inputs measured
    asked: int  # the inputs given
    stopped: bool = False  # stop() ended it before every input was measured
    skipped: int = 0  # inputs that could not be measured (no tokens): their reasons are not kept
    name: str = ""  # the set's name, where it is a bundled one

    def row(self, kind: str, layer: int, head: int) -> dict:
        return next(r for r in self.rows if (r["kind"], r["layer"], r["head"]) == (kind, layer, head))


def summarize(tables: list[list[dict]]) -> tuple[list[dict], tuple[str, ...]]:
    """Head tables of many inputs (the same heads in the same order) -> (rows, columns): each column's mean, standard
    deviation (population) and n per head."""
    if not tables:
        return [], ()
    columns = tuple(c for c in tables[0][0] if c not in KEYS and c != "name")
    rows = []
    for per_input in zip(*tables):  # one head across the inputs
        row = {k: per_input[0][k] for k in KEYS}
        for c in columns:
            values = np.array([r[c] for r in per_input if r.get(c) is not None], dtype=np.float64)
            values = values[np.isfinite(values)]
            row[f"{c}_mean"] = float(values.mean()) if len(values) else None
            row[f"{c}_std"] = float(values.std()) if len(values) else None
            row[f"{c}_n"] = len(values)
        rows.append(row)
    return rows, columns


def measure(table_of: Callable, inputs: Sequence, progress=None, stop=None, name: str = "") -> HeadTableOverSet:
    """table_of(input) -> one input's head table, over every input in turn: progress(done, n) after each, stop()
    checked and a pause point (pipelines.hosting.microbatch) before each; an input table_of rejects (ValueError: no
    tokens) is skipped and counted."""
    tables, skipped, stopped = [], 0, False
    for i, item in enumerate(inputs):
        pause_point()
        if stop is not None and stop():
            stopped = True
            break
        try:
            tables.append(table_of(item))
        except ValueError:
            skipped += 1
        if progress is not None:
            progress(i + 1, len(inputs))
    rows, columns = summarize(tables)
    return HeadTableOverSet(rows, columns, len(tables), len(inputs), stopped, skipped, name)


@torch.no_grad()
def induction_table(model, ids: torch.Tensor, n: int) -> list[dict]:
    """The head table's attention columns on one sequence ids (T,) = <s> + r + r (r: n tokens) of a CausalLM, with
    each head's induction and duplicate-token shares; no effect (a random sequence has no answer to measure it on)."""
    maps = [a[0].float().cpu().numpy() for a in model(ids[None], need_weights=True).attentions]  # (H, T, T) each
    rows = stats_rows("causal", maps, end_key=0, punct=np.zeros(ids.numel(), dtype=bool))
    shares = {"induction": [induction_share(m, n) for m in maps], "duplicate": [duplicate_share(m, ids) for m in maps]}
    for row in rows:
        row.update({k: float(v[row["layer"]][row["head"]]) for k, v in shares.items()})
    return rows
