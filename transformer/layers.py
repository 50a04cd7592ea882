"""Encoder and decoder layers as in "Attention Is All You Need" (post-norm), with pre-norm as an option."""

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention
from .config import TransformerConfig

KV = tuple[torch.Tensor, torch.Tensor]


class FeedForward(nn.Module):
    """Position-wise two-layer MLP."""

    def __init__(self, c: TransformerConfig):
        super().__init__()
        act = nn.GELU() if c.activation == "gelu" else nn.ReLU()  # nn.GELU: the exact (erf) form, as BERT
        self.net = nn.Sequential(nn.Linear(c.d_model, c.d_ff), act, nn.Dropout(c.dropout), nn.Linear(c.d_ff, c.d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class RMSNorm(nn.Module):
    """x / rms(x) * weight, computed in fp32 (Zhang and Sennrich 2019; Llama's norm): no mean, no bias."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def norm(c: TransformerConfig) -> nn.Module:
    """The config's norm over d_model: LayerNorm unless it asks for RMSNorm."""
    if getattr(c, "norm", "layernorm") == "rmsnorm":
        return RMSNorm(c.d_model, c.layer_norm_eps)
    return nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)) (Shazeer 2020), the feed-forward of Llama, without biases."""

    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.gate = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.up = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.down = nn.Linear(c.d_ff, c.d_model, bias=False)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.dropout(F.silu(self.gate(x)) * self.up(x)))


def feed_forward(c: TransformerConfig) -> nn.Module:
    """The config's feed-forward: SwiGLU, or a two-layer MLP with ReLU or GELU."""
    return SwiGLU(c) if c.activation == "swiglu" else FeedForward(c)


class Residual(nn.Module):
    """x + dropout(sublayer(x)) with LayerNorm after (post-norm) or before the sublayer (pre-norm)."""

    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.dropout)
        self.norm_first = c.norm_first

    def pre(self, x: torch.Tensor) -> torch.Tensor:
        """What the sublayer reads."""
        return self.norm(x) if self.norm_first else x

    def post(self, x: torch.Tensor, sub_out: torch.Tensor) -> torch.Tensor:
        """Add the sublayer's output back."""
        y = x + self.dropout(sub_out)
        return y if self.norm_first else self.norm(y)


def attention(c: TransformerConfig) -> MultiHeadAttention:
    return MultiHeadAttention(c.d_model, c.n_heads, c.attn_dropout)


class EncoderLayerOutput(NamedTuple):
    x: torch.Tensor  # (B, T, D)
    weights: torch.Tensor | None  # (B, H, T, T) when asked for
    heads: torch.Tensor | None = None  # (B, T, D) the heads' outputs before the mask and mix (AttentionOutput.heads)


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward."""

    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.self_attn = attention(c)
        self.ff = FeedForward(c)
        self.res_attn = Residual(c)
        self.res_ff = Residual(c)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        head_mask: torch.Tensor | None = None,
        heads: torch.Tensor | None = None,
    ) -> EncoderLayerOutput:
        """x (B, T, D), mask (B, 1, 1, T) -> x (B, T, D) and the weights (B, H, T, T) or None.
        head_mask: (H,) or (B, H) multipliers on the heads' outputs, this call only.
        heads: (B, T, D) what the heads computed on this x in an earlier pass (EncoderLayerOutput.heads): mixed
        again under head_mask without attending (no weights then)."""
        if heads is None:
            a = self.self_attn(self.res_attn.pre(x), mask=mask, need_weights=need_weights, head_mask=head_mask)
            out, weights, heads = a.output, a.weights, a.heads
        else:
            out, weights = self.self_attn.mix(heads, head_mask), None
        x = self.res_attn.post(x, out)
        x = self.res_ff.post(x, self.ff(self.res_ff.pre(x)))
        return EncoderLayerOutput(x, weights, heads)


class DecoderLayerOutput(NamedTuple):
    x: torch.Tensor  # (B, Tq, D)
    self_weights: torch.Tensor | None  # (B, H, Tq, Tq_total)
    cross_weights: torch.Tensor | None  # (B, H, Tq, Ts)
    self_kv: KV  # for the cache
    cross_kv: KV


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to the encoder output, then feed-forward."""

    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.self_attn = attention(c)
        self.cross_attn = attention(c)
        self.ff = FeedForward(c)
        self.res_self = Residual(c)
        self.res_cross = Residual(c)
        self.res_ff = Residual(c)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        cross_mask: torch.Tensor | None = None,
        need_weights: bool = False,
        past_self_kv: KV | None = None,
        past_cross_kv: KV | None = None,
        head_mask: torch.Tensor | None = None,
        cross_head_mask: torch.Tensor | None = None,
    ) -> DecoderLayerOutput:
        """x (B, Tq, D) over memory (B, Ts, D); masks broadcast to (B, H, Tq, Tk).
        head_mask / cross_head_mask: (H,) or (B, H) multipliers on the self- / cross-attention heads' outputs."""
        s = self.self_attn(
            self.res_self.pre(x), mask=self_mask, need_weights=need_weights, past_kv=past_self_kv, head_mask=head_mask
        )
        x = self.res_self.post(x, s.output)
        c = self.cross_attn(
            self.res_cross.pre(x),
            memory,
            mask=cross_mask,
            need_weights=need_weights,
            past_kv=past_cross_kv,
            static_kv=True,
            head_mask=cross_head_mask,
        )
        x = self.res_cross.post(x, c.output)
        x = self.res_ff.post(x, self.ff(self.res_ff.pre(x)))
        return DecoderLayerOutput(x, s.weights, c.weights, s.kv, c.kv)
