"""Decoder: a stack of causal self-attention + cross-attention blocks, with a key/value cache."""

from dataclasses import dataclass, field

import torch

from .attention import KV
from .config import TransformerConfig
from .head_mask import StackMask, layer_mask
from .layers import CrossInput
from .masks import causal_mask
from .stack import LayerStack, WeightViews, stacked


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


class Decoder(LayerStack, WeightViews):
    """A stack of decoder blocks; the cache makes step-by-step decoding cost O(T) per step. The cross-attention's
    weight views are cross_W_Q, cross_W_K, cross_W_V, cross_W_O (L, H, ...)."""

    def __init__(self, c: TransformerConfig, n_layers: int):
        super().__init__(c, n_layers, cross=True)

    cross_W_Q = property(lambda self: stacked(self.blocks, "cross_attn", "W_Q"))
    cross_W_K = property(lambda self: stacked(self.blocks, "cross_attn", "W_K"))
    cross_W_V = property(lambda self: stacked(self.blocks, "cross_attn", "W_V"))
    cross_W_O = property(lambda self: stacked(self.blocks, "cross_attn", "W_O"))

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
        masks = DecoderMasks(memory, src_mask, tgt_pad_mask, head_mask, cross_head_mask)
        return self.forward_from(0, self.embed(tok, offset=past), masks, cache, use_cache, need_weights)

    def forward_from(
        self,
        start: int,
        x: torch.Tensor,
        masks: "DecoderMasks",
        cache: DecoderCache | None = None,
        use_cache: bool = False,
        need_weights: bool = False,
    ) -> DecoderStackOutput:
        """x (B, Tq, D), what block `start` reads (decoder.blocks.{start}.hook_resid_pre of an earlier pass) ->
        the output of the blocks from `start` on (a cache, when used, covers those blocks only)."""
        past = cache.length if cache is not None else 0
        Tq = x.size(1)
        self_mask = causal_mask(Tq, past + Tq, x.device)  # (1, 1, Tq, Tt)
        if masks.tgt_pad is not None:
            self_mask = self_mask & masks.tgt_pad  # (B, 1, Tq, Tt)
        out = DecoderStackOutput(x, DecoderCache() if use_cache else None, [], [])
        for i in range(start, len(self.blocks)):
            j = i - start  # the cache's index
            cross = CrossInput(
                masks.memory,
                masks.src,
                cache.cross_kv[j] if cache is not None else None,
                layer_mask(masks.cross_head, i),
            )
            past_kv = cache.self_kv[j] if cache is not None else None
            step = self.blocks[i](
                x,
                mask=self_mask,
                need_weights=need_weights,
                past_kv=past_kv,
                head_mask=layer_mask(masks.head, i),
                cross=cross,
            )
            x = step.x
            out.self_attentions.append(step.weights)
            out.cross_attentions.append(step.cross_weights)
            if use_cache:
                out.cache.self_kv.append(step.kv)
                out.cache.cross_kv.append(step.cross_kv)
        out.hidden = self.final(x)
        if not need_weights:
            out.self_attentions = out.cross_attentions = None
        return out


@dataclass
class DecoderMasks:
    """What every decoder block reads besides its input: the encoder's output and the masks of one pass."""

    memory: torch.Tensor  # (B, Ts, D)
    src: torch.Tensor | None = None  # (B, 1, 1, Ts) True = a real source token
    tgt_pad: torch.Tensor | None = None  # (B, 1, 1, Tt) True = a real target token
    head: StackMask = None  # per layer (H,) or (B, H) on the self-attention heads
    cross_head: StackMask = None  # and on the cross-attention heads
