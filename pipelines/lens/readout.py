"""Where a model's residual stream becomes its answer, one class a family: the stack whose blocks write it (the
classifier's encoder, the translator's decoder, the language model's blocks), its final norm, and the readout (the
unembedding; the classifier's pooling and head). A readout knows its own direction for a target and a contrast: it is
linear for the language model and the translator, so a sum of residual components reads out as the sum of their
readouts; the classifier's BERT pooler (tanh) is not, and its attribution is linearised at the pooled state."""

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from pipelines.kinds import CAUSAL, DECODER, ENCODER, SELF
from pipelines.models.adapter import OurCausalLM, OurClassifier, OurSeq2Seq
from pipelines.models.hook_names import block_point


@dataclass
class Readout:
    """One stack's residual stream and how it is read out; `kind` names its hook points (pipelines.kinds)."""

    kind: str
    blocks: nn.ModuleList
    final_norm: nn.Module  # nn.Identity for a post-norm stack: each block already ends in a norm
    norm_first: bool
    unembed: torch.Tensor  # (D, V) or (D, C): W_U

    def point(self, layer: int, name: str) -> str:
        """The name of block point `name` ("hook_resid_pre", "attn.hook_z", ...) of block `layer` of this stack."""
        return block_point(self.kind, layer, name)

    def states(self, cache: dict) -> list[torch.Tensor]:
        """The L + 1 residual states (B, T, D) of a cached pass: what the first block read, then each block's output."""
        return [cache[n] for n in self.names()]

    def names(self) -> list[str]:
        """The hook points states() reads."""
        return [self.point(0, "hook_resid_pre")] + [self.point(i, "hook_resid_post") for i in range(len(self.blocks))]

    def logits(self, state: torch.Tensor) -> torch.Tensor:
        """state (B, T, D) -> (B, T, V) the unembedding of each position after the final norm."""
        return self.final_norm(state) @ self.unembed

    def predictions(self, rows: list, states: list[torch.Tensor], real) -> list[torch.Tensor]:
        """The answer's log-probabilities (V,) read out at each layer, from the lens's rows (logit_lens.top's) of
        the L + 1 states: the last position's."""
        return [r[2] for r in rows]

    def at(self, position: int) -> slice:
        """The positions an attribution reads at `position`: that one."""
        return slice(position, position + 1 if position != -1 else None)

    def shares(self, parts: torch.Tensor, state: torch.Tensor, target: int, contrast: int | None, pool=None):
        """(each written part's share (N,) of the logit of target minus contrast's, whether they add up exactly)
        from the parts (N, P, D) at the positions read (at()) and the state (P, D) they sum to."""
        u = self.unembed[:, target].float() - (self.unembed[:, contrast].float() if contrast is not None else 0)
        return parts[:, 0] @ u, True

    @property
    def layer_names(self) -> list[str]:
        return ["embeddings"] + [f"layer {i}" for i in range(len(self.blocks))]


class ClassifierReadout(Readout):
    """The classifier's: each position's state through its pooler and head (what the head would read there), and the
    pooled state (the model's own pooling weights over that layer's states) for the prediction."""

    def __init__(self, model):
        enc = model.encoder
        super().__init__(SELF.name, enc.blocks, enc.final_norm, model.config.norm_first, model.W_U)
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

    def predictions(self, rows: list, states: list[torch.Tensor], real) -> list[torch.Tensor]:
        """The pooled state's: the prediction is no position's."""
        return [self.pooled_logits(s, real)[0].float().log_softmax(-1) for s in states]

    def at(self, position: int) -> slice:
        """Every position: the head reads them all through its pooling."""
        return slice(None)

    def shares(self, parts: torch.Tensor, state: torch.Tensor, target: int, contrast: int | None, pool=None):
        """Each part pooled as the pass pooled its states (pool (T,)) and read through the gradient at the pooled
        state: exact where the head is linear (no pooler), its bias one more fixed term."""
        pooled_parts = (parts * pool.float()[None, :, None]).sum(1)  # (N, D)
        pooled = (pool.float()[:, None] * state).sum(0).requires_grad_(True)  # (D,)
        with torch.enable_grad():
            logits = self.head(pooled)
            diff = logits[target] - (logits[contrast] if contrast is not None else 0.0)
            (grad,) = torch.autograd.grad(diff, pooled)
        values = pooled_parts @ grad  # (N,)
        exact = self.model.pooler is None
        if exact:  # a linear head: its bias is one more fixed term
            bias = self.model.b_U.float()
            values[0] += bias[target] - (bias[contrast] if contrast is not None else 0.0)
        return values, exact


def lm_readout(model) -> Readout:
    return Readout(CAUSAL.name, model.blocks, model.final_norm, True, model.W_U)


def decoder_readout(model) -> Readout:
    d = model.decoder
    return Readout(DECODER.name, d.blocks, d.final_norm, model.config.norm_first, model.W_U)


def encoder_readout(model) -> Readout:
    """The translator's encoder, as patching reads it (its answer is the decoder's: only its points are used)."""
    e = model.encoder
    return Readout(ENCODER.name, e.blocks, e.final_norm, model.config.norm_first, model.W_U)


READOUTS: dict[type, Callable] = {
    OurCausalLM: lm_readout,
    OurSeq2Seq: decoder_readout,
    OurClassifier: ClassifierReadout,
}


def readout_of(adapter) -> Readout:
    """The stack an adapter's model answers from; ValueError for a model read through `transformers`, whose residual
    stream this project does not name."""
    for cls, make in READOUTS.items():
        if isinstance(adapter, cls):
            return make(adapter.model)
    raise ValueError(
        "Layer by layer and why a head looks there read the residual stream through this project's hook points: they "
        "are there for the models "
        "of this project (from scratch or with public weights loaded into our code), not for a transformers model."
    )
