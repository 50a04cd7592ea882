"""Calibration and out-of-domain flags of a model folder, measured on labelled data and the hand-written OOD sets.

    python -m benchmarks.calibration sentiment --model assets/sentiment \\
        --data ../shared/data/sst2/validation.parquet ../shared/data/imdb/test.parquet \\
        --diagram assets/reliability-sentiment.png
    python -m benchmarks.calibration translation --model assets/translation --data ../shared/data/multi30k/test.parquet

Prints, per data file, accuracy and the ECE (10 equal-width bins over 0.5-1) of the raw probabilities
(temperature 1) and of the calibrated ones (sentiment), and the share flagged out of domain; then the share
flagged on benchmarks/ood/<task>_ood.jsonl (hand-written inputs the models were never meant for), per kind.
"""

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sample(ds, n: int | None, seed: int = 0):
    return ds if not n or n >= len(ds) else ds.shuffle(seed=seed).select(range(n))


def sentiment_rows(pipe, files: list[str], n: int | None, batch_size: int) -> tuple[list, list]:
    """(table rows, reliability data per file) on labelled files."""
    import torch

    from pipelines.trust.calibration import reliability
    from training.engine.data import load_table

    rows, diagrams = [], []
    for path in files:
        ds = sample(load_table(path, ("text", "label"), {"text": "sentence"}), n)
        texts, labels = list(ds["text"]), torch.tensor(list(ds["label"]))
        t0 = time.time()
        logits, lengths = pipe.raw_logits(texts, batch_size)
        before = reliability(logits.softmax(-1), labels)
        after = reliability(pipe.calibration.scale(logits, lengths).softmax(-1), labels)
        flagged = sum(f for f, _ in pipe.domain_scores(texts)) if pipe.domain else None
        acc = float((logits.argmax(-1) == labels).float().mean())
        rows.append((Path(path).parent.name + "/" + Path(path).name, len(texts), acc, before.ece, after.ece, flagged))
        diagrams.append((rows[-1][0], before, after))
        print(f"  {path}: {time.time() - t0:.0f} s", file=sys.stderr)
    return rows, diagrams


def translation_rows(pipe, files: list[str], n: int | None, batch_size: int) -> list:
    from training.engine.data import load_table

    rows = []
    for path in files:
        de = list(sample(load_table(path, ("de",)), n)["de"])
        scored = pipe.translate_scored(de, batch_size=batch_size)
        rows.append(
            (Path(path).parent.name + "/" + Path(path).name, len(de), None, None, None, sum(s[2] for s in scored))
        )
    return rows


def ood_rates(pipe, task: str, path: Path) -> dict[str, tuple[int, int]]:
    """kind -> (flagged, total) on a hand-written out-of-domain set."""
    items = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    key = "text" if task == "sentiment" else "de"
    texts = [it[key] for it in items]
    flags = (
        [f for f, _ in pipe.domain_scores(texts)]
        if task == "sentiment"
        else [s[2] for s in pipe.translate_scored(texts)]
    )
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for it, f in zip(items, flags):
        out[it["kind"]][0] += int(f)
        out[it["kind"]][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def draw(diagrams: list, out: Path) -> None:
    """Reliability diagrams before / after calibration, one panel per data file (matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(diagrams), figsize=(5 * len(diagrams), 4.6), squeeze=False)
    for ax, (name, before, after) in zip(axes[0], diagrams):
        ax.plot([0.5, 1], [0.5, 1], "--", color="grey", lw=1, label="perfect calibration")
        for rel, label, color in ((before, "raw", "#d62728"), (after, "calibrated", "#1f77b4")):
            pts = [(c, a) for c, a in zip(rel.confidence, rel.accuracy) if c is not None]
            ax.plot(*zip(*pts), "o-", color=color, label=f"{label} (ECE {rel.ece:.3f})")
        ax.set(title=name, xlabel="confidence (top class)", ylabel="accuracy", xlim=(0.5, 1), ylim=(0.3, 1.0))
        ax.legend(loc="upper left", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("task", choices=["sentiment", "translation"])
    p.add_argument("--model", required=True)
    p.add_argument("--data", nargs="*", default=[], help="labelled in-domain files (never fitted on)")
    p.add_argument("--ood", type=Path, default=None, help="default: benchmarks/ood/<task>_ood.jsonl")
    p.add_argument("--n", type=int, default=None, help="a seeded sample of N rows per file")
    p.add_argument("--diagram", type=Path, default=None, help="write reliability diagrams (PNG) here")
    p.add_argument("--batch-size", type=int, default=64)
    a = p.parse_args(argv)
    from pipelines.tasks import TASKS

    pipe = TASKS[a.task].pipeline.from_pretrained(a.model)
    if a.task == "sentiment":
        rows, diagrams = sentiment_rows(pipe, a.data, a.n, a.batch_size)
        if a.diagram:
            draw(diagrams, a.diagram)
        print(f"temperature {pipe.calibration}")
    else:
        rows = translation_rows(pipe, a.data, a.n, a.batch_size)
    print("| data | n | accuracy | ECE raw | ECE calibrated | flagged out of domain |\n|---|---|---|---|---|---|")
    fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
    for name, n, acc, e0, e1, flagged in rows:
        share = "-" if flagged is None else f"{flagged / n:.1%} ({flagged})"
        print(f"| {name} | {n:,} | {fmt(acc, '.2%')} | {fmt(e0, '.3f')} | {fmt(e1, '.3f')} | {share} |")
    ood = ood_rates(pipe, a.task, a.ood or ROOT / "benchmarks" / "ood" / f"{a.task}_ood.jsonl")
    flagged, total = sum(v[0] for v in ood.values()), sum(v[1] for v in ood.values())
    print("\n| out-of-domain set | n | flagged |\n|---|---|---|")
    for kind, (f, t) in ood.items():
        print(f"| {kind} | {t} | {f / t:.0%} ({f}) |")
    print(f"| **all** | {total} | **{flagged / total:.1%}** ({flagged}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
