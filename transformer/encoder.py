"""A stack of encoder layers over embedded tokens."""

import math

import torch
from torch import nn

from .embeddings import Positions
from .layers import EncoderLayer


class Encoder(nn.Module):
    """Embeds (already scaled) token vectors with positions and runs n_layers encoder layers."""

    def __init__(self, d_model, n_heads, d_ff, n_layers, dropout, attn_dropout, norm_first, positions, max_len):
        super().__init__()
        self.positions = Positions(positions, max_len, d_model)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, dropout, attn_dropout, norm_first) for _ in range(n_layers)
        )
        # Pre-norm stacks need a final norm; post-norm layers already end in one.
        self.final_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.scale = math.sqrt(d_model)

    def forward(self, tok: torch.Tensor, mask: torch.Tensor | None, need_weights: bool = False):
        """tok (B, T, D) token vectors, mask (B, 1, 1, T) -> (x (B, T, D), [weights (B, H, T, T)] per layer)."""
        x = self.dropout(self.positions(tok * self.scale))
        attentions = []
        for layer in self.layers:
            x, w = layer(x, mask, need_weights)
            attentions.append(w)
        return self.final_norm(x), attentions if need_weights else None
