"""Encoder and decoder layers as in "Attention Is All You Need" (post-norm), with pre-norm as an option."""

from typing import NamedTuple

import torch
from torch import nn

from .attention import MultiHeadAttention

KV = tuple[torch.Tensor, torch.Tensor]


class FeedForward(nn.Module):
    """Position-wise two-layer MLP."""

    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Residual(nn.Module):
    """x + dropout(sublayer(x)) with LayerNorm after (post-norm) or before the sublayer (pre-norm)."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def pre(self, x: torch.Tensor) -> torch.Tensor:
        """What the sublayer reads."""
        return self.norm(x) if self.norm_first else x

    def post(self, x: torch.Tensor, sub_out: torch.Tensor) -> torch.Tensor:
        """Add the sublayer's output back."""
        y = x + self.dropout(sub_out)
        return y if self.norm_first else self.norm(y)


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward."""

    def __init__(self, d_model, n_heads, d_ff, dropout, attn_dropout, norm_first):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, attn_dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.res_attn = Residual(d_model, dropout, norm_first)
        self.res_ff = Residual(d_model, dropout, norm_first)

    def forward(self, x, mask=None, need_weights=False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x (B, T, D), mask (B, 1, 1, T) -> (x (B, T, D), weights (B, H, T, T) or None)."""
        a = self.self_attn(self.res_attn.pre(x), mask=mask, need_weights=need_weights)
        x = self.res_attn.post(x, a.output)
        x = self.res_ff.post(x, self.ff(self.res_ff.pre(x)))
        return x, a.weights


class DecoderLayerOutput(NamedTuple):
    x: torch.Tensor  # (B, Tq, D)
    self_weights: torch.Tensor | None  # (B, H, Tq, Tq_total)
    cross_weights: torch.Tensor | None  # (B, H, Tq, Ts)
    self_kv: KV  # for the cache
    cross_kv: KV


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to the encoder output, then feed-forward."""

    def __init__(self, d_model, n_heads, d_ff, dropout, attn_dropout, norm_first):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, attn_dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, attn_dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.res_self = Residual(d_model, dropout, norm_first)
        self.res_cross = Residual(d_model, dropout, norm_first)
        self.res_ff = Residual(d_model, dropout, norm_first)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None,
        cross_mask: torch.Tensor | None,
        need_weights: bool = False,
        past_self_kv: KV | None = None,
        past_cross_kv: KV | None = None,
    ) -> DecoderLayerOutput:
        s = self.self_attn(self.res_self.pre(x), mask=self_mask, need_weights=need_weights, past_kv=past_self_kv)
        x = self.res_self.post(x, s.output)
        c = self.cross_attn(
            self.res_cross.pre(x),
            memory,
            mask=cross_mask,
            need_weights=need_weights,
            past_kv=past_cross_kv,
            static_kv=True,
        )
        x = self.res_cross.post(x, c.output)
        x = self.res_ff.post(x, self.ff(self.res_ff.pre(x)))
        return DecoderLayerOutput(x, s.weights, c.weights, s.kv, c.kv)
