"""What each head does at each training snapshot of a model: attention forming, in numbers.

    python -m benchmarks.heads_through_training --task translation --model assets/translation --n 50
    python -m benchmarks.heads_through_training --task sentiment --model runs/sentiment --n 50

For every snapshot of the model (its snapshots/step-<N>/ folders, or a Hub repo's step-<N> branches:
pipelines/models/snapshots.py) and for the final model, loads it with `from_pretrained(model, revision=...)`,
measures the head table (pipelines/attention/heads.py, statistics from pipelines/attention/head_stats.py) on a seeded
sample of inputs, and prints one table per statistic with a row per head and a column per snapshot: the mean entropy
(nats), the mean attention distance (tokens; for cross-attention the distance from the diagonal, so a
monotone alignment scores near 0), the share on the previous token (self-attention) and the mean |effect| of
switching the head off. The first lines give each snapshot's step and validation score. --json FILE writes it all;
--plot FILE.png draws the validation score and, per kind of attention, the heads' mean entropy and distance
against the step (matplotlib).
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from benchmarks.heads import DEFAULTS, head_tables, model_and_sample  # noqa: E402

# (title, key of a head's row in pipelines.attention.heads.summarize_tables)
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
    p.add_argument("--plot", default=None, help="draw the score and head statistics by step into this PNG file")
    return p


def measure(args, model: str, revisions: list, data: dict) -> list[dict]:
    """For each (revision, snapshot or None for the final model): its head summary over the sample."""
    from pipelines.attention.heads import summarize_tables
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


def plot(results: list[dict], path: str) -> None:
    """Three panels against the step (symlog axis; the snapshots only): the validation score, and per kind of
    attention the mean over its heads of the entropy and of the distance (cross: from the diagonal)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    snaps = [r for r in results if r["step"] is not None]
    steps = [r["step"] for r in snaps]
    kinds = list(dict.fromkeys(h["kind"] for h in snaps[0]["heads"]))
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    axes[0].plot(steps, [r["score"] for r in snaps], "o-", color="black")
    axes[0].set_title(f"validation {snaps[0]['metric'] or 'score'}")
    for ax, (title, key) in zip(axes[1:], TABLES[:2], strict=True):
        for kind in kinds:
            means = [sum(h[key] for h in r["heads"] if h["kind"] == kind) for r in snaps]
            count = sum(h["kind"] == kind for h in snaps[0]["heads"])
            ax.plot(steps, [m / count for m in means], "o-", label=kind)
        ax.set_title(
            title.split(":")[0].split(";")[0]
            + ", mean over heads"
            + ("\n(cross: from the diagonal)" * (key == "distance_mean"))
        )
        ax.legend(fontsize=8)
    for ax in axes:
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from pipelines.models.snapshots import list_snapshots
    from transformer.hub import weight_files

    model, data = model_and_sample(args)
    snapshots = list_snapshots(model)
    if not snapshots:
        print(f"{model} has no snapshots (train with --snapshots N, then training.ship): measuring main only")
    n = len(next(iter(data.values())))
    print(f"{args.task}: {model}, {len(snapshots)} snapshots, {n} inputs (seed {args.seed})\n")
    # a training run's folder (runs/X) holds snapshots but no model of its own: its snapshots only
    own = [(None, None)] if not Path(model).is_dir() or weight_files(model) else []
    results = measure(args, model, [(s.revision, s) for s in snapshots] + own, data)
    print_tables(results)
    if args.json:
        Path(args.json).write_text(json.dumps({"task": args.task, "model": model, "snapshots": results}, indent=1))
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
