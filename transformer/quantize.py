"""Weights in 8 bits, for bundling many copies of a model (training snapshots): every float matrix as int8 rows
with one fp16 scale per row (absmax / 127, symmetric), vectors (biases, LayerNorm) in fp16.

A quantized state dict keeps each matrix under its own name as int8, next to `<name>` + SCALE_SUFFIX; `dequantize`
turns it back into float32 tensors that load into the model as usual (hub.load_shards does it for every folder).
About 1 byte a parameter instead of 2 for fp16; whether that is close enough is measured on the model it is used
for (benchmarks/snapshot_quantization.py: attention maps against fp16).
"""

import torch

SCALE_SUFFIX = ".int8_row_scale"


def quantize_int8(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`state` with every floating-point tensor of 2 or more dims as int8 rows (over its last dim) plus fp16 row
    scales, every other floating-point tensor in fp16, the rest as it is."""
    out = {}
    for name, t in state.items():
        if not t.is_floating_point():
            out[name] = t
        elif t.dim() < 2:
            out[name] = t.half()
        else:
            w = t.float()
            scale = (w.abs().amax(dim=-1, keepdim=True) / 127).clamp_min(1e-12)  # (..., 1)
            scale = scale.half().float().clamp_min(6e-8)  # the scale as stored, so rounding uses what loads
            out[name] = (w / scale).round().clamp(-127, 127).to(torch.int8).contiguous()
            out[name + SCALE_SUFFIX] = scale.half().contiguous()
    return out


def is_quantized(state: dict[str, torch.Tensor]) -> bool:
    """Whether `state` holds int8 matrices with row scales."""
    return any(name.endswith(SCALE_SUFFIX) for name in state)


def dequantize(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Each int8 matrix with a row scale as float32 (q * scale); every other tensor as it is."""
    scales = {name[: -len(SCALE_SUFFIX)]: t for name, t in state.items() if name.endswith(SCALE_SUFFIX)}
    out = {}
    for name, t in state.items():
        if name.endswith(SCALE_SUFFIX):
            continue
        out[name] = t.float() * scales[name].float() if name in scales else t
    return out
