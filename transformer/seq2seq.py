"""Seq2SeqTransformer: encoder-decoder with separate encode / decode and a key/value cache."""

from dataclasses import dataclass

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from .config import Seq2SeqConfig
from .decoder import Decoder, DecoderCache
from .embeddings import token_embedding
from .encoder import Encoder, EncoderOutput
from .head_mask import HeadMasks
from .hooks import Hooked, HookRegistry
from .hub import HUB_KWARGS, ShardedWeights
from .legacy_names import accept_old_names
from .masks import padding_mask


@dataclass
class DecoderOutput:
    logits: torch.Tensor  # (B, Tq, V)
    cache: DecoderCache | None = None
    self_attentions: list[torch.Tensor] | None = None  # per layer (B, H, Tq, Tt)
    cross_attentions: list[torch.Tensor] | None = None  # per layer (B, H, Tq, Ts)


class Seq2SeqTransformer(
    nn.Module, Hooked, ShardedWeights, PyTorchModelHubMixin, pipeline_tag="translation", **HUB_KWARGS
):
    """Encoder-decoder transformer (Vaswani et al., 2017) over a shared vocabulary. Hook points: encoder.hook_embed,
    encoder.blocks.{l}.*, encoder.hook_final, the same under decoder. with decoder.blocks.{l}.cross_attn.*; weight
    views on model.encoder and model.decoder (W_Q ... W_O, and the decoder's cross_W_Q ...); W_U the output
    projection (D, V)."""

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.config = c = config
        self.src_emb = token_embedding(c.vocab_size, c.d_model, c.pad_id)
        self.tgt_emb = self.src_emb if c.tie_embeddings else token_embedding(c.vocab_size, c.d_model, c.pad_id)
        self.encoder = Encoder(c, c.n_encoder_layers)
        self.decoder = Decoder(c, c.n_decoder_layers)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_embeddings:
            self.lm_head.weight = self.tgt_emb.weight
        self.hook_registry = HookRegistry().bind(self)
        accept_old_names(self)

    @property
    def W_U(self) -> torch.Tensor:
        """(D, V) the output projection."""
        return self.lm_head.weight.T

    def encode(
        self, src_ids: torch.Tensor, need_weights: bool = False, head_mask: HeadMasks | None = None
    ) -> EncoderOutput:
        """src_ids (B, Ts) -> EncoderOutput. head_mask.encoder switches encoder heads off for this call."""
        src_mask = padding_mask(src_ids, self.config.pad_id)  # (B, 1, 1, Ts)
        enc_mask = head_mask.encoder if head_mask is not None else None
        return self.encoder(self.src_emb(src_ids), src_mask, need_weights=need_weights, head_mask=enc_mask)

    def decode(
        self,
        tgt_ids: torch.Tensor,
        enc: EncoderOutput,
        cache: DecoderCache | None = None,
        use_cache: bool = False,
        need_weights: bool = False,
        head_mask: HeadMasks | None = None,
    ) -> DecoderOutput:
        """One decoder pass. tgt_ids (B, Tq): the whole target prefix, or with a cache only the new tokens.
        head_mask.decoder / .cross switch decoder self- / cross-attention heads off for this call."""
        head_mask = head_mask or HeadMasks()
        tgt_pad_mask = None
        if cache is None and (tgt_ids == self.config.pad_id).any():
            tgt_pad_mask = padding_mask(tgt_ids, self.config.pad_id)  # (B, 1, 1, Tt)
        dec = self.decoder(
            self.tgt_emb(tgt_ids),
            enc.memory,
            src_mask=enc.src_mask,
            tgt_pad_mask=tgt_pad_mask,
            cache=cache,
            use_cache=use_cache,
            need_weights=need_weights,
            head_mask=head_mask.decoder,
            cross_head_mask=head_mask.cross,
        )
        return DecoderOutput(self.lm_head(dec.hidden), dec.cache, dec.self_attentions, dec.cross_attentions)

    def forward(
        self,
        src_ids: torch.Tensor,
        tgt_ids: torch.Tensor,
        need_weights: bool = False,
        head_mask: HeadMasks | None = None,
    ) -> DecoderOutput:
        """Teacher forcing: logits (B, Tt, V) for next tokens after each tgt_ids position.
        head_mask: multipliers on the heads of each kind of attention (HeadMasks), this call only."""
        enc = self.encode(src_ids, need_weights, head_mask=head_mask)
        return self.decode(tgt_ids, enc, need_weights=need_weights, head_mask=head_mask)
