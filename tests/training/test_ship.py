"""`python -m training.ship`: the fp16 bundle, scored by calling the evaluation function, written atomically."""

import json

import torch
from safetensors.torch import load_file
from tiny_models import FIXTURES
from training_runs import fake_run

from training.ship import main as ship_main


def test_ship_bundles_fp16_weights_and_the_test_score(tmp_path, sentiment_dir, capsys):
    run, to = fake_run(tmp_path, sentiment_dir), tmp_path / "assets" / "sentiment"
    data = str(FIXTURES / "imdb_tiny.jsonl")
    assert ship_main(["sentiment", "--run", str(run), "--to", str(to), "--test-data", data]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    metrics = json.loads((to / "metrics.json").read_text())
    assert metrics["test"] == printed and printed["split"] == "test" and printed["data"] == data
    assert printed["n"] == 40 and 0.0 <= printed["accuracy"] <= 1.0
    assert metrics["wall_seconds"] == 3.0 and metrics["validation"]["accuracy"] == 0.5
    weights = load_file(to / "model.safetensors")
    assert {v.dtype for v in weights.values() if v.is_floating_point()} == {torch.float16}
    assert sorted(p.name for p in to.parent.iterdir()) == ["sentiment"]  # no .tmp or .old left
    # a resumed run: its summary times only the last invocation, which is not the run's wall time
    (run / "summary.json").write_text(json.dumps({"best_epoch": 0, "wall_seconds": 120.0, "train_seconds": 6000.0}))
    assert ship_main(["sentiment", "--run", str(run), "--to", str(to), "--test-data", data]) == 0
    metrics = json.loads((to / "metrics.json").read_text())
    assert metrics["wall_seconds"] is None and metrics["wall_seconds_last_invocation"] == 120.0


def test_ship_scores_extra_files_and_the_contrast_set(tmp_path, sentiment_dir, capsys):
    run, to = fake_run(tmp_path, sentiment_dir), tmp_path / "assets" / "sentiment"
    data = str(FIXTURES / "imdb_tiny.jsonl")
    args = ["sentiment", "--run", str(run), "--to", str(to), "--test-data", data, "--also", f"reviews={data}"]
    assert ship_main(args) == 0
    metrics = json.loads((to / "metrics.json").read_text())
    assert metrics["reviews"]["split"] == "reviews" and metrics["reviews"]["accuracy"] == metrics["test"]["accuracy"]
    contrast = metrics["contrast"]
    assert contrast["pairs"] >= 100 and 0 <= contrast["pairs_flipped"] <= contrast["pairs"]
    examples = contrast["builtin_examples"]  # the app's example reviews, as a reader labels them
    assert examples["examples"] == 10 and examples["right"] == 10 - len(examples["wrong"])
    assert ship_main([*args[:-1], "no-equals-sign"]) == 2


def test_a_failed_ship_leaves_the_previous_bundle(tmp_path, sentiment_dir, capsys):
    run, to = fake_run(tmp_path, sentiment_dir), tmp_path / "assets" / "sentiment"
    to.mkdir(parents=True)
    (to / "marker").write_text("previous bundle")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x"}\n')  # no label column
    assert ship_main(["sentiment", "--run", str(run), "--to", str(to), "--test-data", str(bad)]) == 2
    assert "label" in capsys.readouterr().err
    assert (to / "marker").read_text() == "previous bundle"
    assert sorted(p.name for p in to.parent.iterdir()) == ["sentiment"]


def test_ship_keeps_the_calibration_fit_the_source_weights_and_the_display_name(tmp_path, sentiment_dir):
    """metrics.json names the public weights a run started from (--init-from-bert) and the rows it held out, keeps
    what training.calibrate recorded on the run's best model, and carries the name and note the app's model choice
    shows."""
    run, to = fake_run(tmp_path, sentiment_dir), tmp_path / "assets" / "sentiment"
    source = {"name": "sentence-transformers/all-MiniLM-L6-v2", "revision": "1110a243", "sha256": "ab", "license": "x"}
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    records[0]["source_weights"] = source
    records[0]["held_out"] = held_out = {"sst2": {"holdout": "sentences", "size": 1000}}
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "best" / "metrics.json").write_text(json.dumps({"calibration": {"temperature": 0.9}, "test": "stale"}))
    data = str(FIXTURES / "imdb_tiny.jsonl")
    args = ["sentiment", "--run", str(run), "--to", str(to), "--test-data", data]
    assert ship_main([*args, "--display-name", "pre-trained", "--display-note", "fine-tuned here"]) == 0
    metrics = json.loads((to / "metrics.json").read_text())
    assert metrics["source_weights"] == source and metrics["calibration"] == {"temperature": 0.9}
    assert metrics["held_out"] == held_out  # what --continue-from checks on the bundle
    assert metrics["test"]["split"] == "test"  # the bundle's own score, not the run's stale one
    assert (metrics["display_name"], metrics["display_note"]) == ("pre-trained", "fine-tuned here")
