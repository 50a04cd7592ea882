"""What the encoder and the decoder share: token vectors (scaled) plus positions (normed, for BERT), a stack of
layers, a final norm."""

import math
from collections.abc import Callable

import torch
from torch import nn

from .config import TransformerConfig
from .embeddings import Positions


class LayerStack(nn.Module):
    """n_layers layers of one kind over token vectors (scaled by sqrt(d_model) unless the config says not) with
    positions added (and a LayerNorm over the sum where the config asks for one, as BERT)."""

    def __init__(self, c: TransformerConfig, layer: Callable[[TransformerConfig], nn.Module], n_layers: int):
        super().__init__()
        self.positions = Positions(c.positions, c.max_len, c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        self.layers = nn.ModuleList(layer(c) for _ in range(n_layers))
        # Pre-norm stacks need a final norm; post-norm layers already end in one.
        self.final_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if c.norm_first else nn.Identity()
        self.embed_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if c.embedding_norm else nn.Identity()
        self.scale = math.sqrt(c.d_model) if c.scale_embeddings else 1.0

    def embed(self, tok: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """tok (B, T, D) -> (B, T, D) what the first layer reads; `offset` shifts positions (cached decoding)."""
        return self.dropout(self.embed_norm(self.positions(tok * self.scale, offset=offset)))
