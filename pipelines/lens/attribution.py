"""Direct logit attribution: what each head and each feed-forward layer writes straight into the answer's logit (or
the difference of two logits), with every norm's scale frozen at its value in this pass, as the field does.

The residual stream at the readout is a sum of what was written into it: the embeddings, each head's output through
its slice of W_O (hook_result), each output bias, each feed-forward layer's output. A norm with its scale frozen is
affine: w * s * (x - mean(x)) + b (LayerNorm; RMSNorm has no mean and no b), so it maps each written part on its own
and adds its bias b as one more part. The parts therefore still add up, after every norm between where they were
written and the readout, to the state the readout reads: for the language model and the translator (a linear
unembedding) the terms sum to the model's own logit (difference), to float error, pre-norm and post-norm alike. The
classifier's BERT pooler (tanh) is not linear: there each part is read through the gradient at the pooled state, and
what that linearisation leaves is reported (`unexplained`).
"""

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from pipelines.lens.readout import Readout


@dataclass(frozen=True)
class Attribution:
    """Each part's direct contribution to `total`, the model's own logit of `target` (minus `contrast`'s)."""

    heads: np.ndarray  # (L, H) self-attention heads
    mlps: np.ndarray  # (L,) feed-forward layers
    rest: float  # the embeddings and every bias (attention outputs', norms')
    total: float  # from the model's ordinary forward
    target: str
    contrast: str | None
    cross: np.ndarray | None = None  # (L, H) the decoder's cross-attention heads, where there are
    exact: bool = True  # the readout is linear: the terms add up to total
    unexplained: float = 0.0  # total - the sum of the terms: float error, or what a non-linear readout leaves

    @property
    def terms_sum(self) -> float:
        cross = float(self.cross.sum()) if self.cross is not None else 0.0
        return float(self.heads.sum()) + cross + float(self.mlps.sum()) + self.rest


class Parts:
    """The written parts (N, P, D) at the positions read out, with each norm applied to them as it is frozen."""

    def __init__(self, L: int, H: int, P: int, D: int, cross: bool, like: torch.Tensor):
        self.L, self.H = L, H
        n = 1 + L * H + L + (L * H if cross else 0)
        self.x = torch.zeros(n, P, D, dtype=torch.float32, device=like.device)

    def head(self, layer: int) -> slice:
        return slice(1 + layer * self.H, 1 + (layer + 1) * self.H)

    def mlp(self, layer: int) -> int:
        return 1 + self.L * self.H + layer

    def cross(self, layer: int) -> slice:
        start = 1 + self.L * self.H + self.L + layer * self.H
        return slice(start, start + self.H)

    def norm(self, module: nn.Module, inp: torch.Tensor) -> None:
        """Apply `module` (LayerNorm, RMSNorm or Identity) frozen at its input inp (P, D): every part scaled alike,
        its bias added to the rest (part 0)."""
        if isinstance(module, nn.Identity):
            return
        eps = module.eps
        if isinstance(module, nn.LayerNorm):
            scale = (inp.var(-1, unbiased=False, keepdim=True) + eps).rsqrt()  # (P, 1)
            self.x = (self.x - self.x.mean(-1, keepdim=True)) * scale * module.weight.float()
            if module.bias is not None:
                self.x[0] += module.bias.float()
        else:  # RMSNorm
            scale = (inp.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
            self.x = self.x * scale * module.weight.float()


def _written(readout: Readout, cache: dict, pos) -> tuple[Parts, torch.Tensor]:
    """The parts of the residual stream at positions `pos`, through every norm to the readout; and that state (P, D)."""
    g = lambda i, name: cache[readout.point(i, name)][0, pos].float()  # noqa: E731  (P, ...) of one cached point
    blocks = readout.blocks
    first, embed = blocks[0].attn, g(0, "hook_resid_pre")  # (P, D)
    cross = blocks[0].cross_attn is not None
    parts = Parts(len(blocks), first.n_heads, embed.size(0), embed.size(1), cross, embed)
    parts.x[0] = embed
    for i, block in enumerate(blocks):
        parts.x[parts.head(i)] = g(i, "attn.hook_result").transpose(0, 1)  # (H, P, D)
        parts.x[0] += block.attn.b_O.float()
        if not block.norm_first:
            parts.norm(block.attn_norm, g(i, "hook_resid_pre") + g(i, "hook_attn_out"))
        mid = g(i, "hook_resid_mid")
        if cross:
            parts.x[parts.cross(i)] = g(i, "cross_attn.hook_result").transpose(0, 1)
            parts.x[0] += block.cross_attn.b_O.float()
            if not block.norm_first:
                parts.norm(block.cross_norm, mid + g(i, "hook_cross_attn_out"))
            mid = g(i, "hook_resid_cross")
        parts.x[parts.mlp(i)] = g(i, "hook_mlp_out")
        if not block.norm_first:
            parts.norm(block.mlp_norm, mid + g(i, "hook_mlp_out"))
    last = g(len(blocks) - 1, "hook_resid_post")
    parts.norm(readout.final_norm, last)
    return parts, readout.final_norm(last)


STREAM = ("hook_resid_pre", "attn.hook_result", "hook_attn_out", "hook_resid_mid")
CROSS = ("cross_attn.hook_result", "hook_cross_attn_out", "hook_resid_cross")


def names(readout: Readout) -> list[str]:
    """The hook points an attribution reads."""
    out = []
    for i, block in enumerate(readout.blocks):
        points = STREAM + (CROSS if block.cross_attn is not None else ()) + ("hook_mlp_out", "hook_resid_post")
        out += [readout.point(i, n) for n in points]
    return out


@torch.no_grad()
def direct_logit_attribution(
    readout: Readout,
    cache: dict,
    total: float,
    target: int,
    contrast: int | None,
    position: int = -1,
    labels: tuple[str, str | None] = ("", None),
    pool_weights: torch.Tensor | None = None,
) -> Attribution:
    """The attribution of one cached pass (a batch of one holding names(readout)) to output `target` (minus
    `contrast`) at `position`; total: the model's own logit (difference) there. The classifier reads every position
    through its pooling: pool_weights (T,) as its pass pooled them."""
    parts, state = _written(readout, cache, readout.at(position))
    values, exact = readout.shares(parts.x, state, target, contrast, pool_weights)
    L = parts.L
    v = values.cpu().numpy().astype(np.float64)
    heads = np.stack([v[parts.head(i)] for i in range(L)])
    cross = np.stack([v[parts.cross(i)] for i in range(L)]) if readout.blocks[0].cross_attn is not None else None
    mlps = np.array([v[parts.mlp(i)] for i in range(L)])
    terms = float(heads.sum()) + (float(cross.sum()) if cross is not None else 0.0) + float(mlps.sum()) + float(v[0])
    return Attribution(heads, mlps, float(v[0]), float(total), *labels, cross, exact, float(total) - terms)
