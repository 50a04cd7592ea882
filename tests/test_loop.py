"""The training loop on a toy task: what checkpoint.pt holds, weight averaging, summary.json, old checkpoints."""

import json

import torch
from torch import nn

from training.loop import LoopConfig, LoopState, train


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
    assert set(ckpt) == {"model", "optimizer", "scheduler", "state", "rng"}
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
