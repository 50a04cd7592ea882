"""The training loop on a toy task: what checkpoint.pt holds, weight averaging, summary.json, old checkpoints,
a non-finite loss, throughput, the device and precision it reports."""

import json

import pytest
import torch
from torch import nn

from training.engine.checkpoint import state_checksum
from training.engine.device import Precision
from training.engine.loop import LoopConfig, LoopState, NonFiniteLoss, train


class ToyTask:
    """Regression on fixed random data; each evaluation scores higher than the last (so the average wins)."""

    metric = "score"

    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(32, 4, generator=g), torch.randn(32, 2, generator=g)
        self.calls = 0

    def train_batches(self, epoch: int) -> list:
        return [(self.x[i : i + 8], self.y[i : i + 8]) for i in range(0, 32, 8)]

    def step(self, model, batch):
        x, y = batch
        return nn.functional.mse_loss(model(x), y), {"tokens": len(x), "count": len(x)}

    def evaluate(self, model) -> dict:
        self.calls += 1
        return {"score": float(self.calls)}

    def export(self, model, folder):
        torch.save(model.state_dict(), folder / "weights.pt")


def run(tmp_path, **kw):
    torch.manual_seed(0)
    model, task = nn.Linear(4, 2), ToyTask()
    summary = train(model, task, LoopConfig(out=tmp_path, epochs=3, **kw), {"command": "test"}, started=0.0)
    return model, summary


def test_checkpoint_holds_only_what_resume_needs(tmp_path):
    run(tmp_path, average_last=2)
    ckpt = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert set(ckpt) == {"model", "optimizer", "scheduler", "state", "rng", "checksum"}
    assert ckpt["checksum"] == state_checksum(ckpt)  # what was saved is what was hashed
    assert ckpt["state"]["recent"] == ["step-8.pt", "step-12.pt"]  # names of files, not weights
    assert sorted(p.name for p in (tmp_path / "recent").iterdir()) == ["step-12.pt", "step-8.pt"]
    assert LoopState(**ckpt["state"]).step == 12


def test_the_average_of_the_last_epochs_is_kept_when_it_scores_higher(tmp_path):
    model, summary = run(tmp_path, average_last=2)
    assert summary["averaged_epochs"] == 2 and summary["kept"] == "average"
    recent = [torch.load(tmp_path / "recent" / f"step-{s}.pt", weights_only=True) for s in (8, 12)]
    best = torch.load(tmp_path / "best" / "weights.pt", weights_only=True)
    for k, v in best.items():
        torch.testing.assert_close(v, (recent[0][k] + recent[1][k]) / 2)
    torch.testing.assert_close(model.weight.detach(), recent[1]["weight"])  # the model itself is restored


def test_summary_json_is_written_once_with_the_wall_time(tmp_path):
    _, summary = run(tmp_path)
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk == summary and on_disk["wall_seconds"] > 0 and on_disk["steps"] == 12
    events = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "end" and events[-1]["wall_seconds"] == on_disk["wall_seconds"]
    assert not (tmp_path / "recent").exists()


def test_state_from_an_older_checkpoint_drops_what_it_no_longer_keeps():
    old = {"epoch": 2, "batch": 0, "step": 24, "best": 0.5, "recent": [{"weight": torch.zeros(1)}], "gone": 1}
    state = LoopState.from_dict(old)
    assert (state.epoch, state.step, state.best, state.recent) == (2, 24, 0.5, [])


class DivergingTask(ToyTask):
    """The toy task whose loss turns NaN at its `nan_at`-th training step."""

    def __init__(self, nan_at: int):
        super().__init__()
        self.nan_at, self.steps = nan_at, 0

    def step(self, model, batch):
        loss, stats = super().step(model, batch)
        self.steps += 1
        return (loss * float("nan") if self.steps >= self.nan_at else loss), stats


def test_a_non_finite_loss_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path):
    torch.manual_seed(0)
    model, task = nn.Linear(4, 2), DivergingTask(nan_at=6)  # epoch 2, its second batch
    cfg = LoopConfig(out=tmp_path, epochs=3, save_every_min=0.0)  # a checkpoint after every step
    with pytest.raises(NonFiniteLoss) as err:
        train(model, task, cfg)
    message = str(err.value)
    assert "\n" not in message and "non-finite loss nan at epoch 2, step 6" in message
    assert "keeps the last good state (step 5)" in message and str(tmp_path / "checkpoint.pt") in message
    ckpt = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert ckpt["state"]["step"] == 5 and all(torch.isfinite(v).all() for v in ckpt["model"].values())
    assert all(torch.isfinite(p).all() for p in model.parameters())  # the NaN step never reached the weights
    best = torch.load(tmp_path / "best" / "weights.pt", weights_only=True)  # epoch 1's export, untouched
    assert all(torch.isfinite(v).all() for v in best.values())
    assert not (tmp_path / "summary.json").exists()


def test_a_nan_on_the_first_step_says_no_checkpoint_was_written(tmp_path):
    with pytest.raises(NonFiniteLoss, match="no checkpoint was written before it"):
        train(nn.Linear(4, 2), DivergingTask(nan_at=1), LoopConfig(out=tmp_path, epochs=1))
    assert not (tmp_path / "checkpoint.pt").exists()


def test_throughput_device_and_precision_are_logged(tmp_path):
    _, summary = run(tmp_path)
    assert summary["tokens"] == 3 * 32  # the toy task counts 8 "tokens" a batch, 4 batches, 3 epochs
    assert summary["tokens_per_s"] > 0
    assert (summary["device"], summary["precision"], summary["processes"]) == ("cpu", "fp32", 1)
    events = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert events[0]["device"] == "cpu" and events[0]["precision"] == "fp32"
    assert all(e["tokens_per_s"] > 0 for e in events if e["event"] == "validation")


def test_precision_is_bf16_autocast_on_cuda_and_fp32_on_a_cpu(monkeypatch):
    cpu = Precision.for_device(torch.device("cpu"))
    assert cpu.name == "fp32" and cpu.describe() == "fp32"
    with cpu.autocast():
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32
    with pytest.raises(ValueError, match="CUDA"):
        Precision.for_device(torch.device("cpu"), "bf16")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    gpu = Precision.for_device(torch.device("cuda", 0))
    assert gpu.name == "bf16" and gpu.describe() == "bf16 autocast, TF32 matmuls"
    assert Precision.for_device(torch.device("cuda", 0), "fp32").name == "fp32"
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        cpu.enable_tf32()
        assert not torch.backends.cuda.matmul.allow_tf32  # a CPU run leaves the flags alone
        gpu.enable_tf32()
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
