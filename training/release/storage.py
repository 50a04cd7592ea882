"""How a model's weights are stored in a bundle (training.ship) or a snapshot's branch (training.publish): fp16, int8,
or int8 differences from the bundled model's weights (transformer/quantize.py), in files under the size limit."""

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from transformer.hub import DELTA_BASE, DELTA_BASE_SHA256, read_weights, weight_files, weights_sha256
from transformer.quantize import quantize_int8

MAX_FILE_BYTES = 25 * 1024 * 1024


@dataclass(frozen=True)
class Storage:
    """One way of storing bundled weights: `convert(tensors, base)` gives the tensors to write (base: the float
    weights of the model a snapshot is bundled with, for the storages that need it)."""

    convert: Callable[[dict, dict | None], dict]
    described: str  # what metrics.json says of the bundled snapshots' weights
    needs_base: bool = False


STORAGES = {
    "fp16": Storage(lambda t, base: {k: v.half() if v.is_floating_point() else v for k, v in t.items()},
                    "fp16 safetensors (loaded into fp32)"),
    "int8": Storage(lambda t, base: quantize_int8(t), "int8 in groups of 64 with fp16 scales; vectors and token "
                    "embeddings in fp16 (transformer/quantize.py; loaded into fp32)"),
    "int8-delta": Storage(lambda t, base: quantize_int8(t, base=base), "int8 differences from the bundled model's "
                          "weights in groups of 64 with fp16 scales, vectors in fp16 (transformer/quantize.py; loaded "
                          "into fp32 with the model's weights added)", needs_base=True),
}  # fmt: skip


def write_weights(
    src: Path, dst: Path, max_file_bytes: int = MAX_FILE_BYTES, dtype: str = "fp16", base: Path | None = None
) -> None:
    """src's weights in fp16 (or `dtype`, a key of STORAGES; "int8-delta" stores them as differences from the
    weights of the model folder `base`) in dst: one model.safetensors, or shards of at most `max_file_bytes` each
    with a model.safetensors.index.json when the model is larger (a 4 x 512 encoder is about 40 MB in fp16)."""
    from huggingface_hub import save_torch_state_dict

    storage, metadata, base_weights = STORAGES[dtype], {"format": "pt"}, None
    if storage.needs_base:
        base_weights = read_weights(weight_files(base))
        metadata |= {DELTA_BASE: os.path.relpath(base, dst), DELTA_BASE_SHA256: weights_sha256(base)}
    save_torch_state_dict(
        storage.convert(read_weights(weight_files(src)), base_weights),
        dst,
        max_shard_size=int(max_file_bytes * 0.9),  # the limit counts tensor bytes; headers come on top
        metadata=metadata,
    )
