"""Weights in 8 bits, for bundling many copies of a model (training snapshots): every float matrix as int8 in
groups of GROUP consecutive values of a row, each group with one fp16 scale (absmax / 127, symmetric); vectors
(biases, LayerNorm) and the token embeddings (with a tied output layer: EMBEDDINGS) in fp16.

A quantized state dict keeps each matrix under its own name as int8, next to `<name>` + SCALE_SUFFIX: the scales,
shaped (..., groups per row), so a reader needs no other setting; `dequantize` turns them back into float32
tensors that load into the model as usual (hub.load_shards does it for every folder). About 1.03 bytes a
parameter instead of 2 for fp16; whether that is close enough is measured on the model it is used for
(benchmarks/snapshot_quantization.py: attention maps against fp16). On the translator, int8 embeddings put single
attention weights up to 0.015 from fp16; kept fp16, 0.007 (one scale per whole row or groups of 32 did not help).

A snapshot bundled with its trained model can be stored as a *difference* from it (`quantize_int8(state,
base=...)`): every float matrix, the embeddings too, as int8 of (snapshot - base), scales under DELTA_SUFFIX. The
rounding then scales with how far the snapshot is from the model rather than with the weights themselves, so late
snapshots come out several times closer, at the size of int8 throughout; `dequantize(state, base)` adds the base
back (transformer/hub.py finds it from the file's metadata).
"""

import re

import torch

SCALE_SUFFIX = ".int8_scale"
DELTA_SUFFIX = ".int8_delta_scale"  # the int8 tensor holds (weights - base weights)
GROUP = 64  # values of a row sharing a scale; a row whose length it does not divide has one scale
# Token embeddings (and an output layer tied to them): every layer reads them, so their rounding reaches every head.
EMBEDDINGS = re.compile(r"(^|\.)(emb\w*|\w*_emb|\w*_embeddings?|lm_head)\.weight$")


def _int8(t: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 values shaped like t, fp16 scales (..., groups per row)) of a float matrix, groups of `group` values of
    its last dim (one group a row when `group` does not divide it), each scaled by its absmax / 127."""
    n = t.shape[-1]
    w = t.float().reshape(*t.shape[:-1], -1, group if n % group == 0 else n)  # (..., groups, size)
    scale = (w.abs().amax(dim=-1, keepdim=True) / 127).half().float().clamp_min(6e-8)  # as stored
    q = (w / scale).round().clamp(-127, 127).to(torch.int8).reshape(t.shape).contiguous()
    return q, scale.squeeze(-1).half().contiguous()


def quantize_int8(
    state: dict[str, torch.Tensor], group: int = GROUP, base: dict[str, torch.Tensor] | None = None
) -> dict[str, torch.Tensor]:
    """`state` with every floating-point tensor of 2 or more dims but the embeddings as int8 (groups of `group`
    values along its last dim) plus fp16 scales, every other floating-point tensor in fp16, the rest as it is.
    With `base` (the same names and shapes): every floating-point matrix, embeddings included, as int8 of its
    difference from base's (scales under DELTA_SUFFIX)."""
    out = {}
    for name, t in state.items():
        if not t.is_floating_point():
            out[name] = t
        elif t.dim() < 2 or (base is None and EMBEDDINGS.search(name)):
            out[name] = t.half()
        elif base is not None:
            out[name], out[name + DELTA_SUFFIX] = _int8(t.float() - base[name].float(), group)
        else:
            out[name], out[name + SCALE_SUFFIX] = _int8(t, group)
    return out


def is_quantized(state) -> bool:
    """Whether `state` (a dict, or the names of one) holds int8 matrices with their scales."""
    return any(name.endswith((SCALE_SUFFIX, DELTA_SUFFIX)) for name in state)


def is_delta(state) -> bool:
    """Whether `state` (a dict, or the names of one) holds differences from a base (quantize_int8's `base`)."""
    return any(name.endswith(DELTA_SUFFIX) for name in state)


def dequantize(state: dict[str, torch.Tensor], base: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """Each int8 matrix with its scales as float32 (q * its group's scale, plus base's tensor for a difference);
    every other tensor as it is. ValueError for differences without their base."""
    scales = {name[: -len(suffix)]: t for name, t in state.items() for suffix in (SCALE_SUFFIX, DELTA_SUFFIX)
              if name.endswith(suffix)}  # fmt: skip
    if base is None and is_delta(state):
        raise ValueError("these weights are differences from a model's weights: dequantize them with that base")
    out = {}
    for name, t in state.items():
        if name.endswith((SCALE_SUFFIX, DELTA_SUFFIX)):
            continue
        if name in scales:
            scale = scales[name].float()  # (..., groups)
            t = (t.float().reshape(*scale.shape, -1) * scale[..., None]).reshape(t.shape)
            if name + DELTA_SUFFIX in state:
                t = base[name].float() + t
        out[name] = t
    return out
