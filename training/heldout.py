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

from training.tasks.sentiment import full_sentences, split_indices


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
    val, train = split_indices(len(imdb), a.val_size, a.seed)  # as SentimentTask draws them
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
