"""Here, after benchmarks/gpu/lm.sh: the run folder rebuilt from the parts lm_pack.py wrote (the best model in fp16, the
snapshots in int8, each snapshot given the best model's tokenizer back).

    python -m benchmarks.gpu.lm_unpack /work/.device/N/run.tar.* runs/lm-gpu
"""

import io
import shutil
import sys
import tarfile
from pathlib import Path


def main(parts: list[str], run: Path) -> None:
    blob = b"".join(Path(p).read_bytes() for p in sorted(parts, key=lambda p: int(p.rsplit(".", 1)[1])))
    run.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(run, filter="data")
    for snap in run.glob("snapshots/step-*"):
        shutil.copy(run / "best" / "tokenizer.json", snap / "tokenizer.json")
    print(f"{run}: best/ and {len(list(run.glob('snapshots/step-*')))} snapshots")


if __name__ == "__main__":
    main(sys.argv[1:-1], Path(sys.argv[-1]))
