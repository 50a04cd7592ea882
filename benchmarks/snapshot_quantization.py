"""Do int8 snapshots show the same attention as fp16 ones? Measured before bundling them int8.

    python -m benchmarks.snapshot_quantization --task translation --model runs/translation-snap --n 50 \
        [--dtype int8-delta]

For each snapshot of the model folder (its snapshots/step-<N>/, e.g. a training run's fp32 ones; --steps picks
some) it writes the weights as training.ship bundles them, in fp16 and in int8 (`--snapshots-dtype int8`:
transformer/quantize.py; or int8-delta, differences from the folder's own model, or a run's best/, in fp16),
loads both, and reads a seeded sample of validation inputs through both in the same
forward pass (translation: teacher-forced on the fp16 model's greedy translation, so both read the same tokens):
the largest and mean absolute difference of every head's attention weights, over every kind, layer, head and
row, whether both give the same label or greedy translation, and both files' sizes. The issue's bar: within 0.01.
"""

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from training.engine.data import seeded_sample as sample  # noqa: E402

DATA = {  # the validation split each task reads, and its input column
    "sentiment": ("../shared/data/sst2/validation.parquet", "sentence"),
    "translation": ("../shared/data/multi30k/validation.parquet", "de"),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=sorted(DATA), required=True)
    p.add_argument("--model", required=True, help="a model folder with snapshots/step-<N>/ (a run or a bundle)")
    p.add_argument("--steps", default=None, help="which snapshots, e.g. 0,16,102 (default: all)")
    p.add_argument("--n", type=int, default=50, help="inputs in the seeded sample of the validation split")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=["int8", "int8-delta"], default="int8", help="the storage compared with fp16")
    p.add_argument("--data", default=None, help="validation file (default: the task's under ../shared/data)")
    return p


def read_translation(pipe, text: str, target=None):
    """(its greedy translation's ids, AttentionInternals teacher-forced on `target`, None: on that translation)."""
    answer = pipe(text, beam_size=1).target_ids
    return answer, pipe.internals(text, answer if target is None else target)


def read_sentiment(pipe, text: str, target=None):
    """(its label, AttentionInternals on the text)."""
    return pipe(text, need_weights=False).label, pipe.internals(text)


READERS = {"sentiment": read_sentiment, "translation": read_translation}


def compare(read, half, int8, texts: list[str]) -> dict:
    """The largest and mean |difference| of attention weights between the two pipelines on the same tokens, and
    how often they answer the same."""
    worst, total, count, same = 0.0, 0.0, 0, 0
    for text in texts:
        answer, a = read(half, text)
        answer_int8, b = read(int8, text, answer)
        same += answer_int8 == answer
        for kind, ka in a.kinds.items():
            diff = (ka.weights - b.kinds[kind].weights).abs()
            worst, total, count = max(worst, float(diff.max())), total + float(diff.sum()), count + diff.numel()
    return {"max": worst, "mean": total / max(count, 1), "same": same / max(len(texts), 1)}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from pipelines.models.snapshots import list_snapshots
    from pipelines.tasks import TASKS
    from training.engine.loop import BEST
    from training.ship import copy_model
    from transformer.hub import weight_files

    cls = TASKS[args.task].pipeline
    path, column = DATA[args.task]
    texts = sample(args.data or str(ROOT / path), (column,), args.n, args.seed)[column]
    wanted = None if args.steps is None else {int(s) for s in args.steps.split(",")}
    snaps = [s for s in list_snapshots(args.model) if wanted is None or s.step in wanted]
    print(f"{args.task}: {args.model}, {len(snaps)} snapshots, {len(texts)} validation inputs (seed {args.seed})\n")
    print(f"| step | max abs diff | mean abs diff | same answer | fp16 MiB | {args.dtype} MiB |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    worst, model = 0.0, Path(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"  # the model the snapshots are bundled with, in fp16 (int8-delta's base)
        base.mkdir()
        copy_model(model / BEST if (model / BEST).is_dir() else model, base, 25.0)
        for snap in snaps:
            pipes, sizes = {}, {}
            for dtype in ("fp16", args.dtype):
                shutil.rmtree(Path(tmp) / dtype, ignore_errors=True)
                (Path(tmp) / dtype).mkdir()
                copy_model(model / "snapshots" / snap.revision, Path(tmp) / dtype, 25.0, dtype, base)
                sizes[dtype] = sum(f.stat().st_size for f in weight_files(Path(tmp) / dtype)) / 2**20
                pipes[dtype] = cls.from_pretrained(str(Path(tmp) / dtype))
            r = compare(READERS[args.task], pipes["fp16"], pipes[args.dtype], texts)
            worst = max(worst, r["max"])
            print(
                f"| {snap.step:,} | {r['max']:.4f} | {r['mean']:.6f} | {r['same']:.0%} | {sizes['fp16']:.2f} | "
                f"{sizes[args.dtype]:.2f} |",
                flush=True,
            )
    print(f"\nlargest difference over every snapshot: {worst:.4f} ({'within' if worst <= 0.01 else 'over'} 0.01)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
