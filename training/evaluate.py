"""`python -m training.evaluate sentiment|translation|lm --model DIR_OR_REPO --data FILE`.

FILE is Parquet, CSV or JSON lines with `text` (or SST-2's `sentence`) and `label` columns (sentiment),
`de` and `en` (translation) or `text` (lm): each task's columns and scorer are its entry in training/tasks/table.py
(the scorers: training/tasks/scoring.py). Prints one JSON object with the scores on its last line: sentiment accuracy
and `ece` (expected calibration error of the probabilities the pipeline returns, 10 equal-width bins of top-class
confidence over 0.5-1); for sentiment and translation `out_of_domain_rate`, the share of inputs the model flags as
unlike its training data (when its folder has out-of-domain statistics).
"""

import argparse
import json
import sys
import time

from training.tasks.table import TRAINING_TASKS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m training.evaluate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="task", required=True)
    for task in TRAINING_TASKS.values():
        cols = task.evaluation.described
        s = sub.add_parser(task.name, help=f"score a {task.name} model on a file with columns {cols}")
        s.add_argument("--model", required=True, help="model folder or Hub repo id")
        s.add_argument("--data", required=True, help=f".parquet, .csv or .jsonl file with columns {cols}")
        s.add_argument("--limit", type=int, default=None, help="score only the first N rows")
        s.add_argument("--batch-size", type=int, default=64)
        s.add_argument("--threads", type=int, default=None, help="torch CPU threads")
        if task.task.decodes:
            s.add_argument("--beam", type=int, default=None, help="beam size (default: the model's, 1 = greedy)")
            s.add_argument("--alpha", type=float, default=None, help="length penalty (default: the model's)")
            s.add_argument("--output", default=None, help="also write the translations to this text file")
    return p


def evaluate(task: str, model: str, data: str, limit: int | None = None, **options) -> dict:
    """Scores of `model` (folder or repo id) on the file `data`: accuracy, ece and n (sentiment), or BLEU,
    chrF, n, beam and alpha (translation), and out_of_domain_rate when the model has out-of-domain statistics, or
    perplexity per token and per word (lm: training/tasks/lm_eval.py). `options`: batch_size, and for translation beam,
    alpha, output.

    Raises DataError for a bad file and CheckpointError for a model that does not load.
    """
    from training.engine.data import DataError, load_table

    spec = TRAINING_TASKS[task].evaluation
    ds = load_table(data, spec.columns, {"text": "sentence"})
    if limit:
        ds = ds.select(range(min(limit, len(ds))))
    if "label" in spec.columns and not set(ds["label"]) <= {0, 1}:
        raise DataError(f"{data}: labels must be 0 (negative) or 1 (positive)")
    return spec.score(model, ds, **options)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import torch

    from training.engine.data import DataError
    from transformer import CheckpointError

    if args.threads:
        torch.set_num_threads(args.threads)
    options = {"batch_size": args.batch_size}
    if TRAINING_TASKS[args.task].task.decodes:
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
