"""`python -m training.evaluate sentiment|translation --model DIR_OR_REPO --data FILE`.

FILE is Parquet, CSV or JSON lines with `text` (or SST-2's `sentence`) and `label` columns (sentiment) or
`de` and `en` (translation). Prints one JSON object with the scores on its last line: sentiment accuracy and
`ece` (expected calibration error of the probabilities the pipeline returns, 10 equal-width bins of top-class
confidence over 0.5-1); for both tasks `out_of_domain_rate`, the share of inputs the model flags as unlike
its training data (when its folder has out-of-domain statistics).
"""

import argparse
import json
import sys
import time

from tqdm.auto import tqdm


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m training.evaluate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="task", required=True)
    for task, cols in (("sentiment", "text (or sentence), label"), ("translation", "de, en"), ("lm", "text")):
        s = sub.add_parser(task, help=f"score a {task} model on a file with columns {cols}")
        s.add_argument("--model", required=True, help="model folder or Hub repo id")
        s.add_argument("--data", required=True, help=f".parquet, .csv or .jsonl file with columns {cols}")
        s.add_argument("--limit", type=int, default=None, help="score only the first N rows")
        s.add_argument("--batch-size", type=int, default=64)
        s.add_argument("--threads", type=int, default=None, help="torch CPU threads")
        if task == "translation":
            s.add_argument("--beam", type=int, default=None, help="beam size (default: the model's, 1 = greedy)")
            s.add_argument("--alpha", type=float, default=None, help="length penalty (default: the model's)")
            s.add_argument("--output", default=None, help="also write the translations to this text file")
    return p


def chunks(n: int, size: int):
    return [range(s, min(s + size, n)) for s in range(0, n, size)]


def sentiment_scores(pipe, texts: list[str], labels: list[int], batch_size: int = 64) -> dict:
    """Accuracy, ECE and out-of-domain rate of a SentimentPipeline (as it is calibrated) on labelled texts."""
    import torch

    from pipelines.trust.calibration import expected_calibration_error

    probs = []
    for part in tqdm(chunks(len(texts), 512), desc="sentiment", unit="chunk", file=sys.stderr):
        for p in pipe.predict([texts[i] for i in part], batch_size=batch_size):
            probs.append([p[lab] for lab in pipe.labels])
    probs_t, labels_t = torch.tensor(probs), torch.tensor([int(y) for y in labels])
    out = {
        "accuracy": float((probs_t.argmax(-1) == labels_t).float().mean()),
        "ece": round(expected_calibration_error(probs_t, labels_t), 5),
        "n": len(texts),
    }
    if pipe.domain is not None:
        out["out_of_domain_rate"] = sum(f for f, _ in pipe.domain_scores(texts)) / len(texts)
    return out


def evaluate_sentiment(model: str, ds, batch_size: int = 64) -> dict:
    from pipelines import SentimentPipeline

    pipe = SentimentPipeline.from_pretrained(model)
    return sentiment_scores(pipe, list(ds["text"]), list(ds["label"]), batch_size)


def evaluate_translation(
    model: str, ds, batch_size: int = 64, beam: int | None = None, alpha: float | None = None, output=None
) -> dict:
    from pipelines import TranslationPipeline
    from training.tasks.translation import corpus_scores

    pipe = TranslationPipeline.from_pretrained(model)
    beam = pipe.beam_size if beam is None else beam
    de, en = list(ds["de"]), list(ds["en"])
    scored: list = []
    for part in tqdm(chunks(len(de), 256), desc="translation", unit="chunk", file=sys.stderr):
        scored += pipe.translate_scored([de[i] for i in part], beam, alpha, batch_size)
    hyps = [s[0] for s in scored]
    if output:
        with open(output, "w") as f:
            f.write("\n".join(hyps) + "\n")
    out = {**corpus_scores(hyps, en), "beam": beam, "alpha": pipe.alpha if alpha is None else alpha}
    if pipe.domain is not None:
        out["out_of_domain_rate"] = sum(s[2] for s in scored) / len(scored)
    return out


def evaluate_next_word(model: str, ds, batch_size: int = 64) -> dict:
    from training.tasks.lm_eval import evaluate_lm

    return evaluate_lm(model, ds, batch_size)


# task -> (the file's columns, the scorer)
SCORERS = {
    "sentiment": (("text", "label"), evaluate_sentiment),
    "translation": (("de", "en"), evaluate_translation),
    "lm": (("text",), evaluate_next_word),
}


def evaluate(task: str, model: str, data: str, limit: int | None = None, **options) -> dict:
    """Scores of `model` (folder or repo id) on the file `data`: accuracy, ece and n (sentiment), or BLEU,
    chrF, n, beam and alpha (translation), and out_of_domain_rate when the model has out-of-domain statistics, or
    perplexity per token and per word (lm: training/tasks/lm_eval.py). `options`: batch_size, and for translation beam,
    alpha, output.

    Raises DataError for a bad file and CheckpointError for a model that does not load.
    """
    from training.engine.data import DataError, load_table

    columns, scorer = SCORERS[task]
    ds = load_table(data, columns, {"text": "sentence"})
    if limit:
        ds = ds.select(range(min(limit, len(ds))))
    if "label" in columns and not set(ds["label"]) <= {0, 1}:
        raise DataError(f"{data}: labels must be 0 (negative) or 1 (positive)")
    return scorer(model, ds, **options)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import torch

    from training.engine.data import DataError
    from transformer import CheckpointError

    if args.threads:
        torch.set_num_threads(args.threads)
    options = {"batch_size": args.batch_size}
    if args.task == "translation":
        options.update(beam=args.beam, alpha=args.alpha, output=args.output)
    t0 = time.time()
    try:
        result = evaluate(args.task, args.model, args.data, args.limit, **options)
    except (DataError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    result.update(model=args.model, data=args.data, seconds=round(time.time() - t0, 1))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
