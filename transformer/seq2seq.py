"""Seq2SeqTransformer: encoder-decoder with separate encode / decode and a key/value cache."""

import math
from dataclasses import dataclass, field

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from .config import Seq2SeqConfig
from .embeddings import Positions
from .encoder import Encoder
from .hub import HUB_KWARGS
from .layers import KV, DecoderLayer
from .masks import causal_mask, padding_mask


@dataclass
class EncoderOutput:
    memory: torch.Tensor  # (B, Ts, D)
    src_mask: torch.Tensor  # (B, 1, 1, Ts), True = real token
    attentions: list[torch.Tensor] | None = None  # per layer (B, H, Ts, Ts)


@dataclass
class DecoderCache:
    """Per-layer keys and values: self-attention grows by one step per call, cross-attention is fixed."""

    self_kv: list[KV] = field(default_factory=list)
    cross_kv: list[KV] = field(default_factory=list)

    @property
    def length(self) -> int:
        return self.self_kv[0][0].size(2) if self.self_kv else 0

    def reorder(self, index: torch.Tensor) -> "DecoderCache":
        """Select batch rows (beam search): index (B',) into the batch dimension."""
        pick = lambda kv: (kv[0].index_select(0, index), kv[1].index_select(0, index))  # noqa: E731
        return DecoderCache([pick(kv) for kv in self.self_kv], [pick(kv) for kv in self.cross_kv])


@dataclass
class DecoderOutput:
    logits: torch.Tensor  # (B, Tq, V)
    cache: DecoderCache | None = None
    self_attentions: list[torch.Tensor] | None = None  # per layer (B, H, Tq, Tt)
    cross_attentions: list[torch.Tensor] | None = None  # per layer (B, H, Tq, Ts)


class Decoder(nn.Module):
    """A stack of decoder layers; the cache makes step-by-step decoding cost O(T) per step."""

    def __init__(self, c: Seq2SeqConfig):
        super().__init__()
        self.positions = Positions(c.positions, c.max_len, c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        self.layers = nn.ModuleList(
            DecoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, c.attn_dropout, c.norm_first)
            for _ in range(c.n_decoder_layers)
        )
        self.final_norm = nn.LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.scale = math.sqrt(c.d_model)

    def forward(self, tok, memory, src_mask, tgt_pad_mask, cache, use_cache, need_weights):
        past = cache.length if cache is not None else 0
        Tq = tok.size(1)
        self_mask = causal_mask(Tq, past + Tq, tok.device)  # (1, 1, Tq, Tt)
        if tgt_pad_mask is not None:
            self_mask = self_mask & tgt_pad_mask
        x = self.dropout(self.positions(tok * self.scale, offset=past))
        new_cache = DecoderCache() if use_cache else None
        self_attn, cross_attn = [], []
        for i, layer in enumerate(self.layers):
            out = layer(
                x,
                memory,
                self_mask,
                src_mask,
                need_weights,
                past_self_kv=cache.self_kv[i] if cache is not None else None,
                past_cross_kv=cache.cross_kv[i] if cache is not None else None,
            )
            x = out.x
            self_attn.append(out.self_weights)
            cross_attn.append(out.cross_weights)
            if use_cache:
                new_cache.self_kv.append(out.self_kv)
                new_cache.cross_kv.append(out.cross_kv)
        return (
            self.final_norm(x),
            new_cache,
            (self_attn if need_weights else None),
            (cross_attn if need_weights else None),
        )


class Seq2SeqTransformer(nn.Module, PyTorchModelHubMixin, pipeline_tag="translation", **HUB_KWARGS):
    """Encoder-decoder transformer (Vaswani et al., 2017) over a shared vocabulary."""

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.config = c = config
        self.src_emb = nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_id)
        nn.init.normal_(self.src_emb.weight, std=c.d_model**-0.5)
        self.tgt_emb = self.src_emb if c.tie_embeddings else nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_id)
        self.encoder = Encoder(
            c.d_model,
            c.n_heads,
            c.d_ff,
            c.n_encoder_layers,
            c.dropout,
            c.attn_dropout,
            c.norm_first,
            c.positions,
            c.max_len,
        )
        self.decoder = Decoder(c)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_embeddings:
            self.lm_head.weight = self.tgt_emb.weight

    def encode(self, src_ids: torch.Tensor, need_weights: bool = False) -> EncoderOutput:
        """src_ids (B, Ts) -> EncoderOutput."""
        src_mask = padding_mask(src_ids, self.config.pad_id)  # (B, 1, 1, Ts)
        memory, attentions = self.encoder(self.src_emb(src_ids), src_mask, need_weights)
        return EncoderOutput(memory, src_mask, attentions)

    def decode(
        self,
        tgt_ids: torch.Tensor,
        enc: EncoderOutput,
        cache: DecoderCache | None = None,
        use_cache: bool = False,
        need_weights: bool = False,
    ) -> DecoderOutput:
        """tgt_ids (B, Tq): the whole target prefix, or with a cache only the new tokens."""
        tgt_pad_mask = None
        if cache is None and (tgt_ids == self.config.pad_id).any():
            tgt_pad_mask = padding_mask(tgt_ids, self.config.pad_id)  # (B, 1, 1, Tt)
        x, new_cache, self_attn, cross_attn = self.decoder(
            self.tgt_emb(tgt_ids), enc.memory, enc.src_mask, tgt_pad_mask, cache, use_cache, need_weights
        )
        return DecoderOutput(self.lm_head(x), new_cache, self_attn, cross_attn)

    def forward(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor, need_weights: bool = False) -> DecoderOutput:
        """Teacher forcing: logits (B, Tt, V) for next tokens after each tgt_ids position."""
        return self.decode(tgt_ids, self.encode(src_ids, need_weights), need_weights=need_weights)
