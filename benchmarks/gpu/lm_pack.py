"""On the GPU machine, after benchmarks/gpu/lm.sh trained: the run folder packed for the trip back (at most 8 files of
16 MiB, 64 MiB together): the best model's weights in fp16, each snapshot's in int8 (transformer/quantize.py), every
head's induction score at every snapshot (induction.json), and the run's small files, in tar parts of 15 MiB.

    python -m benchmarks.gpu.lm_pack RUN OUT      (benchmarks/gpu/lm_unpack.py PARTS... RUN undoes it)
"""

import io
import json
import sys
import tarfile
from pathlib import Path

import torch
from safetensors.torch import save

from pipelines.attention.head_roles import induction_scores
from transformer import CausalLM
from transformer.quantize import quantize_int8

PART = 15 * 2**20
KEEP = 6  # snapshots brought back (all are scored): the first, the last and four spread between, by index


def kept(run: Path) -> set[str]:
    steps = sorted(run.glob("snapshots/step-*"), key=lambda p: int(p.name.split("-")[1]))
    if len(steps) <= KEEP:
        return {p.name for p in steps}
    return {steps[round(i * (len(steps) - 1) / (KEEP - 1))].name for i in range(KEEP)}


def weights(folder: Path, int8: bool) -> bytes:
    model = CausalLM.from_pretrained(folder)
    state = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    return save(quantize_int8(state) if int8 else {k: v.half() for k, v in state.items()})


def induction(run: Path) -> dict:
    """{step: (L, H) induction scores} of every snapshot and the best model."""
    out = {}
    for folder in sorted(run.glob("snapshots/step-*"), key=lambda p: int(p.name.split("-")[1])) + [run / "best"]:
        model = CausalLM.from_pretrained(folder).to("cuda" if torch.cuda.is_available() else "cpu")
        out[folder.name] = induction_scores(model, batch=16).tolist()
    return out


def main(run: Path, out: Path) -> None:
    buf = io.BytesIO()
    keep = kept(run)
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for f in sorted(run.rglob("*")):
            rel = f.relative_to(run)
            if not f.is_file() or rel.parts[0] in ("corpus", "recent") or f.name == "checkpoint.pt":
                continue
            if rel.parts[0] == "snapshots" and (rel.parts[1] not in keep or f.name in ("tokenizer.json", "README.md")):
                continue  # the tokenizer is the best model's (lm_unpack.py copies it back)
            if f.name == "model.safetensors":
                data = weights(f.parent, int8=rel.parts[0] == "snapshots")
            else:
                data = f.read_bytes()
            info = tarfile.TarInfo(str(rel))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        data = json.dumps(induction(run)).encode()
        info = tarfile.TarInfo("induction.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    blob = buf.getvalue()
    for i in range(0, len(blob), PART):
        (out / f"run.tar.{i // PART}").write_bytes(blob[i : i + PART])
    print(f"{len(blob) / 2**20:.1f} MiB in {(len(blob) + PART - 1) // PART} parts")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
