"""What --snapshots costs a training run: measured on a tiny run, and per snapshot at the shipped models' sizes.

    python -m benchmarks.snapshot_cost [--snapshots 8] [--epochs 40]

1. A tiny translation run on the test fixtures (tests/fixtures/multi30k_tiny.jsonl, the tests' tiny model sizes),
   once without and once with --snapshots N, same seed: training seconds, the seconds spent on snapshots (the loop
   records them in summary.json: scoring and writing), and their share of the training time.
2. One snapshot at the shipped models' sizes, in CPU seconds on one thread (their config.json, freshly initialised
   weights: the time to write does not depend on the values): writing the model folder (fp32 weights, tokenizer,
   snapshot.json; wall seconds), and for the translator scoring it as a snapshot is scored (greedy decoding of 300
   sentences; the larger of this and the validation time recorded in training). With the shipped run's training time
   (assets/*/metrics.json) this gives the share N snapshots would take of that run. Sentiment's scoring time is
   estimated from its recorded validation time (eval_seconds over 4,500 texts) scaled to the 1,000 a snapshot reads.
Nothing here reads the real data or trains a real model.
"""

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TINY = "--vocab-size 300 --d-model 32 --n-heads 4 --n-layers 1 --d-ff 64 --batch-size 8 --threads 1".split()
TINY += "--bleu-sample 8 --beam 2 --average-last 0 --patience 1000".split()


def tiny_run(tmp: Path, epochs: int, snapshots: int) -> dict:
    """summary.json of a tiny translation run on the fixtures, with `snapshots` snapshots."""
    from training.cli import main as train_main

    data, out = tmp / "multi30k", tmp / f"run-{snapshots}"
    if not data.is_dir():
        import pandas as pd
        from tiny_models import read_jsonl

        data.mkdir()
        df = pd.DataFrame(read_jsonl("multi30k_tiny.jsonl"))
        for split in ("train", "validation", "test"):
            df.to_parquet(data / f"{split}.parquet")
    args = ["translation", "--data-dir", str(data), "--out", str(out), "--epochs", str(epochs), *TINY]
    assert train_main([*args, "--snapshots", str(snapshots)]) == 0
    return json.loads((out / "summary.json").read_text())


def timed(fn, repeat: int = 3, clock=time.process_time) -> float:
    """The median seconds of `repeat` calls of fn(): by default CPU seconds of this process, on one thread the wall
    time an idle machine would take whatever else runs on this one; clock=time.perf_counter for wall seconds."""
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


class ShippedSize:
    """A task stand-in that exports a model folder as the training tasks do (training/*.py: export)."""

    def __init__(self, folder: Path):
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.prep = json.loads((folder / "preprocessing.json").read_text())
        self.prep.pop("domain", None), self.prep.pop("temperature", None)

    def export(self, model, folder: Path) -> None:
        from pipelines.models.folders import save_folder

        save_folder(model, self.tokenizer, folder, model.config.max_len, self.prep)


def per_snapshot(task: str, tmp: Path) -> dict:
    """Seconds to write one snapshot of the shipped-size model, and (translation) to score it."""
    import torch
    from tiny_models import read_jsonl

    from pipelines.translation import TranslationPipeline
    from training.engine.snapshots import write_snapshot
    from training.tasks.translation import translate_on_device
    from transformer import ClassifierConfig, Seq2SeqConfig, Seq2SeqTransformer, TransformerClassifier

    folder = ROOT / "assets" / task
    config = json.loads((folder / "config.json").read_text())
    torch.manual_seed(0)
    if task == "translation":
        model = Seq2SeqTransformer(Seq2SeqConfig(**config))
    else:
        model = TransformerClassifier(ClassifierConfig(**config))
    stand_in = ShippedSize(folder)
    # writing waits on the disk more than on the CPU: wall seconds (on a busy machine, an upper bound)
    write = timed(lambda: write_snapshot(stand_in, model, tmp / task, {"step": 1}), clock=time.perf_counter)
    out = {"parameters": sum(p.numel() for p in model.parameters()), "write_seconds": write}
    if task == "translation":
        german = [r["de"] for r in read_jsonl("multi30k_tiny.jsonl")]
        sentences = (german * (300 // len(german) + 1))[:300]
        pipe = TranslationPipeline(model.eval(), stand_in.tokenizer)
        measured = timed(lambda: translate_on_device(pipe, sentences, beam=1), repeat=1)
        recorded = json.loads((folder / "metrics.json").read_text())["validation"]["eval_seconds"]
        out["score_seconds"] = max(measured, recorded)  # the trained model's validation, as recorded, may be longer
        out["score_note"] = f" (the larger of {measured:.2f} s measured and {recorded:.2f} s recorded in training)"
    else:  # recorded: the full validation (2,500 IMDB + 2,000 SST-2 texts); a snapshot reads 500 + 500
        recorded = json.loads((folder / "metrics.json").read_text())["validation"]["eval_seconds"]
        out["score_seconds"] = recorded * 1000 / 4500
        out["score_note"] = " (estimated from the validation time recorded in training)"
    return out


def print_tiny(plain: dict, snapped: dict, n: int) -> None:
    print(f"\ntiny run, {snapped['steps']} steps, {n} snapshots (wall seconds):")
    print(f"  without: train {plain['train_seconds']:.2f} s, wall {plain['wall_seconds']:.2f} s")
    share = snapped["snapshot_seconds"] / snapped["train_seconds"]
    print(
        f"  with:    train {snapped['train_seconds']:.2f} s, wall {snapped['wall_seconds']:.2f} s, snapshots "
        f"{snapped['snapshot_seconds']:.3f} s = {share:.1%} of the training time"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--snapshots", type=int, default=8)
    p.add_argument("--epochs", type=int, default=40, help="epochs of the tiny run (3 steps each)")
    p.add_argument("--skip-tiny", action="store_true", help="only the per-snapshot costs at the shipped sizes")
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    import torch

    torch.set_num_threads(a.threads)
    with tempfile.TemporaryDirectory() as tmp:
        if not a.skip_tiny:
            print_tiny(tiny_run(Path(tmp), a.epochs, 0), tiny_run(Path(tmp), a.epochs, a.snapshots), a.snapshots)
        for task in ("translation", "sentiment"):
            one = per_snapshot(task, Path(tmp))
            train_s = json.loads((ROOT / "assets" / task / "metrics.json").read_text())["train_seconds"]
            cost = a.snapshots * (one["write_seconds"] + one["score_seconds"])
            est = one["score_note"]
            print(
                f"{task} at the shipped size ({one['parameters'] / 1e6:.1f}M parameters): write "
                f"{one['write_seconds']:.2f} s, score {one['score_seconds']:.2f} s{est} a snapshot; "
                f"{a.snapshots} snapshots = {cost:.0f} s = {cost / train_s:.2%} of its {train_s:.0f} s of training"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
