"""CausalLM: a decoder-only transformer (GPT, Llama) that returns its attention, read like nanoGPT's model.py.

Llama's choices by default: grouped key/value heads, rotary positions, RMSNorm, SwiGLU, pre-norm, tied embeddings.
`CausalLM.from_llama` loads a Llama-architecture checkpoint into it (transformer/llama.py);
tests/transformer/test_llama.py checks logits, hidden states and every head's attention against `transformers`.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from .config import CausalLMConfig
from .decoder import DecoderCache
from .embeddings import Positions, Rotary
from .head_mask import StackMask, head_multiplier, layer_mask
from .hub import HUB_KWARGS, ShardedWeights
from .layers import KV, feed_forward, norm
from .masks import causal_mask


@dataclass
class CausalLMOutput:
    logits: torch.Tensor  # (B, T, V) the next token's logits after each position
    attentions: list[torch.Tensor] | None = None  # per layer (B, H, T, Tk) every query head, when need_weights
    cache: DecoderCache | None = None  # per layer (k, v) (B, Hkv, Tk, hs) after rotation, when use_cache
    hidden_states: list[torch.Tensor] | None = None  # L + 1 (B, T, D): each layer's input, then the final norm's output


class CausalSelfAttention(nn.Module):
    """Causal self-attention with n_kv_heads key/value heads, each shared by n_heads / n_kv_heads query heads."""

    def __init__(self, c: CausalLMConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = c.n_heads, c.n_kv_heads, c.head_dim
        bias = c.bias
        self.q_proj = nn.Linear(c.d_model, c.n_heads * c.head_dim, bias=bias)
        self.k_proj = nn.Linear(c.d_model, c.n_kv_heads * c.head_dim, bias=bias)
        self.v_proj = nn.Linear(c.d_model, c.n_kv_heads * c.head_dim, bias=bias)
        self.o_proj = nn.Linear(c.n_heads * c.head_dim, c.d_model, bias=bias)
        self.rotary = Rotary(c.head_dim, c.rope_base) if c.positions == "rotary" else None
        self.dropout = c.attn_dropout

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, D) -> q (B, H, T, hs), k and v (B, Hkv, T, hs), before the rotation."""
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, hs)
        k = self.k_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, Hkv, T, hs)
        v = self.v_proj(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, Hkv, T, hs)
        return q, k, v

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, offset: int, rope: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """q and k at positions offset .. offset + T - 1, rotated (unchanged without rotary positions); `rope`: their
        (cos, sin), when the caller computed them once for every layer."""
        if self.rotary is None:
            return q, k
        cos, sin = rope if rope is not None else self.rotary.cos_sin(q.size(2), offset, q.device)  # (T, hs) each
        return Rotary.rotate(q, cos, sin), Rotary.rotate(k, cos, sin)

    def forward(
        self,
        x: torch.Tensor,
        need_weights: bool = False,
        past_kv: KV | None = None,
        head_mask: torch.Tensor | None = None,
        rope: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None, KV]:
        """x (B, T, D), the T newest positions -> (output (B, T, D), weights (B, H, T, Tk) or None, (k, v) cache)."""
        B, T, _ = x.shape
        past = past_kv[0].size(2) if past_kv is not None else 0
        q, k, v = self.project(x)
        q, k = self.rotate(q, k, past, rope)
        if past_kv is not None:
            k, v = torch.cat([past_kv[0], k], dim=2), torch.cat([past_kv[1], v], dim=2)  # (B, Hkv, Tk, hs)
        group = self.n_heads // self.n_kv_heads
        k_all, v_all = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (B, H, Tk, hs)
        p = self.dropout if self.training else 0.0
        if need_weights:
            out, weights = causal_attention(q, k_all, v_all, p)  # (B, H, T, hs), (B, H, T, Tk)
        elif T > 1:  # causal: SDPA may take its flash kernel (with a cache, the queries are the last T positions)
            mask = causal_mask(T, past + T, x.device) if past else None  # (1, 1, T, Tk)
            out = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask, dropout_p=p, is_causal=not past)
            weights = None
        else:  # one new token sees every key
            out, weights = F.scaled_dot_product_attention(q, k_all, v_all, dropout_p=p), None
        if head_mask is not None:
            out = out * head_multiplier(head_mask.to(out.dtype), self.n_heads)  # 0 switches a head off
        out = out.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim)  # (B, T, H * hs)
        return self.o_proj(out), weights, (k, v)


def causal_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dropout_p: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(hs)) v over the keys at or before each query (the queries are the last Tq of Tk
    positions): (output (B, H, Tq, hs), weights (B, H, Tq, Tk)). Every row sees at least itself, so the future's
    weights come out of the softmax as exact zeros (exp of the most negative float), with no second pass to zero
    them as `explicit_attention` needs for rows with nothing to see."""
    Tq, Tk = q.size(2), k.size(2)
    scores = (q * q.size(-1) ** -0.5) @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    if Tq > 1:
        scores.masked_fill_(~causal_mask(Tq, Tk, q.device), torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return dropped @ v, weights


class Block(nn.Module):
    """Pre-norm: x + attn(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, c: CausalLMConfig):
        super().__init__()
        self.attn_norm = norm(c)
        self.attn = CausalSelfAttention(c)
        self.mlp_norm = norm(c)
        self.mlp = feed_forward(c)
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x, need_weights=False, past_kv=None, head_mask=None, rope=None):
        a, weights, kv = self.attn(self.attn_norm(x), need_weights, past_kv, head_mask, rope)
        x = x + self.dropout(a)
        x = x + self.dropout(self.mlp(self.mlp_norm(x)))
        return x, weights, kv


def last_query(block: Block, x: torch.Tensor, head_mask: torch.Tensor | None = None) -> torch.Tensor:
    """x (B, T, D) into `block` -> the block's output at the last position only (B, 1, D): the earlier positions
    give their keys and values (as a cache would), the last one alone asks its query and runs the feed-forward."""
    if x.size(1) == 1:
        return block(x, head_mask=head_mask)[0]
    attn = block.attn
    q, k, v = attn.project(block.attn_norm(x[:, :-1]))  # (B, H, T - 1, hs), (B, Hkv, T - 1, hs) twice
    _, k = attn.rotate(q, k, 0)
    return block(x[:, -1:], past_kv=(k, v), head_mask=head_mask)[0]  # (B, 1, D)


class CausalLM(nn.Module, ShardedWeights, PyTorchModelHubMixin, pipeline_tag="text-generation", **HUB_KWARGS):
    """Token embeddings, n_layers blocks, a final norm and the output projection (tied to the embeddings)."""

    def __init__(self, config: CausalLMConfig):
        super().__init__()
        self.config = c = config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.positions = Positions(c.positions, c.max_len, c.d_model) if c.positions != "rotary" else None
        self.dropout = nn.Dropout(c.dropout)
        self.layers = nn.ModuleList(Block(c) for _ in range(c.n_layers))
        self.norm = norm(c)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2: residual projections scaled by the depth
            if name.endswith(("o_proj.weight", "down.weight", "net.3.weight")):
                nn.init.normal_(p, std=0.02 / (2 * c.n_layers) ** 0.5)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(
        self,
        ids: torch.Tensor,
        need_weights: bool = False,
        head_mask: StackMask = None,
        cache: DecoderCache | None = None,
        use_cache: bool = False,
        need_hidden: bool = False,
    ) -> CausalLMOutput:
        """ids (B, T): the whole sequence, or with a cache only the new tokens (rows unpadded) -> CausalLMOutput.
        head_mask: per layer (H,) or (B, H) multipliers on each query head's output, this call only."""
        past = cache.length if cache is not None else 0
        if past + ids.size(1) > self.config.max_len:
            raise ValueError(f"{past + ids.size(1)} positions: longer than max_len {self.config.max_len}")
        x = self.tok_emb(ids)  # (B, T, D)
        if self.positions is not None:
            x = self.positions(x, offset=past)
        x = self.dropout(x)
        rotary = self.layers[0].attn.rotary if self.layers else None
        rope = rotary.cos_sin(ids.size(1), past, ids.device) if rotary is not None else None  # once for all layers
        out = CausalLMOutput(None, [], DecoderCache() if use_cache else None, [])
        for i, block in enumerate(self.layers):
            out.hidden_states.append(x)
            past_kv = cache.self_kv[i] if cache is not None else None
            x, weights, kv = block(x, need_weights, past_kv, layer_mask(head_mask, i), rope)
            out.attentions.append(weights)
            if use_cache:
                out.cache.self_kv.append(kv)
        x = self.norm(x)
        out.hidden_states.append(x)
        out.logits = self.lm_head(x)  # (B, T, V)
        out.attentions = out.attentions if need_weights else None
        out.hidden_states = out.hidden_states if need_hidden else None
        return out

    def logits_from_layer(
        self, layer: int, hidden: torch.Tensor, head_mask: StackMask = None, last_only: bool = False
    ) -> torch.Tensor:
        """hidden (B, T, D): what block `layer` (0 .. L - 1) read in a pass over whole sequences (hidden_states[layer])
        -> logits (B, T, V) of the blocks from `layer` on run again (head_mask as forward's, by the model's layer
        numbers); the blocks below are not run: a change from `layer` on cannot reach them. last_only: (B, V), the
        logits after the last position alone, where the last block asks one query and the output projection reads
        one row."""
        rotary = self.layers[0].attn.rotary
        rope = rotary.cos_sin(hidden.size(1), 0, hidden.device) if rotary is not None else None
        x, stop = hidden, len(self.layers) - 1 if last_only else len(self.layers)
        for i in range(layer, stop):
            x = self.layers[i](x, head_mask=layer_mask(head_mask, i), rope=rope)[0]  # (B, T, D)
        if not last_only:
            return self.lm_head(self.norm(x))  # (B, T, V)
        x = last_query(self.layers[-1], x, layer_mask(head_mask, len(self.layers) - 1))  # (B, 1, D)
        return self.lm_head(self.norm(x[:, -1]))  # (B, V)

    @classmethod
    def from_llama(cls, folder_or_repo_id: str, sha256: str | None = None) -> "CausalLM":
        """A Llama-architecture checkpoint (config.json + safetensors with `transformers`' names: SmolLM2, TinyLlama,
        Llama) in this model; `sha256` checks the weights file first. See transformer/llama.py."""
        from .llama import from_llama

        return from_llama(cls, folder_or_repo_id, sha256)
