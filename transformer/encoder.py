"""Encoder: a stack of self-attention layers over embedded tokens."""

from dataclasses import dataclass

import torch

from .config import TransformerConfig
from .head_mask import StackMask, layer_mask
from .layers import EncoderLayer
from .stack import LayerStack


@dataclass
class EncoderOutput:
    memory: torch.Tensor  # (B, Ts, D) the last layer's output
    src_mask: torch.Tensor | None  # (B, 1, 1, Ts), True = real token
    attentions: list[torch.Tensor] | None = None  # per layer (B, H, Ts, Ts), when need_weights


class Encoder(LayerStack):
    """Scales token vectors by sqrt(d_model), adds positions and runs n_layers encoder layers."""

    def __init__(self, c: TransformerConfig, n_layers: int):
        super().__init__(c, EncoderLayer, n_layers)

    def forward(
        self,
        tok: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        head_mask: StackMask = None,
    ) -> EncoderOutput:
        """tok (B, T, D) token vectors, mask (B, 1, 1, T) -> EncoderOutput.
        head_mask: per layer (H,) or (B, H) multipliers on the heads' outputs, e.g. a (L, H) tensor."""
        x = self.embed(tok)
        attentions = []
        for i, layer in enumerate(self.layers):
            x, weights = layer(x, mask, need_weights, head_mask=layer_mask(head_mask, i))
            attentions.append(weights)
        return EncoderOutput(self.final_norm(x), mask, attentions if need_weights else None)
