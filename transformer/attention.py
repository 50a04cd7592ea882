"""Multi-head attention, written out. Used for encoder self-, decoder causal self- and cross-attention."""

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .head_mask import head_multiplier


class AttentionOutput(NamedTuple):
    output: torch.Tensor  # (B, Tq, D)
    weights: torch.Tensor | None  # (B, H, Tq, Tk) when asked for, else None
    kv: tuple[torch.Tensor, torch.Tensor]  # keys and values (B, H, Tk, hs), for a decoding cache
    heads: torch.Tensor | None = None  # (B, Tq, D) every head's output side by side, before the head mask and mix


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over n_heads heads.

    Two paths give the same output: a fast one through F.scaled_dot_product_attention (used when the
    weights are not needed), and an explicit softmax that also returns the per-head weights.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        assert d_model % n_heads == 0, "d_model must be divisible by n_heads"
        self.n_heads = n_heads
        self.head_size = d_model // n_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, D = x.shape
        return x.view(B, T, self.n_heads, self.head_size).transpose(1, 2)  # (B, H, T, hs)

    def forward(
        self,
        x_q: torch.Tensor,
        x_kv: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        past_kv: tuple[torch.Tensor, torch.Tensor] | None = None,
        static_kv: bool = False,
        head_mask: torch.Tensor | None = None,
    ) -> AttentionOutput:
        """Attend from x_q (B, Tq, D) to x_kv (B, Tk, D); x_kv=None means self-attention.

        mask: bool, True = attend, broadcastable to (B, H, Tq, Tk).
        past_kv: cached (k, v) of shape (B, H, Tpast, hs). With static_kv (cross-attention) they are
        reused as they are and x_kv is ignored; otherwise the new keys and values are appended.
        head_mask: (H,) or (B, H) multipliers on each head's output before the output projection (0 = off),
        for this call only. The weights and heads returned are what the heads computed, before the mask.
        """
        B, Tq, D = x_q.shape
        q = self._split_heads(self.q_proj(x_q))  # (B, H, Tq, hs)
        if static_kv and past_kv is not None:
            k, v = past_kv
        else:
            src = x_q if x_kv is None else x_kv
            k = self._split_heads(self.k_proj(src))  # (B, H, Tk, hs)
            v = self._split_heads(self.v_proj(src))
            if past_kv is not None:
                k = torch.cat([past_kv[0], k], dim=2)
                v = torch.cat([past_kv[1], v], dim=2)
        p = self.dropout if self.training else 0.0

        if need_weights:
            out, weights = explicit_attention(q, k, v, mask, p)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
            weights = None
        heads = out.transpose(1, 2).reshape(B, Tq, D)  # (B, Tq, D)
        return AttentionOutput(self.mix(heads, head_mask), weights, (k, v), heads)

    def mix(self, heads: torch.Tensor, head_mask: torch.Tensor | None = None) -> torch.Tensor:
        """heads (B, Tq, D), every head's output side by side -> the attention's output (B, Tq, D): the output
        projection of them, each head's scaled by head_mask ((H,) or (B, H) multipliers) first. A head switched off
        changes nothing before this, so a pass that already ran the heads can mix them again without attending."""
        if head_mask is not None:
            B, Tq, D = heads.shape
            scaled = self._split_heads(heads) * head_multiplier(head_mask.to(heads.dtype), self.n_heads)
            heads = scaled.transpose(1, 2).reshape(B, Tq, D)  # (B, Tq, D)
        return self.out_proj(heads)


def explicit_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, dropout_p: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(hs)) v, returning (output (B, H, Tq, hs), weights (B, H, Tq, Tk)).

    Masked keys get exactly zero weight, and a query with no visible key gets all-zero weights and a
    zero output (as scaled_dot_product_attention does) instead of NaN.
    """
    if mask is not None and bool(mask.all()):
        # Nothing to hide (an unpadded input): filling an all-True mask twice took a third of the forward.
        mask = None
    # Scaled before the product: q is (Tq, hs) a head, the scores (Tq, Tk). In place where autograd allows: for
    # a long batch each (B, H, Tq, Tk) copy is tens of MB.
    scores = (q * q.size(-1) ** -0.5) @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    if mask is not None:
        scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    del scores  # freed before the copy below (a copy: softmax's backward needs its output unchanged)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)  # zero for masked keys, and for fully masked rows
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights
