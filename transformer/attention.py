"""Multi-head attention, written out: one module for the encoder's self-attention, the decoder's causal self- and
cross-attention and the decoder-only model's grouped-query attention with rotary positions.

n_kv_heads key/value heads each serve n_heads / n_kv_heads query heads (n_kv_heads == n_heads: plain multi-head
attention). Two paths give the same output: F.scaled_dot_product_attention when no one needs the weights, and an
explicit softmax that also returns them (and feeds hook_pattern).
"""

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .embeddings import Rotary
from .head_mask import head_multiplier
from .hooks import HookPoint
from .masks import causal_mask

KV = tuple[torch.Tensor, torch.Tensor]  # keys and values (B, Hkv, Tk, hs), for a decoding cache
Rope = tuple[torch.Tensor, torch.Tensor]  # (cos, sin), each (T, hs)


class AttentionOutput(NamedTuple):
    output: torch.Tensor  # (B, Tq, D)
    weights: torch.Tensor | None  # (B, H, Tq, Tk) when asked for, else None
    kv: KV  # keys and values (B, Hkv, Tk, hs) after rotation, for a decoding cache


class Attention(nn.Module):
    """Scaled dot-product attention of n_heads query heads over n_kv_heads key/value heads.

    Hook points (TransformerLens's names): hook_q (B, Tq, H, hs), hook_k and hook_v (B, Tk, Hkv, hs) after rotation
    (the new positions only, with a cache), hook_pattern (B, H, Tq, Tk), hook_z (B, Tq, H, hs) the heads' outputs,
    hook_result (B, Tq, H, D) each head's output through its slice of W_O (computed only when asked).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        n_kv_heads: int | None = None,
        head_dim: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
        rotary: Rotary | None = None,
    ):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads or n_heads
        self.head_dim = head_dim or d_model // n_heads
        if head_dim is None and d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must divide n_heads ({n_heads})")
        self.dropout = dropout
        hs = self.head_dim
        self.q_proj = nn.Linear(d_model, n_heads * hs, bias=bias)
        self.k_proj = nn.Linear(d_model, self.n_kv_heads * hs, bias=bias)
        self.v_proj = nn.Linear(d_model, self.n_kv_heads * hs, bias=bias)
        self.o_proj = nn.Linear(n_heads * hs, d_model, bias=bias)
        self.rotary = rotary
        for name in ("hook_q", "hook_k", "hook_v", "hook_pattern", "hook_z", "hook_result"):
            setattr(self, name, HookPoint())

    def _heads(self, x: torch.Tensor, n: int) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, n, self.head_dim)  # (B, T, n, hs)

    def project(self, x_q: torch.Tensor, x_kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x_q (B, Tq, D), x_kv (B, Tk, D) -> q (B, Tq, H, hs), k and v (B, Tk, Hkv, hs), before any rotation."""
        q = self._heads(self.q_proj(x_q), self.n_heads)
        k = self._heads(self.k_proj(x_kv), self.n_kv_heads)
        v = self._heads(self.v_proj(x_kv), self.n_kv_heads)
        return q, k, v

    def rotate(self, q: torch.Tensor, k: torch.Tensor, offset: int, rope: Rope | None) -> tuple:
        """q (B, H, Tq, hs) and k (B, Hkv, Tq, hs) at positions offset .. offset + Tq - 1, rotated (unchanged without
        rotary positions); `rope`: their (cos, sin) when the caller computed them once for every layer."""
        if self.rotary is None:
            return q, k
        cos, sin = rope if rope is not None else self.rotary.cos_sin(q.size(2), offset, q.device)  # (T, hs) each
        return Rotary.rotate(q, cos, sin), Rotary.rotate(k, cos, sin)

    def keys_values(
        self, x_q, x_kv=None, *, past_kv=None, static_kv=False, rope=None, hooked=False
    ) -> tuple[torch.Tensor, ...]:
        """q (B, H, Tq, hs) and the cache's keys and values (B, Hkv, Tk, hs), each through its hook (when hooked:
        with no hook active the points and the views they read are skipped); the new positions follow past_kv's."""
        offset = past_kv[0].size(2) if past_kv is not None and not static_kv else 0  # positions already cached
        if static_kv and past_kv is not None:  # cross-attention's fixed keys and values
            q = self._heads(self.q_proj(x_q), self.n_heads)
            return (self.hook_q(q) if hooked else q).transpose(1, 2), *past_kv  # (B, H, Tq, hs)
        q, k, v = self.project(x_q, x_q if x_kv is None else x_kv)
        q, k = self.rotate(q.transpose(1, 2), k.transpose(1, 2), offset, rope)  # (B, H, Tq, hs), (B, Hkv, Tk, hs)
        if hooked:
            q = self.hook_q(q.transpose(1, 2)).transpose(1, 2)
            k = self.hook_k(k.transpose(1, 2)).transpose(1, 2)
            v = self.hook_v(v)
        v = v.transpose(1, 2)  # (B, Hkv, Tk, hs)
        if past_kv is not None:
            k, v = torch.cat([past_kv[0], k], dim=2), torch.cat([past_kv[1], v], dim=2)
        return q, k, v

    def forward(
        self,
        x_q: torch.Tensor,
        x_kv: torch.Tensor | None = None,
        *,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        past_kv: KV | None = None,
        static_kv: bool = False,
        head_mask: torch.Tensor | None = None,
        causal: bool = False,
        rope: Rope | None = None,
    ) -> AttentionOutput:
        """Attend from x_q (B, Tq, D) to x_kv (B, Tk, D); x_kv=None means self-attention.

        mask: bool, True = attend, broadcastable to (B, H, Tq, Tk); causal: each query sees the keys at or before it
        (the queries are the last Tq of Tk positions), on top of `mask`. past_kv: cached (k, v) (B, Hkv, Tpast, hs);
        with static_kv (cross-attention) they are reused as they are, otherwise the new ones are appended.
        head_mask: (H,) or (B, H) multipliers on each head's output before W_O (0 = off), this call only; the weights
        returned and hook_z are what the heads computed, before it.
        """
        B, Tq, _ = x_q.shape
        hooked = self.hook_q.hooks_on
        q, k, v = self.keys_values(x_q, x_kv, past_kv=past_kv, static_kv=static_kv, rope=rope, hooked=hooked)
        kv = (k, v)
        group = self.n_heads // self.n_kv_heads
        if group > 1:
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (B, H, Tk, hs)
        p = self.dropout if self.training else 0.0
        if need_weights or hooked and self.hook_pattern.wanted:
            if causal:
                visible = causal_mask(Tq, k.size(2), q.device)  # (1, 1, Tq, Tk): every row sees itself
                mask, every_row_sees = visible if mask is None else mask & visible, mask is None
            else:
                every_row_sees = False
            out, weights = explicit_attention(q, k, v, mask, p, self.hook_pattern if hooked else None, every_row_sees)
        else:
            out, weights = self.fast_attention(q, k, v, mask, causal, p), None
        z = out.transpose(1, 2)  # (B, Tq, H, hs)
        z = self.hook_z(z) if hooked else z
        if hooked and self.hook_result.wanted:  # each head's share, summed: a hook that replaces one changes it
            out = self.hook_result(self.head_results(masked(z, head_mask, self.n_heads))).sum(2) + self.b_O
        else:
            out = self.mix(z, head_mask)  # (B, Tq, D)
        return AttentionOutput(out, weights, kv)

    @staticmethod
    def fast_attention(q, k, v, mask, causal: bool, p: float) -> torch.Tensor:
        """(B, H, Tq, hs) through scaled_dot_product_attention (its flash kernel where it can)."""
        Tq, Tk = q.size(2), k.size(2)
        if causal and Tq > 1:  # one new token sees every key
            if mask is None and Tq == Tk:
                return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
            visible = causal_mask(Tq, Tk, q.device)
            mask = visible if mask is None else mask & visible
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)

    def head_results(self, z: torch.Tensor) -> torch.Tensor:
        """z (B, T, H, hs) -> (B, T, H, D): each head's output through its slice of W_O (no bias)."""
        w_o = self.W_O  # (H, hs, D)
        return torch.einsum("bthe,hed->bthd", z, w_o.to(z.dtype))

    def mix(self, z: torch.Tensor, head_mask: torch.Tensor | None = None) -> torch.Tensor:
        """z (B, Tq, H, hs), what the heads computed (hook_z) -> the attention's output (B, Tq, D) under head_mask:
        a pass that already ran the heads mixes them again without attending."""
        z = masked(z, head_mask, self.n_heads)
        return self.o_proj(z.reshape(*z.shape[:2], self.n_heads * self.head_dim))

    # Weight views as TransformerLens names them, per head; K and V repeated to the query heads that read them.
    @property
    def W_Q(self) -> torch.Tensor:
        """(H, D, hs)."""
        return self.q_proj.weight.view(self.n_heads, self.head_dim, -1).transpose(1, 2)

    @property
    def W_K(self) -> torch.Tensor:
        """(H, D, hs)."""
        return self._per_query_head(self.k_proj.weight)

    @property
    def W_V(self) -> torch.Tensor:
        """(H, D, hs)."""
        return self._per_query_head(self.v_proj.weight)

    @property
    def W_O(self) -> torch.Tensor:
        """(H, hs, D)."""
        return self.o_proj.weight.view(-1, self.n_heads, self.head_dim).permute(1, 2, 0)

    @property
    def b_O(self) -> torch.Tensor:
        """(D,): zeros where the projection has no bias."""
        b = self.o_proj.bias
        return b if b is not None else self.o_proj.weight.new_zeros(self.o_proj.out_features)

    def _per_query_head(self, weight: torch.Tensor) -> torch.Tensor:
        w = weight.view(self.n_kv_heads, self.head_dim, -1).transpose(1, 2)  # (Hkv, D, hs)
        return w.repeat_interleave(self.n_heads // self.n_kv_heads, dim=0)  # (H, D, hs)


def masked(z: torch.Tensor, head_mask: torch.Tensor | None, n_heads: int) -> torch.Tensor:
    """z (B, T, H, hs) with each head's output scaled by head_mask ((H,) or (B, H); 0 switches a head off)."""
    if head_mask is None:
        return z
    return z * head_multiplier(head_mask.to(z.dtype), n_heads).transpose(1, 2)


def explicit_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    dropout_p: float = 0.0,
    hook_pattern: HookPoint | None = None,
    every_row_sees: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(hs)) v, returning (output (B, H, Tq, hs), weights (B, H, Tq, Tk)).

    Masked keys get exactly zero weight, and a query with no visible key gets all-zero weights and a zero output (as
    scaled_dot_product_attention does) instead of NaN. every_row_sees (a causal mask alone: each row sees itself):
    the hidden keys come out of the softmax as exact zeros (exp of the most negative float), no second pass needed.
    hook_pattern sees (and may replace) the weights before they multiply the values.
    """
    if mask is not None and bool(mask.all()):
        # Nothing to hide (an unpadded input): filling an all-True mask twice took a third of the forward.
        mask = None
    # Scaled before the product: q is (Tq, hs) a head, the scores (Tq, Tk). In place where autograd allows: for a long
    # batch each (B, H, Tq, Tk) copy is tens of MB.
    scores = (q * q.size(-1) ** -0.5) @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    if mask is not None:
        scores.masked_fill_(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    del scores  # freed before the copy below (a copy: softmax's backward needs its output unchanged)
    if mask is not None and not every_row_sees:
        weights = weights.masked_fill(~mask, 0.0)  # zero for masked keys, and for fully masked rows
    if hook_pattern is not None:
        weights = hook_pattern(weights)
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights
