"""`python -m training.ship sentiment|translation --run runs/X --to assets/X --test-data FILE`.

Copies a run's best model into the app's bundle as fp16 safetensors (each file must stay under 25 MB),
scores the *bundled* files once on the test split with the evaluate command, and writes metrics.json
with the exact training command, data, wall time, machine and scores.
"""

import argparse
import contextlib
import io
import json
import shutil
import sys
import time
from pathlib import Path

MAX_FILE_BYTES = 25 * 1024 * 1024


def to_fp16(src: Path, dst: Path) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(src / "model.safetensors")
    save_file(
        {k: v.half() if v.is_floating_point() else v for k, v in tensors.items()},
        dst / "model.safetensors",
        metadata={"format": "pt"},
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m training.ship", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("task", choices=["sentiment", "translation"])
    p.add_argument("--run", type=Path, required=True, help="training run folder (with best/ and metrics.jsonl)")
    p.add_argument("--to", type=Path, required=True, help="bundle folder, e.g. assets/sentiment")
    p.add_argument("--test-data", required=True, help="test split file for the one final score")
    p.add_argument("--data-description", default=None, help="what the model was trained on, for metrics.json")
    a = p.parse_args(argv)

    best = a.run / "best"
    if not (best / "model.safetensors").is_file():
        print(f"error: {best} has no model.safetensors: has the run finished an epoch?", file=sys.stderr)
        return 2
    records = [json.loads(line) for line in (a.run / "metrics.jsonl").read_text().splitlines()]
    start = next(r for r in records if r["event"] == "start")
    validations = [r for r in records if r["event"] == "validation"]
    summary = json.loads((a.run / "summary.json").read_text()) if (a.run / "summary.json").is_file() else {}

    tmp = a.to.with_name(a.to.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in best.iterdir():
        if f.name not in ("model.safetensors", "README.md"):
            shutil.copy2(f, tmp / f.name)
    to_fp16(best, tmp)
    too_big = [f.name for f in tmp.iterdir() if f.stat().st_size > MAX_FILE_BYTES]
    if too_big:
        print(f"error: {too_big} over 25 MB", file=sys.stderr)
        return 2

    from .evaluate import main as evaluate

    extra = (
        ["--beam", str(json.loads((best / "preprocessing.json").read_text())["beam_size"])]
        if a.task == "translation"
        else []
    )
    buf = io.StringIO()
    t0 = time.time()
    with contextlib.redirect_stdout(buf):
        code = evaluate([a.task, "--model", str(tmp), "--data", a.test_data, *extra])
    if code:
        return code
    test = json.loads(buf.getvalue().strip().splitlines()[-1])
    test.pop("model", None)
    test.update(split="test", seconds=round(time.time() - t0, 1))

    metrics = {
        "task": a.task,
        "command": start["command"],
        "data": a.data_description or start.get("data"),
        "wall_seconds": summary.get("wall_seconds"),
        "train_seconds": summary.get("train_seconds"),
        "machine": start.get("machine"),
        "parameters": start.get("parameters"),
        "test": test,
        "validation": validations[summary.get("best_epoch", -1)] if validations else None,
        "training": summary,
        "weights": "fp16 safetensors (loaded into fp32)",
    }
    (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    shutil.rmtree(a.to, ignore_errors=True)
    tmp.rename(a.to)
    print(json.dumps(metrics["test"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
