"""Decoder: a stack of causal self-attention + cross-attention layers, with a key/value cache."""

from dataclasses import dataclass, field

import torch

from .config import TransformerConfig
from .head_mask import StackMask, layer_mask
from .layers import KV, DecoderLayer
from .masks import causal_mask
from .stack import LayerStack


@dataclass
class DecoderCache:
    """Per-layer keys and values: self-attention grows by one step per call, cross-attention is fixed."""

    self_kv: list[KV] = field(default_factory=list)
    cross_kv: list[KV] = field(default_factory=list)

    @property
    def length(self) -> int:
        return self.self_kv[0][0].size(2) if self.self_kv else 0

    def reorder(self, index: torch.Tensor, cross: bool = True) -> "DecoderCache":
        """Select batch rows (beam search): index (B',) into the batch dimension. cross=False keeps the
        cross-attention keys and values as they are: right when every row is replaced by one with the same
        source (the beams of one sentence)."""
        pick = lambda kv: (kv[0].index_select(0, index), kv[1].index_select(0, index))  # noqa: E731
        return DecoderCache(
            [pick(kv) for kv in self.self_kv], [pick(kv) for kv in self.cross_kv] if cross else self.cross_kv
        )


@dataclass
class DecoderStackOutput:
    hidden: torch.Tensor  # (B, Tq, D) the last layer's output, before the output projection
    cache: DecoderCache | None = None  # when use_cache
    self_attentions: list[torch.Tensor] | None = None  # per layer (B, H, Tq, Tt), when need_weights
    cross_attentions: list[torch.Tensor] | None = None  # per layer (B, H, Tq, Ts), when need_weights


class Decoder(LayerStack):
    """A stack of decoder layers; the cache makes step-by-step decoding cost O(T) per step."""

    def __init__(self, c: TransformerConfig, n_layers: int):
        super().__init__(c, DecoderLayer, n_layers)

    def forward(
        self,
        tok: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        tgt_pad_mask: torch.Tensor | None = None,
        cache: DecoderCache | None = None,
        use_cache: bool = False,
        need_weights: bool = False,
        head_mask: StackMask = None,
        cross_head_mask: StackMask = None,
    ) -> DecoderStackOutput:
        """tok (B, Tq, D) target vectors (only the new ones with a cache) over memory (B, Ts, D).
        head_mask / cross_head_mask: per layer (H,) or (B, H) multipliers on the self- / cross-attention heads."""
        past = cache.length if cache is not None else 0
        Tq = tok.size(1)
        self_mask = causal_mask(Tq, past + Tq, tok.device)  # (1, 1, Tq, Tt)
        if tgt_pad_mask is not None:
            self_mask = self_mask & tgt_pad_mask  # (B, 1, Tq, Tt)
        x = self.embed(tok, offset=past)
        out = DecoderStackOutput(x, DecoderCache() if use_cache else None, [], [])
        for i, layer in enumerate(self.layers):
            step = layer(
                x,
                memory,
                self_mask,
                src_mask,
                need_weights,
                past_self_kv=cache.self_kv[i] if cache is not None else None,
                past_cross_kv=cache.cross_kv[i] if cache is not None else None,
                head_mask=layer_mask(head_mask, i),
                cross_head_mask=layer_mask(cross_head_mask, i),
            )
            x = step.x
            out.self_attentions.append(step.self_weights)
            out.cross_attentions.append(step.cross_weights)
            if use_cache:
                out.cache.self_kv.append(step.self_kv)
                out.cache.cross_kv.append(step.cross_kv)
        out.hidden = self.final_norm(x)
        if not need_weights:
            out.self_attentions = out.cross_attentions = None
        return out
