"""There, first: .gpu/ (benchmarks/gpu/pack.py) into plain folders: DEST/minilm, DEST/imdb, DEST/sst2.

python3 -m benchmarks.gpu.unpack .gpu /tmp/gpu
"""

import json
import lzma
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def main() -> None:
    src, dest = Path(sys.argv[1]), Path(sys.argv[2])
    for sub in ("minilm", "imdb", "sst2"):
        (dest / sub).mkdir(parents=True, exist_ok=True)
    for f in (src / "minilm").iterdir():
        if f.suffix == ".xz":
            with lzma.open(f, "rb") as g, open(dest / "minilm" / f.stem, "wb") as h:
                shutil.copyfileobj(g, h)
        else:
            shutil.copy2(f, dest / "minilm" / f.name)
    for split in ("train", "test"):
        with lzma.open(src / f"imdb-{split}.json.xz", "rt") as f:
            pq.write_table(pa.table(json.load(f)), dest / "imdb" / f"{split}.parquet")
    for split in ("train", "validation"):
        shutil.copy2(src / f"sst2-{split}.parquet", dest / "sst2" / f"{split}.parquet")
    for f in sorted(dest.rglob("*")):
        if f.is_file():
            print(f"{f.stat().st_size:>12,}  {f}")


if __name__ == "__main__":
    main()
