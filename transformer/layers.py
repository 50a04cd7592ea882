"""The one block of every model here: self-attention, cross-attention (a decoder's), then a feed-forward, each added
back to the residual stream with its norm before the sublayer (pre-norm: Llama, GPT-2) or after the sum (post-norm:
"Attention Is All You Need", BERT). Norms and feed-forwards are pluggable through the config."""

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .attention import KV, Attention, Rope
from .config import TransformerConfig
from .embeddings import Rotary
from .hooks import HookPoint


class MLP(nn.Module):
    """Position-wise two-layer MLP: down(act(up(x))), act ReLU or the exact (erf) GELU, as BERT."""

    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.up = nn.Linear(c.d_model, c.d_ff)
        self.act = nn.GELU() if c.activation == "gelu" else nn.ReLU()
        self.dropout = nn.Dropout(c.dropout)
        self.down = nn.Linear(c.d_ff, c.d_model)
        self.hook_post = HookPoint()  # (B, T, d_ff) the hidden activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.dropout(self.hook_post(self.act(self.up(x)))))


class SwiGLU(nn.Module):
    """down(silu(gate(x)) * up(x)) (Shazeer 2020), the feed-forward of Llama, without biases."""

    def __init__(self, c: TransformerConfig):
        super().__init__()
        self.gate = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.up = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.down = nn.Linear(c.d_ff, c.d_model, bias=False)
        self.dropout = nn.Dropout(c.dropout)
        self.hook_post = HookPoint()  # (B, T, d_ff) the gated activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.dropout(self.hook_post(F.silu(self.gate(x)) * self.up(x))))


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


NORMS = {"layernorm": nn.LayerNorm, "rmsnorm": RMSNorm}
FEED_FORWARDS = {"relu": MLP, "gelu": MLP, "swiglu": SwiGLU}


def norm(c: TransformerConfig) -> nn.Module:
    """The config's norm over d_model."""
    return NORMS[c.norm](c.d_model, eps=c.layer_norm_eps)


def attention(c: TransformerConfig, rotary: Rotary | None = None) -> Attention:
    return Attention(c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.attn_dropout, c.bias, rotary)


class BlockOutput(NamedTuple):
    x: torch.Tensor  # (B, Tq, D) the block's output
    weights: torch.Tensor | None  # (B, H, Tq, Tk) self-attention, when asked for
    kv: KV  # self-attention's keys and values, for the cache
    cross_weights: torch.Tensor | None = None  # (B, H, Tq, Ts)
    cross_kv: KV | None = None


class Block(nn.Module):
    """Self-attention, cross-attention to an encoder's output when built with cross=True, then the feed-forward.

    Hook points: hook_resid_pre (what the block reads), hook_attn_out, hook_resid_mid (after self-attention),
    hook_cross_attn_out and hook_resid_cross (after cross-attention, cross blocks only), hook_mlp_out, hook_resid_post;
    all (B, T, D). Pre-norm: resid_post == resid_mid + mlp_out (or resid_cross + mlp_out).
    """

    def __init__(self, c: TransformerConfig, cross: bool = False, rotary: Rotary | None = None):
        super().__init__()
        self.norm_first = c.norm_first
        self.attn_norm, self.attn = norm(c), attention(c, rotary)
        self.cross_norm, self.cross_attn = (norm(c), attention(c)) if cross else (None, None)
        self.mlp_norm, self.mlp = norm(c), FEED_FORWARDS[c.activation](c)
        self.dropout = nn.Dropout(c.dropout)
        names = ["hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post"]
        for name in names + (["hook_cross_attn_out", "hook_resid_cross"] if cross else []):
            setattr(self, name, HookPoint())

    def _pre(self, norm: nn.Module, x: torch.Tensor) -> torch.Tensor:
        """What a sublayer reads."""
        return norm(x) if self.norm_first else x

    def _post(self, norm: nn.Module, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """The sublayer's output added back (and normed, post-norm)."""
        y = x + self.dropout(out)
        return y if self.norm_first else norm(y)

    def forward(
        self,
        x: torch.Tensor,
        *,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        past_kv: KV | None = None,
        head_mask: torch.Tensor | None = None,
        causal: bool = False,
        rope: Rope | None = None,
        cross: "CrossInput | None" = None,
        z: torch.Tensor | None = None,
    ) -> BlockOutput:
        """x (B, Tq, D) -> BlockOutput. mask, causal, past_kv, head_mask, rope: as Attention's. cross: the encoder's
        output, its mask, cache and head mask (cross blocks). z (B, Tq, H, hs): what the heads computed on this x in an
        earlier pass (hook_z): mixed again under head_mask without attending (no weights then)."""
        at = through if self.hook_resid_pre.hooks_on else skipped  # no hook active: the points are skipped
        x = at(self.hook_resid_pre, x)
        if z is None:
            modes = dict(mask=mask, need_weights=need_weights, past_kv=past_kv, head_mask=head_mask, causal=causal)
            a = self.attn(self._pre(self.attn_norm, x), rope=rope, **modes)
        else:
            a = (self.attn.mix(z, head_mask), None, None)
        x = at(self.hook_resid_mid, self._post(self.attn_norm, x, at(self.hook_attn_out, a[0])))
        c = None
        if self.cross_attn is not None:
            c = self.cross_attn(self._pre(self.cross_norm, x), cross.memory, mask=cross.mask, need_weights=need_weights,
                                past_kv=cross.kv, static_kv=True, head_mask=cross.head_mask)  # fmt: skip
            x = at(self.hook_resid_cross, self._post(self.cross_norm, x, at(self.hook_cross_attn_out, c.output)))
        out = at(self.hook_mlp_out, self.mlp(self._pre(self.mlp_norm, x)))
        x = at(self.hook_resid_post, self._post(self.mlp_norm, x, out))
        return BlockOutput(x, a[1], a[2], c.weights if c else None, c.kv if c else None)


def through(point: HookPoint, x: torch.Tensor) -> torch.Tensor:
    return point(x)


def skipped(point: HookPoint, x: torch.Tensor) -> torch.Tensor:
    """x, the point passed by: no hook is active."""
    return x


class CrossInput(NamedTuple):
    """What a decoder block's cross-attention reads."""

    memory: torch.Tensor  # (B, Ts, D) the encoder's output
    mask: torch.Tensor | None = None  # (B, 1, 1, Ts), True = a real source token
    kv: KV | None = None  # its cached keys and values
    head_mask: torch.Tensor | None = None  # (H,) or (B, H)
