"""Faithfulness of every explanation method on held-out data: ERASER comprehensiveness and sufficiency
(AOPC over the top 1, 5, 10, 20, 50% of tokens) against random rankings of the same tokens.

    python -m benchmarks.faithfulness --task sentiment --n 500
    python -m benchmarks.faithfulness --task translation --n 200

A fixed, seeded sample of the test split (IMDB test reviews; Multi30k test 2016 sentences) from
../shared/data. Prints per method the mean comprehensiveness and sufficiency with 95% intervals (mean
+- 1.96 standard errors), the share of inputs where the method beats random (its comprehensiveness minus
sufficiency is higher than that of random rankings), and seconds per input; then each method's time on
the app's 300-word review (or 15-word sentence). Writes everything as JSON (--out). With --write-default,
the method with the highest mean comprehensiveness - sufficiency becomes the app's default
(pipelines/default_methods.json), with the numbers that justify it.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from pipelines.explanations import DEFAULTS_FILE, default_method  # noqa: E402
from pipelines.explanations.faithfulness import (  # noqa: E402
    sentiment_input,
    timed,
    translation_input,
)
from pipelines.explanations.registry import MODEL_DEFAULT  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SOURCES = {
    "sentiment": ("assets/sentiment", DATA / "imdb" / "test.parquet", "text"),
    "translation": ("assets/translation", DATA / "multi30k" / "test.parquet", "de"),
}


def sample(path: Path, column: str, n: int, seed: int) -> list[str]:
    """n rows of `column`, drawn without replacement by a seeded generator (the same rows every run)."""
    import pyarrow.parquet as pq

    texts = pq.read_table(path, columns=[column]).column(column).to_pylist()
    rows = np.random.default_rng(seed).choice(len(texts), size=min(n, len(texts)), replace=False)
    return [texts[i] for i in sorted(rows)]


def interval(values: list[float]) -> tuple[float, float]:
    """(mean, half-width of the 95% interval: 1.96 standard errors)."""
    a = np.asarray(values, dtype=np.float64)
    return float(a.mean()), float(1.96 * a.std(ddof=1) / np.sqrt(len(a))) if len(a) > 1 else 0.0


def summarise(rows: list[dict], methods: list[str]) -> dict:
    """Per method (and random): mean comprehensiveness / sufficiency with 95% intervals, share beating
    random, seconds per input."""
    out = {}
    for m in [*methods, "random"]:
        got = [r["random"] if m == "random" else r["methods"][m] for r in rows]
        comp, suff = interval([f.comprehensiveness for f in got]), interval([f.sufficiency for f in got])
        score = interval([f.score for f in got])
        entry = {"comprehensiveness": comp, "sufficiency": suff, "comp_minus_suff": score}
        if m != "random":
            entry["beats_random"] = float(np.mean([f.score > r["random"].score for f, r in zip(got, rows)]))
            entry["seconds_per_input"] = statistics.mean(r["seconds"][m] for r in rows)
        out[m] = entry
    return out


def time_long_input(pipe, task: str, default: str, runs: int = 3) -> dict:
    """Median seconds per method on the app's benchmark input (a ~300-word review, a 15-word sentence), and
    for a review what a click costs the server: the prediction, then the `default` explanation."""
    from viz.examples import BENCH_GERMAN, BENCH_REVIEW

    text = BENCH_REVIEW if task == "sentiment" else BENCH_GERMAN
    out = {}
    for m in pipe.explanation_methods:
        if task == "sentiment":
            out[m] = statistics.median(timed(pipe.explain, text, m)[1] for _ in range(runs))
        else:
            out[m] = statistics.median(
                timed(lambda m=m: pipe.explain(text, m, result=pipe(text)))[1] for _ in range(runs)
            )
    if task == "sentiment":  # what the app does on a click: the prediction, then the default explanation
        from viz.explanations import explanation_panel
        from viz.sentiment.handlers import analyze_review

        def click():
            view = analyze_review(pipe, text)[0]
            return explanation_panel.explain(pipe, view, default)

        out[f"prediction_plus_{default}"] = statistics.median(timed(click)[1] for _ in range(max(runs, 5)))
    return {"words": len(text.split()), "seconds": out}


def table(summary: dict, n: int) -> str:
    """A Markdown table, methods sorted by comprehensiveness - sufficiency."""
    fmt = lambda v: f"{v[0]:.3f} ± {v[1]:.3f}"  # noqa: E731
    lines = [
        f"| method (n = {n}) | comprehensiveness ↑ | sufficiency ↓ | comp − suff ↑ | beats random | s / input |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for m, e in sorted(summary.items(), key=lambda kv: -kv[1]["comp_minus_suff"][0]):
        beats = f"{100 * e['beats_random']:.0f}%" if "beats_random" in e else "–"
        secs = f"{e['seconds_per_input']:.3f}" if "seconds_per_input" in e else "–"
        cells = [fmt(e["comprehensiveness"]), fmt(e["sufficiency"]), fmt(e["comp_minus_suff"]), beats, secs]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_default(task: str, summary: dict, n: int, command: str, seconds: dict, budget: float, model: Path) -> dict:
    """Make the most faithful method (highest mean comp - suff) among those that explain the benchmark input within
    `budget` seconds (`seconds`: time_long_input's) the default, saying why: in the model folder's metrics.json
    (what the app reads for that model) and, for the bundled model, in DEFAULTS_FILE."""
    methods = {m: e for m, e in summary.items() if m != "random" and seconds.get(m, 0.0) <= budget}
    best = max(methods, key=lambda m: methods[m]["comp_minus_suff"][0])
    e, r = methods[best], summary["random"]
    data = "IMDB test reviews" if task == "sentiment" else "Multi30k test sentences"
    why = (
        f"It is the most faithful method (highest mean comprehensiveness − sufficiency) on {n} held-out "
        f"{data} (`{command}`): comprehensiveness "
        f"{e['comprehensiveness'][0]:.3f} (random {r['comprehensiveness'][0]:.3f}), sufficiency "
        f"{e['sufficiency'][0]:.3f} (random {r['sufficiency'][0]:.3f}); it beats random on "
        f"{100 * e['beats_random']:.0f}% of them"
        + (f", among the methods that explain a 300-word review within {budget:g} s." if task == "sentiment" else ".")
    )
    chosen = {"method": best, "why": why}
    metrics_file = model / "metrics.json"
    if metrics_file.is_file():
        metrics = json.loads(metrics_file.read_text())
        metrics[MODEL_DEFAULT] = chosen
        metrics_file.write_text(json.dumps(metrics, indent=2) + "\n")
    if model.resolve() == (ROOT / SOURCES[task][0]).resolve():
        defaults = json.loads(DEFAULTS_FILE.read_text())
        defaults[task] = chosen
        DEFAULTS_FILE.write_text(json.dumps(defaults, indent=2, ensure_ascii=False) + "\n")
    return chosen


def run(args) -> dict:
    from pipelines.tasks import TASKS

    model, data, column = SOURCES[args.task]
    cls = TASKS[args.task].pipeline
    pipe = cls.from_pretrained(args.model or str(ROOT / model))
    texts = sample(Path(args.data or data), column, args.n, args.seed)
    one = sentiment_input if args.task == "sentiment" else translation_input
    rows, start = [], time.perf_counter()
    for i, text in enumerate(texts):
        rows.append(one(pipe, text, args.seed + i))
        if (i + 1) % 10 == 0 or i + 1 == len(texts):
            print(f"  {i + 1}/{len(texts)} inputs, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    summary = summarise(rows, list(pipe.explanation_methods))
    out = {"task": args.task, "n": len(texts), "seed": args.seed, "summary": summary}
    if args.task == "translation":
        out["mean_head_agreement_integrated_gradients"] = np.mean([r["agreement"] for r in rows], axis=0).tolist()
    best = max(pipe.explanation_methods, key=lambda m: summary[m]["comp_minus_suff"][0])
    default = best if args.write_default else default_method(args.task)["method"]
    out["long_input"] = time_long_input(pipe, args.task, default)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=sorted(SOURCES), required=True)
    parser.add_argument("--n", type=int, default=100, help="inputs sampled from the test split")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", help="model folder or Hub repo id (default: the bundled one in assets/)")
    parser.add_argument("--data", help="Parquet file (default: the test split in ../shared/data)")
    parser.add_argument("--out", type=Path, help="JSON output (default: benchmarks/results/faithfulness_TASK.json)")
    parser.add_argument(
        "--write-default",
        action="store_true",
        help="make the most faithful method within --budget-s the model's default (its metrics.json; for the bundled "
        "model also pipelines/explanations/default_methods.json)",
    )
    parser.add_argument("--budget-s", type=float, default=3.0, help="sentiment: the default explains a 300-word "
                        "review within this many seconds (default %(default)s)")  # fmt: skip
    args = parser.parse_args(argv)
    out = run(args)
    print(table(out["summary"], out["n"]))
    long = out["long_input"]
    unit = "review" if args.task == "sentiment" else "sentence"
    print(f"\nseconds per method on the app's {long['words']}-word {unit} (median):")
    print("  " + ", ".join(f"{m} {s:.3f}" for m, s in long["seconds"].items()))
    if args.write_default:
        command = f"python -m benchmarks.faithfulness --task {args.task} --n {args.n}"
        model = Path(args.model or ROOT / SOURCES[args.task][0])
        budget = args.budget_s if args.task == "sentiment" else float("inf")
        out["default"] = write_default(args.task, out["summary"], out["n"], command, long["seconds"], budget, model)
        print(f"\ndefault method: {out['default']['method']}. {out['default']['why']}")
    path = args.out or ROOT / "benchmarks" / "results" / f"faithfulness_{args.task}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
