"""`python -m training.pseudolabel --model DIR --data FILE --out FILE.jsonl`: a teacher's soft labels.

Self-training (Yarowsky 1995; "noisy student", Xie et al. 2020) in its simplest form: a trained sentiment
model reads unlabelled texts (IMDB's 50,000 `unsupervised` reviews) and writes, for each, the probability it
gives the positive label. `python -m training sentiment --pseudo-labels FILE` then trains a fresh model on
the labelled data plus these texts, with the teacher's probability as a soft target. The teacher's
probabilities are the pipeline's (calibrated) ones. Rows are written as JSON lines {text, p_positive};
the file is written under a temporary name and renamed when complete.
"""

import argparse
import json
import sys
from pathlib import Path

from tqdm.auto import tqdm

from training.engine.checkpoint import atomic_write_text


def soft_labels(predict, texts: list[str], chunk: int = 512) -> list[float]:
    """P(positive) for each text from predict(texts) -> [{label: probability}], in chunks with a progress bar."""
    out: list[float] = []
    for start in tqdm(range(0, len(texts), chunk), desc="pseudo-labels", unit="chunk", file=sys.stderr):
        out += [p["positive"] for p in predict(texts[start : start + chunk])]
    return out


def write_jsonl(path: Path, texts: list[str], probs: list[float]) -> None:
    rows = (json.dumps({"text": t, "p_positive": round(p, 5)}) + "\n" for t, p in zip(texts, probs))
    atomic_write_text(path, "".join(rows))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.pseudolabel", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="the teacher: a sentiment model folder or Hub repo id")
    p.add_argument("--data", required=True, help="texts to label: .parquet, .csv or .jsonl with a `text` column")
    p.add_argument("--out", required=True, help="JSON lines to write: {text, p_positive}")
    p.add_argument("--limit", type=int, default=None, help="label only the first N texts")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = p.parse_args(argv)
    import torch

    from pipelines import SentimentPipeline
    from training.engine.data import DataError, load_table
    from transformer import CheckpointError

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        pipe = SentimentPipeline.from_pretrained(args.model)
        texts = [str(t) for t in load_table(args.data, ("text",))["text"]][: args.limit]
    except (CheckpointError, DataError, OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    probs = soft_labels(pipe.predict, texts)
    write_jsonl(Path(args.out), texts, probs)
    positive = sum(q > 0.5 for q in probs)
    print(json.dumps({"texts": len(texts), "positive": positive, "out": args.out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
