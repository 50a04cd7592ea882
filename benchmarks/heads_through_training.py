"""What each head does at each training snapshot of a model: attention forming, in numbers.

    python benchmarks/heads_through_training.py --task translation --model assets/translation --n 50
    python benchmarks/heads_through_training.py --task sentiment --model runs/sentiment --n 50

For every snapshot of the model (its snapshots/step-<N>/ folders, or a Hub repo's step-<N> branches:
pipelines/snapshots.py) and for the final model, loads it with `from_pretrained(model, revision=...)`,
measures the head table (pipelines/heads.py, statistics from pipelines/head_stats.py) on a seeded sample of
inputs, and prints one table per statistic with a row per head and a column per snapshot: the mean entropy
(nats), the mean attention distance (tokens; for cross-attention the distance from the diagonal, so a
monotone alignment scores near 0), the share on the previous token (self-attention) and the mean |effect| of
switching the head off. The first lines give each snapshot's step and validation score. --json FILE writes it all.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.heads import DEFAULTS, head_tables, sample  # noqa: E402

# (title, key of a head's row in pipelines.heads.summarize_tables)
TABLES = [
    ("entropy (nats): how spread a head's attention is", "entropy_mean"),
    ("distance (tokens); cross-attention: distance from the diagonal", "distance_mean"),
    ("share on the previous token (self-attention)", "previous_mean"),
    ("mean |effect| of switching the head off", "abs_effect_mean"),
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=sorted(DEFAULTS), required=True)
    p.add_argument("--model", default=None, help="model folder or Hub repo id with snapshots (default: bundled)")
    p.add_argument("--data", default=None, help="Parquet file of inputs (default: the test split in ../shared/data)")
    p.add_argument("--n", type=int, default=50, help="inputs in the seeded sample")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--beam", type=int, default=None, help="translation: beam size (default: the model's)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--json", default=None, help="write the results to this JSON file")
    return p


def measure(args, model: str, revisions: list, data: dict) -> list[dict]:
    """For each (revision, snapshot or None for the final model): its head summary over the sample."""
    from pipelines.heads import summarize_tables
    from pipelines.tasks import TASKS

    cls = TASKS[args.task].pipeline
    out = []
    for revision, snap in revisions:
        pipe = cls.from_pretrained(model, revision=revision)
        tables, per_input = head_tables(args.task, pipe, data, args.beam)
        out.append(
            {
                "revision": revision or "main",
                "step": snap.step if snap else None,
                "metric": snap.metric if snap else None,
                "score": snap.score if snap else None,
                "loss": snap.loss if snap else None,
                "seconds_per_input": per_input,
                "heads": summarize_tables(tables),
            }
        )
        print(f"  measured {revision or 'main'}", file=sys.stderr, flush=True)
    return out


def print_tables(results: list[dict]) -> None:
    """The snapshots' scores, then one Markdown table per statistic: a row per head, a column per snapshot."""
    fmt = lambda v: "–" if v is None else f"{v:.3f}"  # noqa: E731
    print("| revision | step | training loss | validation score |\n| --- | ---: | ---: | ---: |")
    for r in results:
        score = f"{r['metric']} {r['score']:.4g}" if r["score"] is not None else "– (the final model)"
        step = "–" if r["step"] is None else f"{r['step']:,}"
        print(f"| {r['revision']} | {step} | {fmt(r['loss'])} | {score} |")
    names = [r["revision"] for r in results]
    for title, key in TABLES:
        print(f"\n{title}\n\n| head | " + " | ".join(names) + " |")
        print("| --- |" + " ---: |" * len(names))
        for i, head in enumerate(results[0]["heads"]):
            label = f"{head['kind']} L{head['layer'] + 1} H{head['head'] + 1}"
            print(f"| {label} | " + " | ".join(fmt(r["heads"][i][key]) for r in results) + " |")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import torch

    from pipelines.snapshots import list_snapshots

    if args.threads:
        torch.set_num_threads(args.threads)
    default_model, data_path, columns = DEFAULTS[args.task]
    model = args.model or str(ROOT / default_model)
    snapshots = list_snapshots(model)
    if not snapshots:
        print(f"{model} has no snapshots (train with --snapshots N, then training.ship): measuring main only")
    data = sample(args.data or str(ROOT / data_path), columns, args.n, args.seed)
    print(f"{args.task}: {model}, {len(snapshots)} snapshots, {len(data[columns[0]])} inputs (seed {args.seed})\n")
    results = measure(args, model, [(s.revision, s) for s in snapshots] + [(None, None)], data)
    print_tables(results)
    if args.json:
        Path(args.json).write_text(json.dumps({"task": args.task, "model": model, "snapshots": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
