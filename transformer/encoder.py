"""Encoder: a stack of self-attention blocks over embedded tokens."""

from dataclasses import dataclass

import torch

from .config import TransformerConfig
from .head_mask import StackMask, layer_mask
from .stack import LayerStack, WeightViews


@dataclass
class EncoderOutput:
    memory: torch.Tensor  # (B, Ts, D) the last block's output (after the final norm)
    src_mask: torch.Tensor | None  # (B, 1, 1, Ts), True = real token
    attentions: list[torch.Tensor] | None = None  # per layer (B, H, Ts, Ts), when need_weights


class Encoder(LayerStack, WeightViews):
    """Scales token vectors by sqrt(d_model), adds positions and runs n_layers blocks."""

    def __init__(self, c: TransformerConfig, n_layers: int):
        super().__init__(c, n_layers)

    def forward(
        self,
        tok: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        head_mask: StackMask = None,
    ) -> EncoderOutput:
        """tok (B, T, D) token vectors, mask (B, 1, 1, T) -> EncoderOutput.
        head_mask: per layer (H,) or (B, H) multipliers on the heads' outputs, e.g. a (L, H) tensor."""
        return self.forward_from(0, self.embed(tok), mask, need_weights, head_mask)

    def forward_from(
        self,
        start: int,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        head_mask: StackMask = None,
        z: torch.Tensor | None = None,
    ) -> EncoderOutput:
        """x (B, T, D), what block `start` reads (an earlier pass's blocks.{start}.hook_resid_pre) -> EncoderOutput of
        the blocks from `start` on (their attentions only). head_mask is indexed by layer, as in forward: a change to
        the heads of block `start` or later changes nothing before it, so those blocks need not run again.
        z: (B, T, H, hs) what block `start`'s heads computed on x in that pass (its attn.hook_z): that block only
        mixes them again under its head mask, without attending (and returns no weights)."""
        attentions = []
        for i in range(start, len(self.blocks)):
            out = self.blocks[i](x, mask=mask, need_weights=need_weights, head_mask=layer_mask(head_mask, i), z=z)
            x, z = out.x, None
            attentions.append(out.weights)
        return EncoderOutput(self.final(x), mask, attentions if need_weights else None)
