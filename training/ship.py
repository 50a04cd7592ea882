"""`python -m training.ship sentiment|translation --run runs/X --to assets/X --test-data FILE`.

Copies a run's best model into the app's bundle as fp16 safetensors (each file must stay under 25 MB: a larger
model is split into shards with an index),
scores the *bundled* files once on the test split with the evaluation function, and writes metrics.json
with the exact training command, data, wall time, machine and scores. The bundle folder is replaced
atomically: a failure leaves the previous one as it was.

A run trained with --snapshots brings its snapshots along, in fp16 too (or with --snapshots-dtype int8, or
int8-delta: int8 differences from the bundled model's weights, transformer/quantize.py), in snapshots/step-<N>/
(each with its snapshot.json: the step's loss and validation score); `--snapshots K` keeps K of them (the first
and the last among them, the rest spread over the schedule), `--snapshot-steps A,B,..` those steps, `--snapshots
0` none; together they must stay within --snapshots-max-mb.
`from_pretrained(bundle, revision="step-<N>")` loads one (pipelines/models/snapshots.py).
"""

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from tokenizers import Tokenizer

from pipelines.models.folders import TOKENIZER, WEIGHTS
from pipelines.models.snapshots import read_infos
from training.engine.checkpoint import atomic_folder
from training.engine.loop import BEST, METRICS_LOG, SUMMARY, start_record
from training.release.storage import MAX_FILE_BYTES, STORAGES, write_weights
from training.tasks.table import TRAINING_TASKS
from transformer.hub import (
    SNAPSHOTS,
    WEIGHTS_INDEX,
    snapshot_revision,
    weight_files,
    weights_sha256,
)

MAX_SNAPSHOTS_MB = 40.0  # all the bundled snapshots together (MiB)


class ShipError(Exception):
    """Why the bundle was not written."""


def _steps(text: str) -> list[int]:
    try:
        steps = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"steps are whole numbers separated by commas, got {text!r}") from None
    if not steps or min(steps) < 0:
        raise argparse.ArgumentTypeError(f"give one or more steps of 0 or more, got {text!r}")
    return steps


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m training.ship", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("task", choices=list(TRAINING_TASKS))
    p.add_argument("--run", type=Path, required=True, help="training run folder (with best/ and metrics.jsonl)")
    p.add_argument("--to", type=Path, required=True, help="bundle folder, e.g. assets/sentiment")
    p.add_argument("--test-data", required=True, help="test split file for the one final score")
    p.add_argument("--data-description", default=None, help="what the model was trained on, for metrics.json")
    p.add_argument(
        "--max-file-mb",
        type=float,
        default=MAX_FILE_BYTES / 2**20,
        help="largest weight file in MiB, at most the bundle's 25; smaller gives more shards, e.g. 15 to bring a "
        "bundle back through a channel that limits files to 16 MiB (default %(default)s)",
    )
    p.add_argument("--display-name", default=None, help="what the app's model choice calls this model")
    p.add_argument(
        "--display-note",
        default=None,
        help="one sentence the app shows beside the model choice: what the model is (and what its heads do, measured)",
    )
    p.add_argument(
        "--snapshots",
        type=int,
        default=None,
        metavar="K",
        help="bundle K of the run's snapshots (--run/snapshots/, from --snapshots in training): the first, the last "
        "and the rest spread between them; 0 bundles none (default: all of them)",
    )
    p.add_argument(
        "--snapshot-steps",
        type=_steps,
        default=None,
        metavar="A,B,..",
        help="bundle the run's snapshots of these steps (instead of --snapshots K)",
    )
    p.add_argument(
        "--snapshots-dtype",
        choices=sorted(STORAGES),
        default="fp16",
        help="how the bundled snapshots' weights are stored: fp16; int8 with fp16 scales per 64 values (about "
        "half the size); or int8-delta, int8 differences from the bundled model (int8's size, embeddings "
        "included, and closer): check their attention with benchmarks/snapshot_quantization.py (default "
        "%(default)s)",
    )
    p.add_argument(
        "--snapshots-max-mb",
        type=float,
        default=MAX_SNAPSHOTS_MB,
        help="the bundled snapshots together may take at most this many MiB (default %(default)s)",
    )
    p.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="score another evaluation file too, reported under NAME (e.g. sst2_validation=.../validation.parquet)",
    )
    return p


def score_bundle(task: str, folder: Path, test_data: str) -> dict:
    """The one score on the test split, of the files in `folder` (the fp16 bundle, as the app loads it)."""
    from training.engine.data import DataError
    from training.evaluate import evaluate
    from transformer import CheckpointError

    t0 = time.time()
    try:
        scores = evaluate(task, str(folder), test_data)
    except (DataError, CheckpointError) as e:
        raise ShipError(str(e)) from e
    return {**scores, "data": test_data, "seconds": round(time.time() - t0, 1), "split": "test"}


def run_metrics(a, test: dict) -> dict:
    """metrics.json: how the run was made (metrics.jsonl, summary.json) and the test scores."""
    records = [json.loads(line) for line in (a.run / METRICS_LOG).read_text().splitlines()]
    start = start_record(a.run)  # the last start: a run folder used again by a new run holds two
    validations = [r for r in records if r["event"] == "validation"]
    summary = json.loads((a.run / SUMMARY).read_text()) if (a.run / SUMMARY).is_file() else {}
    return {
        "task": a.task,
        "command": start["command"],
        "data": a.data_description or start.get("data"),
        # the summary times its own invocation: a resumed run's last one is shorter than all of its training
        "wall_seconds": summary.get("wall_seconds") if not _resumed(summary) else None,
        **({"wall_seconds_last_invocation": summary.get("wall_seconds")} if _resumed(summary) else {}),
        "train_seconds": summary.get("train_seconds"),
        "machine": start.get("machine"),
        "device": start.get("device"),  # e.g. "cuda:0 (NVIDIA H100 80GB HBM3)" or "cpu"
        "precision": start.get("precision"),  # "bf16 autocast, TF32 matmuls" or "fp32"
        "processes": start.get("processes"),
        "tokens_per_s": summary.get("tokens_per_s"),  # training tokens per second, all processes
        "parameters": start.get("parameters"),
        "test": test,
        "validation": validations[summary.get("best_epoch", -1)] if validations else None,
        "training": summary,
        "weights": "fp16 safetensors (loaded into fp32)",
        # public weights the run started from (--init-from-bert): name, revision, sha256, license, credit
        **({"source_weights": start["source_weights"]} if start.get("source_weights") else {}),
        # the validation rows the run held out, where the command alone does not say (SST-2's --sst2-holdout)
        **({"held_out": start["held_out"]} if start.get("held_out") else {}),
        **{k: v for k, v in (("display_name", a.display_name), ("display_note", a.display_note)) if v},
    }


def _resumed(summary: dict) -> bool:
    """Whether the run was resumed: its last invocation's wall time is shorter than its training time."""
    wall, train = summary.get("wall_seconds"), summary.get("train_seconds")
    return isinstance(wall, (int, float)) and isinstance(train, (int, float)) and wall < train


CARRIED = ("calibration",)  # what a run's best/metrics.json holds that the bundle's metrics.json keeps


def _carried(fitted: dict) -> dict:
    return {k: fitted[k] for k in CARRIED if k in fitted}


def copy_model(src: Path, dst: Path, max_file_mb: float, dtype: str = "fp16", base: Path | None = None) -> None:
    """A model folder's files from src into dst (an existing folder), its weights in fp16 (or `dtype`, against the
    model folder `base` for int8-delta), its tokenizer.json without indentation (the same tokenizer, 60% smaller);
    ShipError for a file over max_file_mb."""
    weights = {f.name for f in weight_files(src)} | {WEIGHTS, WEIGHTS_INDEX}
    for f in src.iterdir():
        if f.name == TOKENIZER:
            (dst / f.name).write_text(Tokenizer.from_file(str(f)).to_str())
        elif f.is_file() and f.name not in weights | {"README.md"}:
            shutil.copy2(f, dst / f.name)
    limit = int(max_file_mb * 2**20)
    write_weights(src, dst, limit, dtype, base)
    too_big = [f.name for f in dst.iterdir() if f.is_file() and f.stat().st_size > limit]
    if too_big:
        raise ShipError(f"{too_big} over {max_file_mb:g} MiB")


def pick_evenly(steps: list[int], k: int | None) -> list[int]:
    """k of the steps (all for None): the first and the last, the rest at evenly spaced places in the list (over
    a logarithmic schedule, so still roughly logarithmic)."""
    if k is None or k >= len(steps):
        return list(steps)
    if k <= 0:
        return []
    if k == 1:
        return [steps[-1]]
    return sorted({steps[round(i * (len(steps) - 1) / (k - 1))] for i in range(k)})


def chosen_steps(a) -> list[int]:
    """The steps of the run's snapshots to bundle: --snapshot-steps, or --snapshots K of them (pick_evenly).
    ShipError for a step the run has no snapshot of."""
    have = [int(info["step"]) for info in read_infos(a.run)]
    if a.snapshot_steps is None:
        return pick_evenly(have, a.snapshots)
    missing = sorted(set(a.snapshot_steps) - set(have))
    if missing:
        raise ShipError(f"{a.run} has no snapshot of step {missing[0]} (it has {', '.join(map(str, have)) or 'none'})")
    return sorted(set(a.snapshot_steps))


def bundle_snapshots(a, folder: Path) -> list[int]:
    """Copy the chosen snapshots of the run into folder/snapshots/, in --snapshots-dtype; returns their steps.
    ShipError when together they take more than --snapshots-max-mb."""
    steps = chosen_steps(a)
    for step in steps:
        dst = folder / SNAPSHOTS / snapshot_revision(step)
        dst.mkdir(parents=True)
        copy_model(a.run / SNAPSHOTS / snapshot_revision(step), dst, a.max_file_mb, a.snapshots_dtype, folder)
    size = sum(f.stat().st_size for f in (folder / SNAPSHOTS).rglob("*") if f.is_file()) if steps else 0
    if size > a.snapshots_max_mb * 2**20:
        raise ShipError(
            f"{len(steps)} snapshots take {size / 2**20:.1f} MiB, over --snapshots-max-mb {a.snapshots_max_mb:g}: "
            f"bundle fewer (--snapshots K)"
        )
    return steps


def write_bundle(a, folder: Path) -> dict:
    """Fill `folder` with the fp16 model (and snapshots), score it and write metrics.json; returns the metrics."""
    copy_model(a.run / BEST, folder, a.max_file_mb)
    snapshots = bundle_snapshots(a, folder)
    # what training.calibrate recorded on the run's best model (its preprocessing.json is copied with it)
    best = a.run / BEST
    fitted = json.loads((best / "metrics.json").read_text()) if (best / "metrics.json").is_file() else {}
    metrics = {**run_metrics(a, score_bundle(a.task, folder, a.test_data)), **_carried(fitted)}
    for name, path in (item.split("=", 1) for item in a.also):
        metrics[name] = {**score_bundle(a.task, folder, path), "split": name}
    if TRAINING_TASKS[a.task].contrast_set:
        from training.contrast import PAIRS, evaluate_model

        metrics["contrast"] = {**evaluate_model(str(folder)), "data": str(PAIRS.relative_to(PAIRS.parents[1]))}
    if snapshots:
        metrics["snapshots"] = [snapshot_revision(step) for step in snapshots]
        metrics["snapshots_weights"] = STORAGES[a.snapshots_dtype].described
    metrics["weights_sha256"] = weights_sha256(folder)  # checked when the app loads the folder
    (folder / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    bad = [item for item in a.also if "=" not in item]
    if bad:
        print(f"error: --also takes NAME=FILE, got {bad[0]!r}", file=sys.stderr)
        return 2
    if not 0 < a.max_file_mb * 2**20 <= MAX_FILE_BYTES:
        print(f"error: --max-file-mb must be over 0 and at most {MAX_FILE_BYTES / 2**20:g}", file=sys.stderr)
        return 2
    best = a.run / BEST
    if not (best / WEIGHTS).is_file():
        print(f"error: {best} has no {WEIGHTS}: has the run finished an epoch?", file=sys.stderr)
        return 2
    written = {}
    try:
        atomic_folder(lambda folder: written.update(write_bundle(a, folder)), a.to)
    except ShipError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(written["test"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
