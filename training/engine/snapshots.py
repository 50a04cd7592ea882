"""Snapshots of the model during training, to see attention form: `python -m training ... --snapshots N`.

N snapshots on a roughly logarithmic schedule of steps: step 0 (the model before training: random weights, or the
public weights it fine-tunes), early steps, then spread to the last step (schedule()). Each is a normal model
folder, the task's own export (weights, config, tokenizer, preprocessing.json), in <out>/snapshots/step-<N>/, with
snapshot.json: the step, the epochs done, the mean training loss of the steps since the previous snapshot and the
validation scores at that step.

Atomic like the checkpoints (training/engine/checkpoint.py: atomic_folder), and resumable: the schedule depends only on
N and the run's planned steps, so a resumed run continues it; a snapshot taken after the last checkpoint is
written again, identically, when the resumed run passes its step. Loading one: pipelines/models/snapshots.py.
"""

import json
import time
from pathlib import Path

import torch

from training.engine.checkpoint import atomic_folder
from training.engine.device import to_device
from transformer.hub import SNAPSHOT_INFO, SNAPSHOTS, snapshot_revision


def schedule(total: int, n: int) -> list[int]:
    """The steps of n snapshots over a run of `total` steps: 0, then n - 1 steps spaced geometrically up to total
    (total ** (i / (n - 1))), each at least one after the one before; fewer when the run has fewer steps.
    n = 1 keeps the last step only; n = 0 none."""
    if n <= 0:
        return []
    if n == 1 or total <= 0:
        return [max(total, 0)]
    steps = [0]
    for i in range(1, n):
        steps.append(min(max(round(total ** (i / (n - 1))), steps[-1] + 1), total))
    return sorted(set(steps))


def snapshot_folder(out: Path, step: int) -> Path:
    """<out>/snapshots/step-<step>/"""
    return Path(out) / SNAPSHOTS / snapshot_revision(step)


def write_snapshot(task, model, out: Path, info: dict) -> Path:
    """The task's model folder with snapshot.json (`info`), swapped in atomically; returns the folder."""

    def write(folder: Path) -> None:
        task.export(model, folder)
        (folder / SNAPSHOT_INFO).write_text(json.dumps(info, indent=1) + "\n")

    folder = snapshot_folder(out, info["step"])
    folder.parent.mkdir(parents=True, exist_ok=True)
    atomic_folder(write, folder)
    return folder


def snapshot_scores(task, model) -> dict:
    """The validation scores a snapshot records: the task's snapshot_evaluate (cheaper) when it has one."""
    return getattr(task, "snapshot_evaluate", task.evaluate)(model)


@torch.no_grad()
def first_batch_loss(run) -> float:
    """Step 0's loss: the first training batch's, before any update, without dropout."""
    model, was = run.raw, run.raw.training
    model.eval()
    try:
        with run.precision.autocast():
            loss, _ = run.task.step(model, to_device(run.first_batches[0], run.acc.device))
    finally:
        model.train(was)
    return float(loss)


def take_snapshot(run) -> None:
    """Write the snapshot of run.state.step (the main process; every process waits for it) and log it.

    Whatever it draws from the random number generators is put back, so a run with snapshots trains exactly as
    one without them."""
    state, acc = run.state, run.acc
    t0 = time.time()
    if acc.is_main_process:
        devices = [run.acc.device.index or 0] if run.acc.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            if state.step == 0:
                loss = first_batch_loss(run)
            else:
                loss = state.snapshot_loss / max(state.snapshot_steps, 1)
            with run.precision.autocast():
                scores = snapshot_scores(run.task, run.raw)
            info = {
                "step": state.step,
                "epoch": round(state.step / run.steps_per_epoch, 4),
                "loss": loss,
                "metric": run.task.metric,
                **scores,
                "train_seconds": round(state.train_seconds, 1),
                "tokens": state.tokens,
            }
            write_snapshot(run.task, run.raw, run.out, info)
    acc.wait_for_everyone()
    state.snapshot_loss, state.snapshot_steps = 0.0, 0
    state.snapshot_seconds += time.time() - t0
    if acc.is_main_process:
        run.log({"event": "snapshot", **info, "seconds": round(time.time() - t0, 3)})
