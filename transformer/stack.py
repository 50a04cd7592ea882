"""What the encoder and the decoder share: token vectors (scaled) plus positions (normed, for BERT), a stack of
blocks, a final norm, and the weight views of their attention."""

import math

import torch
from torch import nn

from .config import TransformerConfig
from .embeddings import Positions
from .hooks import HookPoint
from .layers import Block, norm


class LayerStack(nn.Module):
    """n_layers blocks over token vectors (scaled by sqrt(d_model) unless the config says not) with positions added
    (and a LayerNorm over the sum where the config asks for one, as BERT).

    Hook points: hook_embed (B, T, D) what the first block reads; hook_final (B, T, D) the final norm's output (the
    last block's output for a post-norm stack, which has no final norm)."""

    def __init__(self, c: TransformerConfig, n_layers: int, cross: bool = False):
        super().__init__()
        self.positions = Positions(c.positions, c.max_len, c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(Block(c, cross=cross) for _ in range(n_layers))
        # Pre-norm stacks need a final norm; post-norm blocks already end in one.
        self.final_norm = norm(c) if c.norm_first else nn.Identity()
        self.embed_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if c.embedding_norm else nn.Identity()
        self.scale = math.sqrt(c.d_model) if c.scale_embeddings else 1.0
        self.hook_embed, self.hook_final = HookPoint(), HookPoint()

    def embed(self, tok: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """tok (B, T, D) -> (B, T, D) what the first block reads; `offset` shifts positions (cached decoding)."""
        return self.hook_embed(self.dropout(self.embed_norm(self.positions(tok * self.scale, offset=offset))))

    def final(self, x: torch.Tensor) -> torch.Tensor:
        return self.hook_final(self.final_norm(x))


def stacked(blocks, attn: str, name: str) -> torch.Tensor:
    """(L, ...) one weight view (W_Q, W_K, W_V, W_O, b_O) of every block's `attn` attention."""
    return torch.stack([getattr(getattr(b, attn), name) for b in blocks])


class WeightViews:
    """TransformerLens's weight names over `self.blocks`: W_Q, W_K, W_V (L, H, D, hs), W_O (L, H, hs, D), b_O (L, D);
    K and V repeated to the query heads that read them."""

    blocks: nn.ModuleList

    W_Q = property(lambda self: stacked(self.blocks, "attn", "W_Q"))
    W_K = property(lambda self: stacked(self.blocks, "attn", "W_K"))
    W_V = property(lambda self: stacked(self.blocks, "attn", "W_V"))
    W_O = property(lambda self: stacked(self.blocks, "attn", "W_O"))
    b_O = property(lambda self: stacked(self.blocks, "attn", "b_O"))
