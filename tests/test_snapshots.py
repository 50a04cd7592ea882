"""Snapshots during training (training/snapshots.py): the schedule, what a snapshot holds, that taking them leaves
training unchanged, resuming, and loading one by its revision (pipelines/snapshots.py)."""

import json

import pytest
import torch
from test_training import imdb_dir as imdb_dir  # noqa: F401  (fixtures)
from test_training import multi30k_dir as multi30k_dir  # noqa: F401
from torch import nn

from training.loop import LoopConfig, train
from training.snapshots import schedule, snapshot_folder


def test_schedule_is_step_0_then_roughly_logarithmic_to_the_end():
    assert schedule(3696, 8) == [0, 3, 10, 34, 109, 353, 1143, 3696]  # the shipped translator's 3,696 steps
    steps = schedule(10_000, 6)
    assert steps[0] == 0 and steps[-1] == 10_000 and len(steps) == 6
    ratios = [b / a for a, b in zip(steps[1:], steps[2:])]
    assert max(ratios) / min(ratios) < 1.1  # each gap a constant factor wider than the one before
    assert schedule(3, 8) == [0, 1, 2, 3]  # a short run: every step, no duplicates
    assert schedule(12, 1) == [12] and schedule(12, 0) == []


class DropoutToyTask:
    """Regression through dropout (so training draws random numbers), with an evaluation that draws some too: a
    snapshot that did not put the generator back would change the training that follows it."""

    metric = "score"

    def __init__(self, kill_at: int | None = None):
        g = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(32, 4, generator=g), torch.randn(32, 2, generator=g)
        self.calls, self.kill_at = 0, kill_at

    def train_batches(self, epoch: int) -> list:
        return [(self.x[i : i + 8], self.y[i : i + 8]) for i in range(0, 32, 8)]

    def step(self, model, batch):
        self.calls += 1
        if model.training and self.calls == self.kill_at:
            raise KeyboardInterrupt  # as a kill would stop the run here
        x, y = batch
        return nn.functional.mse_loss(model(x), y), {"tokens": len(x), "count": len(x)}

    def evaluate(self, model) -> dict:
        return {"score": float(torch.rand(()))}  # draws from the global generator

    def export(self, model, folder):
        torch.save(model.state_dict(), folder / "weights.pt")


def toy_run(out, task=None, **kw) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Dropout(0.3), nn.Linear(4, 2))
    cfg = LoopConfig(out=out, epochs=3, patience=99, log_every=1, **kw)
    train(model, task or DropoutToyTask(), cfg, {"command": "test"}, started=0.0)
    return model


def snapshot_weights(out, step: int) -> dict:
    return torch.load(snapshot_folder(out, step) / "weights.pt", weights_only=True)


def test_snapshots_hold_the_model_at_their_step_with_its_loss_and_score(tmp_path):
    toy_run(tmp_path / "snap", snapshots=4)  # 12 steps: snapshots at 0, 2, 5 and 12
    found = sorted(int(p.name.split("-")[1]) for p in (tmp_path / "snap" / "snapshots").iterdir())
    assert found == schedule(12, 4) == [0, 2, 5, 12]
    for step in (2, 5):  # the weights after exactly `step` updates: a run stopped there ends with them
        toy_run(tmp_path / f"upto{step}", max_steps=step)
        final = torch.load(tmp_path / f"upto{step}" / "checkpoint.pt", weights_only=True)["model"]
        for k, v in snapshot_weights(tmp_path / "snap", step).items():
            torch.testing.assert_close(v, final[k])
    log = [json.loads(line) for line in (tmp_path / "snap" / "metrics.jsonl").read_text().splitlines()]
    losses = {r["step"]: r["loss"] for r in log if r["event"] == "train"}  # log_every=1: each step's loss
    info = json.loads((snapshot_folder(tmp_path / "snap", 5) / "snapshot.json").read_text())
    assert info["step"] == 5 and info["metric"] == "score" and 0 <= info["score"] < 1
    assert info["loss"] == pytest.approx((losses[3] + losses[4] + losses[5]) / 3)  # the steps since the last one
    assert info["epoch"] == pytest.approx(5 / 4)
    assert [r["step"] for r in log if r["event"] == "snapshot"] == [0, 2, 5, 12]
    summary = json.loads((tmp_path / "snap" / "summary.json").read_text())
    assert summary["snapshot_seconds"] >= 0 and summary["train_seconds"] >= 0  # the cost, beside the time trained


def test_snapshots_leave_training_unchanged(tmp_path):
    plain, snapped = toy_run(tmp_path / "plain"), toy_run(tmp_path / "snap", snapshots=5)
    for a, b in zip(plain.parameters(), snapped.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert not (tmp_path / "plain" / "snapshots").exists()


def test_a_killed_run_resumed_keeps_its_snapshots_and_continues_the_schedule(tmp_path):
    straight = tmp_path / "straight"
    toy_run(straight, snapshots=4)
    cut = tmp_path / "cut"
    with pytest.raises(KeyboardInterrupt):  # killed in step 4, after the checkpoint of step 3
        toy_run(cut, DropoutToyTask(kill_at=4), snapshots=4, save_every_min=0)
    assert sorted(p.name for p in (cut / "snapshots").iterdir()) == ["step-0", "step-2"]
    toy_run(cut, snapshots=4, resume=True)
    assert sorted(p.name for p in (cut / "snapshots").iterdir()) == ["step-0", "step-12", "step-2", "step-5"]
    for step in (0, 2, 5, 12):
        for k, v in snapshot_weights(straight, step).items():
            torch.testing.assert_close(snapshot_weights(cut, step)[k], v)
        info = [json.loads((snapshot_folder(out, step) / "snapshot.json").read_text()) for out in (straight, cut)]
        assert info[0]["loss"] == pytest.approx(info[1]["loss"])  # the loss sum since the last one was resumed too


def test_a_run_stopped_early_ends_with_a_snapshot_of_its_last_step(tmp_path):
    toy_run(tmp_path, snapshots=4, max_minutes=1e-9)  # the time budget stops it after step 1
    assert sorted(p.name for p in (tmp_path / "snapshots").iterdir()) == ["step-0", "step-1"]


@pytest.mark.parametrize("task", ["sentiment", "translation", "pretrain"])
def test_every_task_writes_snapshots_its_pipeline_loads(task, imdb_dir, multi30k_dir, tmp_path):
    from test_training import TINY_PRETRAIN, TINY_SENTIMENT, TINY_TRANSLATION

    from pipelines import SentimentPipeline, TranslationPipeline
    from pipelines.snapshots import list_snapshots
    from training.cli import main as train_main

    tiny = {"sentiment": TINY_SENTIMENT, "translation": TINY_TRANSLATION, "pretrain": TINY_PRETRAIN}[task]
    data = multi30k_dir if task == "translation" else imdb_dir
    out = tmp_path / "run"
    assert (
        train_main([task, "--data-dir", str(data), "--out", str(out), *tiny, "--epochs", "2", "--snapshots", "3"]) == 0
    )
    total = json.loads((out / "summary.json").read_text())["steps"]
    snaps = list_snapshots(out)  # the run folder holds snapshots/ as a model folder does
    assert [s.step for s in snaps] == schedule(total, 3) and snaps[0].revision == "step-0"
    assert all(s.metric and s.score is not None and s.loss > 0 for s in snaps)
    assert {p.name for p in (out / "snapshots").iterdir()} == {s.revision for s in snaps}  # nothing else there
    cls = TranslationPipeline if task == "translation" else SentimentPipeline
    pipe = cls.from_pretrained(str(out / "snapshots" / snaps[1].revision))
    if task == "translation":
        assert len(pipe("Zwei Hunde spielen im Schnee.").cross_attentions) == 1  # one decoder layer
    else:
        assert pipe("Fine.").label in pipe.labels


@pytest.mark.slow
def test_snapshots_under_two_processes(multi30k_dir, tmp_path):
    """The main process writes them; the other waits, and neither takes a step more or less."""
    from test_training import TINY_TRANSLATION, launch_two_processes

    out = tmp_path / "ddp"
    args = ["translation", "--data-dir", str(multi30k_dir), "--out", str(out), "--epochs", "2", *TINY_TRANSLATION]
    proc = launch_two_processes([*args, "--snapshots", "3"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["steps"] == 4  # 2 steps an epoch on each process
    assert sorted(p.name for p in (out / "snapshots").iterdir()) == ["step-0", "step-2", "step-4"]
    assert all((out / "snapshots" / f"step-{s}" / "snapshot.json").is_file() for s in (0, 2, 4))
