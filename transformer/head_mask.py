"""Per-call head masks: a multiplier on each head's output before the output projection (0 = head off).

A layer takes (H,), the same for every row, or (B, H), one mask per batch row. A stack takes them per
layer: (L, H) or (L, B, H), or any sequence indexed by layer. Nothing is stored in the modules, so a mask
affects only the call it is passed to.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import torch

StackMask = torch.Tensor | Sequence[torch.Tensor | None] | None  # (L, H), (L, B, H) or one entry per layer


@dataclass
class HeadMasks:
    """The head masks of an encoder-decoder, one per kind of attention; None = every head on."""

    encoder: StackMask = None  # encoder self-attention
    decoder: StackMask = None  # decoder (causal) self-attention
    cross: StackMask = None  # decoder cross-attention

    def repeat_rows(self, k: int) -> "HeadMasks":
        """Per-row masks with each row repeated k times (beam search runs k rows per input)."""
        return HeadMasks(*(_repeat(m, k) for m in (self.encoder, self.decoder, self.cross)))


def _repeat(mask: StackMask, k: int) -> StackMask:
    if mask is None:
        return None
    return [m if m is None or m.dim() == 1 else m.repeat_interleave(k, dim=0) for m in _layers(mask)]


def _layers(mask: StackMask) -> list:
    return list(mask.unbind(0)) if isinstance(mask, torch.Tensor) else list(mask)


def layer_mask(mask: StackMask, layer: int) -> torch.Tensor | None:
    """Layer `layer`'s (H,) or (B, H) mask from a stack mask, None for every head on."""
    return None if mask is None else mask[layer]


def head_multiplier(head_mask: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(H,) or (B, H) -> (1 or B, H, 1, 1), to multiply per-head outputs (B, H, Tq, hs)."""
    if head_mask.shape[-1] != n_heads or head_mask.dim() not in (1, 2):
        raise ValueError(f"a head mask is (H,) or (B, H) with H = {n_heads}, got {tuple(head_mask.shape)}")
    return head_mask.reshape(-1, n_heads, 1, 1)
