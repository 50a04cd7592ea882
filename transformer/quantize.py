"""Weights in 8 bits, for bundling many copies of a model (training snapshots): every float matrix as int8 in
groups of GROUP consecutive values of a row, each group with one fp16 scale (absmax / 127, symmetric); vectors
(biases, LayerNorm) and the token embeddings (with a tied output layer: EMBEDDINGS) in fp16.

A quantized state dict keeps each matrix under its own name as int8, next to `<name>` + SCALE_SUFFIX: the scales,
shaped (..., groups per row), so a reader needs no other setting; `dequantize` turns them back into float32
tensors that load into the model as usual (hub.load_shards does it for every folder). About 1.03 bytes a
parameter instead of 2 for fp16; whether that is close enough is measured on the model it is used for
(benchmarks/snapshot_quantization.py: attention maps against fp16). On the translator, int8 embeddings put single
attention weights up to 0.015 from fp16; kept fp16, 0.007 (one scale per whole row or groups of 32 did not help).
"""

import re

import torch

SCALE_SUFFIX = ".int8_scale"
GROUP = 64  # values of a row sharing a scale; a row whose length it does not divide has one scale
# Token embeddings (and an output layer tied to them): every layer reads them, so their rounding reaches every head.
EMBEDDINGS = re.compile(r"(^|\.)(emb\w*|\w*_emb|\w*_embeddings?|lm_head)\.weight$")


def quantize_int8(state: dict[str, torch.Tensor], group: int = GROUP) -> dict[str, torch.Tensor]:
    """`state` with every floating-point tensor of 2 or more dims but the embeddings as int8 (groups of `group`
    values along its last dim) plus fp16 scales, every other floating-point tensor in fp16, the rest as it is."""
    out = {}
    for name, t in state.items():
        if not t.is_floating_point():
            out[name] = t
        elif t.dim() < 2 or EMBEDDINGS.search(name):
            out[name] = t.half()
        else:
            n = t.shape[-1]
            w = t.float().reshape(*t.shape[:-1], -1, group if n % group == 0 else n)  # (..., groups, size)
            scale = (w.abs().amax(dim=-1, keepdim=True) / 127).half().float().clamp_min(6e-8)  # as stored
            out[name] = (w / scale).round().clamp(-127, 127).to(torch.int8).reshape(t.shape).contiguous()
            out[name + SCALE_SUFFIX] = scale.squeeze(-1).half().contiguous()  # (..., groups)
    return out


def is_quantized(state: dict[str, torch.Tensor]) -> bool:
    """Whether `state` holds int8 matrices with row scales."""
    return any(name.endswith(SCALE_SUFFIX) for name in state)


def dequantize(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Each int8 matrix with its scales as float32 (q * its group's scale); every other tensor as it is."""
    scales = {name[: -len(SCALE_SUFFIX)]: t for name, t in state.items() if name.endswith(SCALE_SUFFIX)}
    out = {}
    for name, t in state.items():
        if name.endswith(SCALE_SUFFIX):
            continue
        if name in scales:
            scale = scales[name].float()  # (..., groups)
            t = (t.float().reshape(*scale.shape, -1) * scale[..., None]).reshape(t.shape)
        out[name] = t
    return out
