"""Where a model's residual stream becomes its answer, one class a family: the stack whose blocks write it (the
classifier's encoder, the translator's decoder, the language model's blocks), its final norm, and the readout (the
unembedding; the classifier's pooling and head). A readout is linear for the language model and the translator, so a
sum of residual components reads out as the sum of their readouts; the classifier's BERT pooler (tanh) is not, and its
attribution is linearised at the pooled state (attribution.py says so on the result)."""

from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Readout:
    """One stack's residual stream and how it is read out; `prefix` names its hook points ("" or "decoder.")."""

    prefix: str
    blocks: nn.ModuleList
    final_norm: nn.Module  # nn.Identity for a post-norm stack: each block already ends in a norm
    norm_first: bool
    unembed: torch.Tensor  # (D, V) or (D, C): W_U

    def states(self, cache: dict) -> list[torch.Tensor]:
        """The L + 1 residual states (B, T, D) of a cached pass: what the first block read, then each block's output."""
        first = cache[f"{self.prefix}blocks.0.hook_resid_pre"]
        return [first] + [cache[f"{self.prefix}blocks.{i}.hook_resid_post"] for i in range(len(self.blocks))]

    def names(self) -> list[str]:
        """The hook points states() reads."""
        return [f"{self.prefix}blocks.0.hook_resid_pre"] + [
            f"{self.prefix}blocks.{i}.hook_resid_post" for i in range(len(self.blocks))
        ]

    def logits(self, state: torch.Tensor) -> torch.Tensor:
        """state (B, T, D) -> (B, T, V) the unembedding of each position after the final norm."""
        return self.final_norm(state) @ self.unembed

    @property
    def layer_names(self) -> list[str]:
        return ["embeddings"] + [f"layer {i}" for i in range(len(self.blocks))]


class ClassifierReadout(Readout):
    """The classifier's: each position's state through its pooler and head (what the head would read there), and the
    pooled state (the model's own pooling weights over that layer's states) for the prediction."""

    def __init__(self, model):
        enc = model.encoder
        super().__init__("", enc.blocks, enc.final_norm, model.config.norm_first, model.W_U)
        self.model = model

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D) pooled or one position's state -> (..., C) logits: the pooler (BERT's) and the linear head."""
        m = self.model
        return m.head(x if m.pooler is None else m.pooler(x))

    def logits(self, state: torch.Tensor) -> torch.Tensor:
        """state (B, T, D) -> (B, T, C) the head on each position's (normed) state."""
        return self.head(self.final_norm(state))

    def pooled_logits(self, state: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        """state (B, T, D), real (B, T) bool -> (B, C) the prediction had the encoder stopped at this state."""
        x = self.final_norm(state)
        return self.head((self.model.pool_weights(x, real).unsqueeze(-1) * x).sum(1))


def lm_readout(model) -> Readout:
    return Readout("", model.blocks, model.final_norm, True, model.W_U)


def decoder_readout(model) -> Readout:
    d = model.decoder
    return Readout("decoder.", d.blocks, d.final_norm, model.config.norm_first, model.W_U)
