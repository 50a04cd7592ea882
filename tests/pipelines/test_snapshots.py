"""Snapshots during training (training/engine/snapshots.py): the schedule, what a snapshot holds, that taking them
leaves training unchanged, resuming, and loading one by its revision (pipelines/models/snapshots.py)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from training.engine.loop import LoopConfig, train
from training.engine.snapshots import schedule, snapshot_folder

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


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
    from training_runs import TINY_PRETRAIN, TINY_SENTIMENT, TINY_TRANSLATION

    from pipelines import SentimentPipeline, TranslationPipeline
    from pipelines.models.snapshots import list_snapshots
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
    from training_runs import TINY_TRANSLATION, launch_two_processes

    out = tmp_path / "ddp"
    args = ["translation", "--data-dir", str(multi30k_dir), "--out", str(out), "--epochs", "2", *TINY_TRANSLATION]
    proc = launch_two_processes([*args, "--snapshots", "3"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["steps"] == 4  # 2 steps an epoch on each process
    assert sorted(p.name for p in (out / "snapshots").iterdir()) == ["step-0", "step-2", "step-4"]
    assert all((out / "snapshots" / f"step-{s}" / "snapshot.json").is_file() for s in (0, 2, 4))


# --- loading a snapshot by its revision ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def sentiment_with_snapshots(sentiment_dir, tmp_path_factory):
    import shutil

    from tiny_models import add_snapshots

    from transformer import TransformerClassifier

    folder = tmp_path_factory.mktemp("snap") / "sentiment"
    shutil.copytree(sentiment_dir, folder)
    return add_snapshots(folder, TransformerClassifier, [0, 3, 40])


@pytest.fixture(scope="module")
def translation_with_snapshots(translation_dir, tmp_path_factory):
    import shutil

    from tiny_models import add_snapshots

    from transformer import Seq2SeqTransformer

    folder = tmp_path_factory.mktemp("snap") / "translation"
    shutil.copytree(translation_dir, folder)
    return add_snapshots(folder, Seq2SeqTransformer, [0, 5, 60], metric="bleu")


def test_a_local_revision_gives_that_snapshots_outputs(sentiment_with_snapshots):
    from pipelines import SentimentPipeline

    reviews = ["A wonderful, moving film.", "Dull and far too long. I left early."]
    main = SentimentPipeline.from_pretrained(str(sentiment_with_snapshots))
    for step in (0, 3, 40):
        snap = SentimentPipeline.from_pretrained(str(sentiment_with_snapshots), revision=f"step-{step}")
        alone = SentimentPipeline.from_pretrained(str(sentiment_with_snapshots / "snapshots" / f"step-{step}"))
        assert snap.predict(reviews) == alone.predict(reviews) != main.predict(reviews)
        for a, b in zip(snap(reviews[0]).attentions, alone(reviews[0]).attentions):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    same = SentimentPipeline.from_pretrained(str(sentiment_with_snapshots), revision="main")
    assert same.predict(reviews) == main.predict(reviews)


def test_a_local_revision_of_the_translator(translation_with_snapshots):
    from pipelines import TranslationPipeline

    german = "Zwei Hunde spielen im Schnee."
    main = TranslationPipeline.from_pretrained(str(translation_with_snapshots))(german)
    snap = TranslationPipeline.from_pretrained(str(translation_with_snapshots), revision="step-5")(german)
    alone = TranslationPipeline.from_pretrained(str(translation_with_snapshots / "snapshots" / "step-5"))(german)
    assert snap.translation == alone.translation
    torch.testing.assert_close(snap.cross_attentions[0], alone.cross_attentions[0], rtol=0, atol=0)
    assert not torch.equal(snap.encoder_attentions[0], main.encoder_attentions[0])


def test_unknown_revisions_are_refused_with_what_there_is(sentiment_with_snapshots, sentiment_dir):
    from pipelines import SentimentPipeline
    from transformer import CheckpointError

    with pytest.raises(CheckpointError, match=r"no snapshot 'step-7' \(it has step-0, step-3, step-40\)"):
        SentimentPipeline.from_pretrained(str(sentiment_with_snapshots), revision="step-7")
    with pytest.raises(CheckpointError, match="it has no snapshots/ folder"):
        SentimentPipeline.from_pretrained(str(sentiment_dir), revision="step-0")
    for bad in ("../sentiment", "v1.0", "step-1/../../x"):
        with pytest.raises(CheckpointError, match="is not 'main' or 'step-<N>'"):
            SentimentPipeline.from_pretrained(str(sentiment_with_snapshots), revision=bad)


def test_list_snapshots_of_a_folder(sentiment_with_snapshots, sentiment_dir, tmp_path):
    from pipelines.models.snapshots import Snapshot, list_snapshots

    snaps = list_snapshots(sentiment_with_snapshots)
    assert [s.revision for s in snaps] == ["step-0", "step-3", "step-40"]  # by step, not by name
    assert snaps[1] == Snapshot("step-3", 3, 0.3, 1.0, "accuracy", 0.51)
    assert list_snapshots(sentiment_dir) == []
    (sentiment_with_snapshots / "snapshots" / "step-9.tmp").mkdir()  # a snapshot being written: not listed
    assert len(list_snapshots(sentiment_with_snapshots)) == 3
    (sentiment_with_snapshots / "snapshots" / "step-9.tmp").rmdir()


def test_a_hub_revision_goes_to_the_download(sentiment_with_snapshots, monkeypatch):
    """For a repo id, revision="step-<N>" is the branch snapshot_download fetches (here a fake that returns the
    snapshot's folder: nothing touches the network)."""
    import huggingface_hub

    from pipelines import SentimentPipeline

    asked = []

    def fake_download(repo_id, revision=None, **kwargs):
        asked.append((repo_id, revision))
        sub = f"snapshots/{revision}" if revision else ""
        return str(sentiment_with_snapshots / sub)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    pipe = SentimentPipeline.from_pretrained("alice/attention-demo-sentiment", revision="step-3")
    assert asked == [("alice/attention-demo-sentiment", "step-3")] and pipe.revision == "step-3"
    alone = SentimentPipeline.from_pretrained(str(sentiment_with_snapshots / "snapshots" / "step-3"))
    assert pipe.predict(["Fine."]) == alone.predict(["Fine."])


def test_a_hub_repo_offline_says_so(monkeypatch):
    from pipelines import SentimentPipeline
    from pipelines.models.snapshots import list_snapshots
    from transformer import CheckpointError

    with pytest.raises(CheckpointError, match="offline"):
        SentimentPipeline.from_pretrained("alice/not-cached-here", revision="step-3")
    with pytest.raises(CheckpointError, match="offline"):
        list_snapshots("alice/not-cached-here")


# --- bundling them: training.ship ----------------------------------------------------------------------------


def fake_translation_run(tmp_path, translation_dir, steps, noise=0.5):
    """A run folder as `python -m training translation --snapshots N` leaves it."""
    import shutil

    from tiny_models import add_snapshots

    from transformer import Seq2SeqTransformer

    run = tmp_path / "run"
    shutil.copytree(translation_dir, run / "best")
    records = [{"event": "start", "command": "python -m training translation --snapshots 5", "parameters": 1}]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "summary.json").write_text(json.dumps({"best_epoch": 0, "wall_seconds": 3.0}))
    return add_snapshots(run, Seq2SeqTransformer, steps, metric="bleu", source=run / "best", noise=noise)


def test_ship_carries_the_snapshots_in_fp16_or_fewer_of_them(tmp_path, translation_dir, capsys):
    from safetensors.torch import load_file
    from tiny_models import FIXTURES

    from pipelines.models.snapshots import list_snapshots
    from training.ship import main as ship_main

    run = fake_translation_run(tmp_path, translation_dir, [0, 1, 3, 8, 20])
    to = tmp_path / "assets" / "translation"
    args = ["translation", "--run", str(run), "--to", str(to), "--test-data", str(FIXTURES / "multi30k_tiny.jsonl")]
    assert ship_main([*args, "--snapshots", "3"]) == 0
    assert [s.revision for s in list_snapshots(to)] == ["step-0", "step-3", "step-20"]  # first, last, between
    assert list_snapshots(to)[1].score == list_snapshots(run)[2].score  # snapshot.json comes along
    assert json.loads((to / "metrics.json").read_text())["snapshots"] == ["step-0", "step-3", "step-20"]
    bundled = load_file(to / "snapshots" / "step-3" / "model.safetensors")
    for k, v in load_file(run / "snapshots" / "step-3" / "model.safetensors").items():
        assert bundled[k].dtype == torch.float16 and torch.equal(bundled[k], v.half())
    assert not (to / "snapshots" / "step-3" / "README.md").exists()

    assert ship_main(args) == 0  # all of them by default
    assert len(list_snapshots(to)) == 5
    capsys.readouterr()
    assert ship_main([*args, "--snapshots-max-mb", "0.05"]) == 2  # five tiny fp16 models: about 0.2 MiB
    assert "snapshots take" in capsys.readouterr().err and len(list_snapshots(to)) == 5  # the bundle stays


def test_ship_int8_snapshots_load_close_to_fp16_and_take_about_half(tmp_path, translation_dir, capsys):
    from safetensors.torch import load_file
    from tiny_models import FIXTURES

    from pipelines.translation import TranslationPipeline
    from training.ship import main as ship_main
    from transformer.quantize import SCALE_SUFFIX

    run = fake_translation_run(tmp_path, translation_dir, [0, 1, 3, 8, 20])
    base = ["translation", "--run", str(run), "--test-data", str(FIXTURES / "multi30k_tiny.jsonl")]
    half, int8 = tmp_path / "fp16", tmp_path / "int8"
    assert ship_main([*base, "--to", str(half), "--snapshot-steps", "3,20"]) == 0
    assert ship_main([*base, "--to", str(int8), "--snapshot-steps", "20,3", "--snapshots-dtype", "int8"]) == 0
    meta = json.loads((int8 / "metrics.json").read_text())
    assert meta["snapshots"] == ["step-3", "step-20"] and meta["snapshots_weights"].startswith("int8")
    stored = load_file(int8 / "snapshots" / "step-3" / "model.safetensors")
    assert any(v.dtype == torch.int8 for v in stored.values()) and any(k.endswith(SCALE_SUFFIX) for k in stored)
    size = {p: (p / "snapshots" / "step-3" / "model.safetensors").stat().st_size for p in (half, int8)}
    assert size[int8] < 0.8 * size[half]  # the tiny model is mostly embeddings, which stay fp16
    # the main model stays fp16; each snapshot loads with every weight within half a step of its int8 grid
    assert load_file(int8 / "model.safetensors").keys() == load_file(half / "model.safetensors").keys()
    for rev in ("step-3", "step-20"):
        a = TranslationPipeline.from_pretrained(str(half), revision=rev).model.state_dict()
        b = TranslationPipeline.from_pretrained(str(int8), revision=rev).model.state_dict()
        for name, w in a.items():
            step = w.abs().amax(dim=-1, keepdim=True) / 127 if w.dim() > 1 else 0  # + fp16's own rounding of w
            assert ((b[name] - w).abs() <= step * 0.5 + w.abs() * 2**-10 + 1e-6).all(), name
    # (whether their attention stays within 0.01 of fp16 is measured on the shipped model:
    # benchmarks/snapshot_quantization.py; this tiny random model's saturated heads are no guide)
    capsys.readouterr()
    assert ship_main([*base, "--to", str(tmp_path / "x"), "--snapshot-steps", "2"]) == 2
    assert "no snapshot of step 2" in capsys.readouterr().err


def test_int8_delta_snapshots_are_differences_from_the_bundled_model(tmp_path, translation_dir, capsys):
    import shutil

    from safetensors import safe_open
    from safetensors.torch import load_file, save_file
    from tiny_models import FIXTURES
    from tokenizers import Tokenizer

    from pipelines.translation import TranslationPipeline
    from training import publish
    from training.ship import main as ship_main
    from transformer import CheckpointError
    from transformer.quantize import DELTA_SUFFIX

    run = fake_translation_run(tmp_path, translation_dir, [0, 3, 20], noise=0.02)  # late snapshots: near the model
    base = ["translation", "--run", str(run), "--test-data", str(FIXTURES / "multi30k_tiny.jsonl")]
    half, int8, delta = tmp_path / "fp16", tmp_path / "int8", tmp_path / "delta"
    assert ship_main([*base, "--to", str(half)]) == 0
    assert ship_main([*base, "--to", str(int8), "--snapshots-dtype", "int8"]) == 0
    assert ship_main([*base, "--to", str(delta), "--snapshots-dtype", "int8-delta"]) == 0
    assert json.loads((delta / "metrics.json").read_text())["snapshots_weights"].startswith("int8 differences")
    stored = delta / "snapshots" / "step-20" / "model.safetensors"
    with safe_open(stored, "pt") as f:
        assert f.metadata()["delta_base"] == "../.." and all(f.get_tensor(k).dtype != torch.float32 for k in f.keys())
    q = load_file(stored)
    assert q["lm_head.weight"].dtype == torch.int8 and "lm_head.weight" + DELTA_SUFFIX in q  # embeddings too
    # near the model, every snapshot loads closer to fp16 than plain int8 (embeddings kept fp16) does
    for rev in ("step-0", "step-3", "step-20"):
        want = TranslationPipeline.from_pretrained(str(half), revision=rev).model.state_dict()
        errors = {}
        for folder in (int8, delta):
            got = TranslationPipeline.from_pretrained(str(folder), revision=rev).model.state_dict()
            errors[folder] = max(float((got[k] - w).abs().max()) for k, w in want.items() if w.dim() > 1)
        assert errors[delta] < errors[int8], rev
    # the tokenizer comes without indentation: the same tokenizer in fewer bytes
    small, full = delta / "snapshots" / "step-3" / "tokenizer.json", run / "best" / "tokenizer.json"
    assert small.stat().st_size < full.stat().st_size
    text = "Ein Mann fährt Fahrrad."
    assert Tokenizer.from_file(str(small)).encode(text).ids == Tokenizer.from_file(str(full)).encode(text).ids
    # published, a snapshot's branch holds whole fp16 weights of its own
    out = tmp_path / "repo"
    argv = ["translation", "--model", str(delta), "--repo-id", "alice/t", "--dry-run", "--out", str(out)]
    assert publish.main(argv) == 0
    branch = load_file(out / "step-20" / "model.safetensors")
    assert all(v.dtype == torch.float16 for v in branch.values())
    expected = TranslationPipeline.from_pretrained(str(delta), revision="step-20").model.state_dict()
    assert torch.equal(branch["lm_head.weight"], expected["lm_head.weight"].half())
    # the model they were taken from changed: said, not loaded wrong
    moved = tmp_path / "moved"
    shutil.copytree(delta, moved)
    weights = load_file(moved / "model.safetensors")
    save_file({k: v * 1.01 if v.is_floating_point() else v for k, v in weights.items()}, moved / "model.safetensors")
    with pytest.raises(CheckpointError, match="bundle the snapshots again"):
        TranslationPipeline.from_pretrained(str(moved), revision="step-3")
    capsys.readouterr()


def test_int8_differences_need_their_base():
    from transformer.quantize import dequantize, is_delta, is_quantized, quantize_int8

    torch.manual_seed(0)
    base = {"w": torch.randn(4, 64), "b": torch.randn(4)}
    state = {"w": base["w"] + 0.01 * torch.randn(4, 64), "b": torch.randn(4)}
    q = quantize_int8(state, base=base)
    assert is_delta(q) and is_quantized(q) and not is_delta(quantize_int8(state))
    back = dequantize(q, base)
    assert (back["w"] - state["w"]).abs().max() < 0.01 * 4 / 127  # a step of the difference's grid, not of w's
    assert torch.equal(back["b"], state["b"].half())  # vectors stay fp16, not differences
    with pytest.raises(ValueError, match="differences"):
        dequantize(q)


def test_int8_groups_round_trip_within_half_a_step_of_their_group():
    from transformer.quantize import GROUP, dequantize, is_quantized, quantize_int8

    torch.manual_seed(0)
    w = torch.randn(5, 2 * GROUP) * torch.arange(1, 6)[:, None]
    w[0, 0] = 100.0  # an outlier coarsens its own group only
    state = {"w": w, "odd": torch.randn(3, 7), "b": torch.randn(7), "ids": torch.arange(3)}
    q = quantize_int8(state)
    assert is_quantized(q) and q["w"].dtype == torch.int8 and q["b"].dtype == torch.float16
    assert q["w.int8_scale"].shape == (5, 2) and q["odd.int8_scale"].shape == (3, 1)  # 7 values: one group a row
    back = dequantize(q)
    for name in ("w", "odd"):
        groups = state[name].reshape(state[name].shape[0], q[name + ".int8_scale"].shape[1], -1)
        step = (groups.abs().amax(dim=-1, keepdim=True) / 127).expand_as(groups).reshape(state[name].shape)
        assert ((back[name] - state[name]).abs() <= step * (0.5 + 2**-10)).all()  # fp16 scale rounding
    assert (back["w"][0, GROUP:] - w[0, GROUP:]).abs().max() < 0.05  # not 100 / 254 away
    assert torch.equal(back["ids"], state["ids"]) and back["w"].dtype == torch.float32
    assert not is_quantized(state) and dequantize(state).keys() == state.keys()
    # token embeddings (and a tied output layer) stay fp16: every layer reads them
    embeddings = quantize_int8({"src_emb.weight": w, "lm_head.weight": w, "layers.0.member.weight": w})
    assert embeddings["src_emb.weight"].dtype == embeddings["lm_head.weight"].dtype == torch.float16
    assert embeddings["layers.0.member.weight"].dtype == torch.int8


def test_pick_evenly_keeps_the_ends():
    from training.ship import pick_evenly

    steps = [0, 3, 10, 34, 109, 353, 1143, 3696]
    assert pick_evenly(steps, 6) == [0, 3, 34, 109, 1143, 3696]
    assert pick_evenly(steps, 2) == [0, 3696] and pick_evenly(steps, 1) == [3696] and pick_evenly(steps, 0) == []
    assert pick_evenly(steps, None) == pick_evenly(steps, 20) == steps


# --- publishing them as branches: training.publish -----------------------------------------------------------


def test_publish_dry_run_lays_out_one_folder_per_branch(sentiment_with_snapshots, tmp_path, capsys):
    from huggingface_hub import ModelCard

    from pipelines import SentimentPipeline
    from training import publish

    out = tmp_path / "repo"
    argv = ["sentiment", "--model", str(sentiment_with_snapshots), "--repo-id", "alice/s", "--dry-run", "--out"]
    assert publish.main([*argv, str(out)]) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["main", "step-0", "step-3", "step-40"]
    for branch in ("main", "step-0", "step-3", "step-40"):
        assert f"branch {branch}:" in printed
    index = json.loads((out / "main" / "snapshots.json").read_text())
    assert [s["step"] for s in index] == [0, 3, 40]
    card = ModelCard.load(out / "main" / "README.md").text
    assert "## Training snapshots" in card and "| `step-3` | 3 | 0.3 | 1 | 51.00% |" in card
    assert "steps of its training, from the untrained start to the end" in card  # random weights at step 0
    assert 'revision="step-0"' in card
    assert "step-3" in ModelCard.load(out / "step-3" / "README.md").text
    assert (out / "step-3" / "snapshot.json").is_file() and (out / "step-3" / "modeling_attention_demo.py").is_file()
    reviews = ["A wonderful, moving film.", "Dull and far too long."]
    branch = SentimentPipeline.from_pretrained(str(out / "step-3"))
    source = SentimentPipeline.from_pretrained(str(sentiment_with_snapshots), revision="step-3")
    assert branch.predict(reviews) == source.predict(reviews)
    assert not (out / "main" / "snapshots").exists()  # main holds the final model only


def test_the_card_of_a_model_fine_tuned_from_public_weights_says_what_step_0_is(sentiment_dir):
    from training.release.model_card import model_card

    snapshots = [
        {"step": 0, "metric": "accuracy", "accuracy": 0.53},
        {"step": 9, "metric": "accuracy", "accuracy": 0.9},
    ]
    metrics = {"task": "sentiment", "source_weights": {"name": "org/minilm", "license": "apache-2.0"}}
    config = json.loads((sentiment_dir / "config.json").read_text())
    card = model_card("sentiment", "a/b", config, 1000, metrics, snapshots=snapshots).content
    assert (
        "2 steps of its training, from org/minilm's pre-trained weights, with an untrained classifier to the end"
        in card
    )
    assert "untrained start" not in card


def test_publish_pushes_each_snapshot_to_its_branch_then_main(sentiment_with_snapshots, online, capsys):
    from fake_hub import FakeApi

    from training import publish

    api = FakeApi()
    argv = ["sentiment", "--model", str(sentiment_with_snapshots), "--repo-id", "alice/s"]
    assert publish.main(argv, api=api) == 0, capsys.readouterr().err
    assert api.names() == ["whoami", "create_repo", *["create_branch", "upload_folder"] * 3, "upload_folder"]
    uploads = [kw for name, _, kw in api.calls if name == "upload_folder"]
    assert [kw.get("revision") for kw in uploads] == ["step-0", "step-3", "step-40", None]  # main last
    assert [kw["branch"] for name, _, kw in api.calls if name == "create_branch"] == ["step-0", "step-3", "step-40"]
    assert all(kw["delete_patterns"] == "*" for kw in uploads)
    assert "snapshots.json" in api.uploaded_files  # main's files


def test_a_failed_branch_upload_says_what_was_pushed(sentiment_with_snapshots, online, capsys):
    from fake_hub import FakeApi

    from training import publish
    from training.release import checks

    class FailsOnSecondBranch(FakeApi):
        def upload_folder(self, **kwargs):
            if kwargs.get("revision") == "step-3":
                raise ConnectionError("connection reset")
            return super().upload_folder(**kwargs)

    api = FailsOnSecondBranch()
    argv = ["sentiment", "--model", str(sentiment_with_snapshots), "--repo-id", "alice/s"]
    assert publish.main(argv, api=api) == checks.EXIT_OFFLINE
    err = capsys.readouterr().err
    assert "the branches step-0 were uploaded, main is unchanged" in err and "branch step-3" in err
    assert [kw.get("revision") for name, _, kw in api.calls if name == "upload_folder"] == ["step-0"]


# --- what the slider will show, measured: benchmarks/heads_through_training.py --------------------------------


def test_heads_through_training_prints_each_snapshots_score_and_head_statistics(
    translation_with_snapshots,
    multi30k_dir,
    tmp_path,
    capsys,  # noqa: F811
):
    import numpy as np

    from pipelines import TranslationPipeline
    from training.engine.data import seeded_sample as sample

    data = str(multi30k_dir / "test.parquet")
    out = tmp_path / "heads.json"
    argv = ["--task", "translation", "--model", str(translation_with_snapshots), "--data", data, "--n", "3"]
    png = tmp_path / "heads.png"
    command = [sys.executable, "-m", "benchmarks.heads_through_training", *argv, "--beam", "1"]
    run = subprocess.run([*command, "--json", str(out), "--plot", str(png)], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    printed = run.stdout
    assert "| step-5 | 5 | 1.000 | bleu 0.51 |" in printed  # its snapshot.json: loss 2 / 2, score 0.5 + 1 / 100
    assert "| head | step-0 | step-5 | step-60 | main |" in printed
    assert "| cross L2 H4 |" in printed and "distance from the diagonal" in printed
    results = json.loads(out.read_text())["snapshots"]
    assert [r["revision"] for r in results] == ["step-0", "step-5", "step-60", "main"]
    texts = sample(data, ("de", "en"), 3, 0)["de"]  # the same seeded sample, measured straight on step-60
    pipe = TranslationPipeline.from_pretrained(str(translation_with_snapshots), revision="step-60")
    tables = [pipe.head_table(t, beam_size=1, agreement=False) for t in texts]
    cross = [i for i, row in enumerate(tables[0]) if row["kind"] == "cross"][0]
    for key in ("entropy", "distance"):
        expected = np.mean([t[cross][key] for t in tables])
        assert results[2]["heads"][cross][f"{key}_mean"] == pytest.approx(expected)
    assert results[2]["heads"][cross]["entropy_mean"] != pytest.approx(results[3]["heads"][cross]["entropy_mean"])


def test_the_bundled_translator_has_its_snapshots_within_the_budget():
    """What a fresh clone's slider shows: the shipped translator's snapshots from step 0, int8, within 40 MiB."""
    from pathlib import Path

    from pipelines.models.snapshots import list_snapshots
    from pipelines.translation import TranslationPipeline
    from training.ship import MAX_SNAPSHOTS_MB

    bundle = Path(__file__).resolve().parents[2] / "assets" / "translation"
    snaps = list_snapshots(bundle)
    assert len(snaps) >= 4 and snaps[0].step == 0 and snaps[0].score is not None
    assert sum(f.stat().st_size for f in (bundle / "snapshots").rglob("*") if f.is_file()) <= MAX_SNAPSHOTS_MB * 2**20
    sentence = "Ein Mann fährt mit dem Fahrrad."
    trained = TranslationPipeline.from_pretrained(str(bundle))(sentence, beam_size=1)
    untrained = TranslationPipeline.from_pretrained(str(bundle), revision="step-0")(sentence, beam_size=1)
    assert trained.translation != untrained.translation
    assert not np.allclose(
        trained.attention_maps().maps["cross"][..., :1, :], untrained.attention_maps().maps["cross"][..., :1, :]
    )
