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
    hidden: list[torch.Tensor] | None = None  # per layer (B, Ts, D) what it read, when need_hidden
    heads: list[torch.Tensor] | None = None  # per layer (B, Ts, D) its heads' outputs before the mix, when need_hidden


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
        need_hidden: bool = False,
    ) -> EncoderOutput:
        """tok (B, T, D) token vectors, mask (B, 1, 1, T) -> EncoderOutput.
        head_mask: per layer (H,) or (B, H) multipliers on the heads' outputs, e.g. a (L, H) tensor."""
        return self.layers_from(0, self.embed(tok), mask, need_weights, head_mask, need_hidden)

    def layers_from(
        self,
        start: int,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        head_mask: StackMask = None,
        need_hidden: bool = False,
        heads: torch.Tensor | None = None,
    ) -> EncoderOutput:
        """x (B, T, D), what layer `start` reads (an earlier pass's hidden[start]) -> EncoderOutput of the layers from
        `start` on (their attentions, hidden states and heads only). head_mask is indexed by layer, as in forward: a
        change to the heads of layer `start` or later changes nothing before it, so those layers need not run again.
        heads: (B, T, D) what layer `start`'s heads computed on x in that pass (its heads[start]): that layer only
        mixes them again under its head mask, without attending (and returns no weights)."""
        attentions, hidden, layer_heads = [], [], []  # kept only when asked for: a batch's copies are large
        for i in range(start, len(self.layers)):
            out = self.layers[i](x, mask, need_weights, head_mask=layer_mask(head_mask, i), heads=heads)
            if need_hidden:
                hidden.append(x)
                layer_heads.append(out.heads)
            x, heads = out.x, None
            attentions.append(out.weights)
        if not need_hidden:
            hidden = layer_heads = None
        return EncoderOutput(self.final_norm(x), mask, attentions if need_weights else None, hidden, layer_heads)
