"""The rows held out by the runs behind a trained model, and refusing to train on from it with others.

A run that goes on from a model (--continue-from), starts from a pre-trained encoder (--init-from) or resumes
(--resume) must hold out what every run before it held out: else reviews and sentences it was validated (and
calibrated) on are trained on. Which rows a run holds out follows from its --seed, its --val-size (IMDB) and its
SST-2 hold-out (--sst2-holdout, --sst2-val-size; recorded as `held_out` since that option).

Each run records its command (metrics.json of a shipped folder, the start record of metrics.jsonl beside a run's
best/ folder), and a --continue-from run records each run behind it (source_weights.continued_from). Commands
are read back with the training parser itself, so `--seed=3` and abbreviations such as `--sst2-val 500` read as
they ran.
"""

import contextlib
import io
import json
import shlex
from pathlib import Path

from training.engine.data import DataError
from training.engine.loop import start_record

SST2_VAL_SIZE = {"sentences": 1000, "phrases": 2000}  # --sst2-val-size when not given


def sst2_holdout(args) -> dict:
    """What SST-2 holds out under these arguments: {"holdout": "sentences" | "phrases", "size": n}."""
    holdout = getattr(args, "sst2_holdout", "phrases")
    size = getattr(args, "sst2_val_size", None)
    return {"holdout": holdout, "size": SST2_VAL_SIZE[holdout] if size is None else size}


def held_out_rows(args) -> dict:
    """What decides the rows a sentiment or pre-training run holds out: {"seed", "imdb_val_size", "sst2", "limit"},
    sst2 None when the run reads no SST-2; limit (--limit) only where the task cuts the data before holding rows out
    (sentiment; pre-training cuts after: applies_limit)."""
    cuts_first = getattr(args, "limit", None) and not getattr(args, "applies_limit", False)
    return {
        "seed": args.seed,
        "imdb_val_size": getattr(args, "val_size", None),
        "sst2": sst2_holdout(args) if getattr(args, "sst2_dir", None) else None,
        "limit": args.limit if cuts_first else None,
    }


def recorded_args(command: str | None):
    """The arguments of a recorded `python -m training TASK ...` command, parsed as it ran; None if it is not one
    (or no longer parses)."""
    from training.arguments import build_parser

    try:
        words = shlex.split(command or "")
    except ValueError:  # an unbalanced quote
        return None
    if words[:3] != ["python", "-m", "training"] or len(words) < 4:
        return None
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # --out is required to run, not to read: the recorded one wins
            args, _ = build_parser().parse_known_args([words[3], "--out", "", *words[4:]])
    except SystemExit:
        return None
    return args


def run_record(folder: Path) -> dict:
    """What a model folder records of the run that made it: its metrics.json where that names the command (a
    shipped folder; training.calibrate leaves one with its calibration alone in a run's best/), else the start
    record of the run's metrics.jsonl beside it (a run's best/ folder); {} when neither is there."""
    metrics = folder / "metrics.json"
    record = json.loads(metrics.read_text()) if metrics.is_file() else {}
    return record if record.get("command") else start_record(folder.parent)


def lineage(record: dict) -> list[dict]:
    """The record and those of the runs behind it, newest first: the runs it went on from
    (source_weights.continued_from, each with its "command" and "held_out") and, where a recorded --init-from
    folder is still there, the pre-training run behind that encoder (it read the same data, less its held-out rows)."""
    out, todo, seen = [], [record], set()
    while todo:
        run = todo.pop(0)
        out.append(run)
        if behind := (run.get("source_weights") or {}).get("continued_from"):
            todo.append(behind)
        encoder = getattr(recorded_args(run.get("command")), "init_from", None)
        if encoder and Path(encoder).is_dir() and Path(encoder).resolve() not in seen:
            seen.add(Path(encoder).resolve())
            todo.append(run_record(Path(encoder)))
    return out


def recorded_rows(record: dict, what: str) -> dict | None:
    """held_out_rows of a recorded run, read from its command and its held_out record (a run from before that
    record held out --sst2-val-size random rows); None where nothing is recorded. A command that cannot be read is
    refused: what it held out is not known."""
    if not record.get("command"):
        return None
    args = recorded_args(record["command"])
    if args is None:
        raise DataError(
            f"{what}: cannot read which rows the run held out from its command ({record['command']}); check its "
            "--seed, --val-size and SST-2 hold-out by hand, and give its metrics.json a command this version reads"
        )
    rows = held_out_rows(args)
    if rows["sst2"] is not None and (record.get("held_out") or {}).get("sst2"):
        rows["sst2"] = record["held_out"]["sst2"]
    return rows


# Each entry of held_out_rows, in the order they are reported, with the options that hold out as that run did.
# None under "imdb_val_size" or "sst2": that run did not read the data set, so it held none of it out.
FIXES = {
    "seed": lambda v: f"--seed {v}",
    "imdb_val_size": lambda v: f"--val-size {v}",
    "limit": lambda v: f"--limit {v}" if v else "no --limit",  # a sentiment run cut to --limit rows held out others
    "sst2": lambda v: f"--sst2-holdout {v['holdout']} --sst2-val-size {v['size']}",
}
READ_OR_NOT = {"imdb_val_size", "sst2"}


def _mismatch(theirs: dict, ours: dict) -> str | None:
    """The options that hold out what `theirs` held out, for the first entry that differs from `ours`; None if
    none does."""
    for key, fix in FIXES.items():
        if key in READ_OR_NOT and None in (theirs[key], ours[key]):
            continue
        if theirs[key] != ours[key]:
            return fix(theirs[key])
    return None


def check_held_out(record: dict, args, what: str) -> None:
    """Refuse to train with `args` on from the run(s) of `record` (`what` names them in the message) if any of
    them held out other rows."""
    ours = held_out_rows(args)
    for run in lineage(record):
        theirs = recorded_rows(run, what)
        if theirs is None:
            continue
        if fix := _mismatch(theirs, ours):
            raise DataError(
                f"{what} held out other rows ({run.get('command')}): go on with {fix}, or rows it held out for "
                "validation are trained on"
            )


def check_runs_behind(args) -> None:
    """The checks of --continue-from, --init-from and --resume, where given."""
    for option in ("continue_from", "init_from"):
        if folder := getattr(args, option, None):
            check_held_out(run_record(Path(folder)), args, f"{folder} (--{option.replace('_', '-')})")
    if getattr(args, "resume", False) and (record := start_record(Path(args.out))):
        check_held_out(record, args, f"the run in {args.out} (--resume)")
