"""What each head does over a seeded test sample, and how many heads the model can lose.

    python -m benchmarks.heads --task sentiment --n 300
    python -m benchmarks.heads --task translation --n 300 [--beam 4]

For every sampled input the pipeline's head table is measured (pipelines.attention.heads: each head's attention
statistics and its effect when switched off alone). Prints, per head, the mean and spread of the effect and
the entropy, and the mean of the other statistics; then switches off the k heads with the smallest mean
|effect| (k = 1, 2, 4, ... up to every head) and scores the sample again: accuracy for sentiment, BLEU
(lowercased sacreBLEU) for translation. Models come from --model (default: the bundled ones); data from
--data (default: the test split in ../shared/data). --json FILE writes everything.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from training.engine.data import seeded_sample  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

DEFAULTS = {
    "sentiment": ("assets/sentiment", "../shared/data/imdb/test.parquet", ("text", "label")),
    "translation": ("assets/translation", "../shared/data/multi30k/test.parquet", ("de", "en")),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", choices=sorted(DEFAULTS), required=True)
    p.add_argument("--n", type=int, default=300, help="inputs in the seeded sample of the test split")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default=None, help="model folder or Hub repo id (default: the bundled model)")
    p.add_argument("--data", default=None, help="test file (default: the test split under ../shared/data)")
    p.add_argument("--beam", type=int, default=None, help="translation: beam size (default: the model's)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--json", default=None, help="write the results to this JSON file")
    return p


def model_and_sample(args) -> tuple[str, dict[str, list]]:
    """What a run over --task reads (here and in heads_through_training.py): the model (--model, or the bundled
    one) and the seeded sample of --data (or the test split); sets --threads first."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    default_model, data_path, columns = DEFAULTS[args.task]
    model = args.model or str(ROOT / default_model)
    return model, seeded_sample(args.data or str(ROOT / data_path), columns, args.n, args.seed)


def k_values(n_heads: int) -> list[int]:
    ks, k = [], 1
    while k < n_heads:
        ks.append(k)
        k *= 2
    return ks + [n_heads]


def score(task: str, pipe, data: dict, mask, beam: int | None) -> float:
    """Accuracy (sentiment) or lowercased BLEU (translation) on the sample, with the masked heads off."""
    if task == "sentiment":
        probs = pipe.predict(data["text"], head_mask=mask)
        hits = [max(p, key=p.get) == pipe.labels[int(y)] for p, y in zip(probs, data["label"])]
        return 100.0 * sum(hits) / len(hits)
    import sacrebleu

    hyps = pipe.translate(data["de"], beam_size=beam, head_mask=mask)
    return sacrebleu.corpus_bleu(hyps, [data["en"]], lowercase=True).score


def head_tables(task: str, pipe, data: dict, beam: int | None) -> tuple[list[list[dict]], float]:
    """(head table per input, seconds per input)."""
    texts = data["text"] if task == "sentiment" else data["de"]
    start = time.perf_counter()
    tables = []
    for i, text in enumerate(texts):
        if task == "sentiment":
            tables.append(pipe.head_table(text))
        else:
            tables.append(pipe.head_table(text, beam_size=beam, agreement=False))
        if (i + 1) % 10 == 0:
            print(f"  {i + 1}/{len(texts)} head tables", file=sys.stderr, flush=True)
    return tables, (time.perf_counter() - start) / len(texts)


def print_heads(summary: list[dict], task: str) -> None:
    unit = "Δ P(predicted label)" if task == "sentiment" else "Δ log-prob of the translation"
    print(
        f"\n| head | effect mean ({unit}) | effect std | mean abs effect | entropy mean | entropy std "
        "| distance | on previous | on itself | on end | on punctuation |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    fmt = lambda v: "–" if v is None else f"{v:.3f}"  # noqa: E731
    for r in sorted(summary, key=lambda r: r["effect_mean"]):
        name = f"{r['kind']} L{r['layer'] + 1} H{r['head'] + 1}"
        cells = [r["effect_mean"], r["effect_std"], r["abs_effect_mean"], r["entropy_mean"], r["entropy_std"]]
        cells += [r[f"{s}_mean"] for s in ("distance", "previous", "itself", "end", "punctuation")]
        print(f"| {name} | " + " | ".join(fmt(v) for v in cells) + " |")


def prune(task: str, pipe, data: dict, summary: list[dict], beam: int | None) -> list[dict]:
    """Score with the k least effective heads off, for k = 0, 1, 2, 4, ... every head."""
    from pipelines.attention.heads import least_effective

    metric = "accuracy %" if task == "sentiment" else "BLEU"
    results, prev = [], 0
    for k in [0, *k_values(len(summary))]:
        mask = least_effective(summary, k)
        value = score(task, pipe, data, mask or None, beam)
        results.append({"k": k, metric: value, "heads_off": [list(key) for key in mask]})
        names = ", ".join(f"{kind} L{layer + 1} H{head + 1}" for kind, layer, head in list(mask)[prev:])
        print(f"| {k} | {value:.2f} | {names or '(intact)'} |", flush=True)
        prev = k
    return results


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from pipelines.attention.heads import summarize_tables
    from pipelines.tasks import TASKS

    model, data = model_and_sample(args)
    cls = TASKS[args.task].pipeline
    pipe = cls.from_pretrained(model)
    print(f"{args.task}: {model}, {len(next(iter(data.values())))} inputs sampled with seed {args.seed}", flush=True)
    tables, per_input = head_tables(args.task, pipe, data, args.beam)
    summary = summarize_tables(tables)
    print(f"head tables: {per_input:.3f} s per input", end="")
    print_heads(summary, args.task)
    metric = "accuracy %" if args.task == "sentiment" else "BLEU"
    print(f"\nSwitching off the k heads with the smallest mean |effect|:\n\n| k | {metric} | last heads added |")
    print("| ---: | ---: | --- |")
    pruning = prune(args.task, pipe, data, summary, args.beam)
    if args.json:
        out = {"task": args.task, "model": model, "n": len(tables), "seed": args.seed, "beam": args.beam}
        out.update({"seconds_per_input": per_input, "heads": summary, "pruning": pruning})
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
