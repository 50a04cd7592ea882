"""Encoder: a stack of self-attention layers over embedded tokens."""

import math
from dataclasses import dataclass

import torch
from torch import nn

from .config import TransformerConfig
from .embeddings import Positions
from .layers import EncoderLayer


@dataclass
class EncoderOutput:
    memory: torch.Tensor  # (B, Ts, D) the last layer's output
    src_mask: torch.Tensor | None  # (B, 1, 1, Ts), True = real token
    attentions: list[torch.Tensor] | None = None  # per layer (B, H, Ts, Ts), when need_weights


class Encoder(nn.Module):
    """Scales token vectors by sqrt(d_model), adds positions and runs n_layers encoder layers."""

    def __init__(self, c: TransformerConfig, n_layers: int):
        super().__init__()
        self.positions = Positions(c.positions, c.max_len, c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        self.layers = nn.ModuleList(EncoderLayer(c) for _ in range(n_layers))
        # Pre-norm stacks need a final norm; post-norm layers already end in one.
        self.final_norm = nn.LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.scale = math.sqrt(c.d_model)

    def forward(self, tok: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = False) -> EncoderOutput:
        """tok (B, T, D) token vectors, mask (B, 1, 1, T) -> EncoderOutput."""
        x = self.dropout(self.positions(tok * self.scale))
        attentions = []
        for layer in self.layers:
            x, weights = layer(x, mask, need_weights)
            attentions.append(weights)
        return EncoderOutput(self.final_norm(x), mask, attentions if need_weights else None)
