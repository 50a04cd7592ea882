"""`python -m training.heldout --imdb-dir DIR --sst2-dir DIR --out DIR`: the held-out files for calibration.

Writes, as Parquet files with `text` and `label` columns:

- `imdb_train.parquet` / `imdb_validation.parquet`: IMDB train split into the 22,500 reviews the shipped
  sentiment model was trained on and the 2,500 it held out (the same seeded draw as `python -m training
  sentiment`, seed 0): the model never saw the validation reviews.
- `sst2_sentences.parquet` (with `--sst2-dir`): a seeded sample of SST-2 *train*'s full sentences. SST-2
  train also lists every sub-phrase of its sentences ("kids , spirit"); SST-2 validation holds whole
  sentences only, so the sample keeps the phrases that are not part of a longer one. SST-2 validation stays
  untouched as the report set.

`python -m training.calibrate` fits the temperature and the out-of-domain threshold on the held-out files
and counts the training tokens in imdb_train.parquet.
"""

import argparse
import random
import sys
from pathlib import Path


def imdb_split(n: int, seed: int = 0, val_size: int = 2500) -> tuple[list[int], list[int]]:
    """(validation rows, training rows) of an n-review train split, drawn exactly as SentimentTask does."""
    idx = list(range(n))
    random.Random(seed).shuffle(idx)
    n_val = min(val_size, n // 5) if val_size else 0
    return idx[:n_val], idx[n_val:]


def full_sentences(phrases: list[str]) -> list[int]:
    """Indices of the phrases that are not a word-aligned part of another phrase (SST's whole sentences)."""
    words = [p.split() for p in phrases]
    known = {" ".join(w) for w in words}
    contained: set[str] = set()
    for w in words:  # every proper word span of a phrase that is itself a listed phrase
        for a in range(len(w)):
            for b in range(a + 1, len(w) + 1):
                if b - a < len(w) and (span := " ".join(w[a:b])) in known:
                    contained.add(span)
    return [i for i, w in enumerate(words) if w and " ".join(w) not in contained]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m training.heldout", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--imdb-dir", type=Path, required=True, help="folder with IMDB train.parquet")
    p.add_argument("--sst2-dir", type=Path, default=None, help="folder with SST-2 train.parquet")
    p.add_argument("--out", type=Path, required=True, help="folder for the Parquet files")
    p.add_argument("--seed", type=int, default=0, help="the training run's --seed (default %(default)s)")
    p.add_argument("--val-size", type=int, default=2500, help="the training run's --val-size (default %(default)s)")
    p.add_argument("--sst2-sample", type=int, default=2500, help="SST-2 sentences to keep (default %(default)s)")
    a = p.parse_args(argv)

    import pandas as pd

    try:
        imdb = pd.read_parquet(a.imdb_dir / "train.parquet", columns=["text", "label"])
        sst = pd.read_parquet(a.sst2_dir / "train.parquet", columns=["sentence", "label"]) if a.sst2_dir else None
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    val, train = imdb_split(len(imdb), a.seed, a.val_size)
    imdb.iloc[train].to_parquet(a.out / "imdb_train.parquet", index=False)
    imdb.iloc[val].to_parquet(a.out / "imdb_validation.parquet", index=False)
    print(f"{a.out}/imdb_train.parquet: {len(train)} reviews; imdb_validation.parquet: {len(val)}")
    if sst is not None:
        roots = full_sentences(sst["sentence"].tolist())
        random.Random(a.seed).shuffle(roots)
        keep = sorted(roots[: a.sst2_sample])
        sample = sst.iloc[keep].rename(columns={"sentence": "text"})
        sample.to_parquet(a.out / "sst2_sentences.parquet", index=False)
        print(f"{a.out}/sst2_sentences.parquet: {len(keep)} of {len(roots)} full sentences of SST-2 train")
    return 0


if __name__ == "__main__":
    sys.exit(main())
