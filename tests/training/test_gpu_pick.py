"""benchmarks/gpu/pick.py: the run to ship is chosen by held-out validation and the app's built-in examples, never by
a test score."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from training.contrast import LEVEL
from training.contrast import choose_run as choose

ROOT = Path(__file__).resolve().parents[2]


def run(name: str, accuracy: float, examples: int) -> dict:
    return {"run": name, "best_accuracy": accuracy, "examples_right": examples}


def test_among_level_runs_the_most_examples_right_wins_then_validation():
    runs = [run("a", 0.9421, 9), run("b", 0.9417, 10), run("c", 0.9415, 10)]
    assert choose(runs)["run"] == "b"
    assert choose([run("a", 0.9421, 9), run("b", 0.9417, 9)])["run"] == "a"


def test_a_run_further_behind_than_level_is_not_chosen_for_its_examples():
    runs = [run("a", 0.9421, 9), run("b", 0.9421 - 2 * LEVEL, 10)]
    assert choose(runs)["run"] == "a"
    assert choose([]) is None


def test_the_script_scores_each_runs_examples_and_prints_the_chosen_folder(sentiment_dir, tmp_path):
    """Two runs with the same tiny model: level on examples, the better held-out validation is chosen; a run without
    a best model is listed and left out."""
    for name, accuracy in (("a", 0.80), ("b", 0.81)):
        shutil.copytree(sentiment_dir, tmp_path / name / "best")
        (tmp_path / name / "summary.json").write_text(json.dumps({"best_epoch": 1, "best_accuracy": accuracy}))
    (tmp_path / "c").mkdir()
    argv = [sys.executable, "-m", "benchmarks.gpu.pick", *(str(tmp_path / n) for n in "abc")]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT).stdout.splitlines()
    rows = [json.loads(line) for line in out[:-1]]
    assert [Path(r["run"]).name for r in rows] == ["a", "b", "c"]
    assert rows[0]["examples_right"] == rows[1]["examples_right"] and 0 <= rows[0]["examples_right"] <= 10
    assert "examples_right" not in rows[2]
    assert out[-1] == str(tmp_path / "b")
