"""Inside one head of a decoder-only model (transformer.CausalLM): what pipelines.attention.inside_head shows, plus what
such a head does differently. Its queries and keys are rotated before they meet (rotary positions: q and k are shown
before and after the rotation), row i sees keys 0..i only (the causal mask), and its key/value heads are grouped: with
n_kv_heads < n_heads, key/value head g serves query heads g * G .. g * G + G - 1 (G = n_heads / n_kv_heads), as the
model's `repeat_interleave` shares them.

Everything is the model's own: one forward pass (the one that makes the result's maps) with its hook points cached
(attn.hook_q and hook_k after the rotation, hook_v, hook_z), the rotation undone for the "before" views (a rotation
is orthogonal: the inverse turns by -angle), and the softmax weights the run's maps. So
softmax(mask(q_rot . k_rot / sqrt(hs))) of a row equals that head's returned attention row.
"""

import dataclasses
from dataclasses import dataclass

import torch

from pipelines.attention.inside_head import HEAD_POINTS, AttentionInternals, HeadInternals, KindInternals
from pipelines.contracts import CausalLMAdapter
from pipelines.kinds import CAUSAL
from pipelines.models.hook_names import attn_point
from transformer.embeddings import Rotary
from transformer.masks import causal_mask


@dataclass
class CausalHeadInternals(HeadInternals):
    """One query of one causal head: HeadInternals (q and keys after the rotation: what the scores read) and what came
    before the rotation, with the key/value head this query head reads and the group that shares it."""

    q_before: torch.Tensor  # (hs,) q_proj's output for this query, before the rotation
    keys_before: torch.Tensor  # (Tk, hs) k_proj's output for every key of the key/value head, before the rotation
    kv_head: int  # the key/value head this query head reads (from 0)
    group: range  # the query heads that read it (this one among them)
    n_kv_heads: int
    rotated: bool  # False: a model without rotary positions (then before = after)

    key_fields = (*HeadInternals.key_fields, "keys_before")

    @property
    def scores_before(self) -> torch.Tensor:
        """(Tk,) q . k_j before the rotation: what the tokens' contents alone would score, positions apart."""
        return self.keys_before @ self.q_before


@dataclass
class CausalInternals(AttentionInternals):
    """AttentionInternals of kind "causal" (keys and values repeated to every query head, after the rotation) with the
    projections before the rotation, per key/value head."""

    q_before: torch.Tensor  # (L, H, T, hs)
    k_before: torch.Tensor  # (L, Hkv, T, hs)
    rotated: bool

    @property
    def n_kv_heads(self) -> int:
        return self.k_before.size(1)

    def kv_head_of(self, head: int) -> tuple[int, range]:
        """(the key/value head query head `head` reads, the query heads that share it)."""
        group = self.q_before.size(1) // self.n_kv_heads
        kv = head // group
        return kv, range(kv * group, (kv + 1) * group)

    def head(self, kind: str, layer: int, head: int, query: int) -> CausalHeadInternals:
        """One query of one head, step by step, with its rotation and its group (IndexError for what the run lacks)."""
        base = super().head(kind, layer, head, query)
        kv, group = self.kv_head_of(head)
        q_before, keys_before = self.q_before[layer, head, query], self.k_before[layer, kv]  # (hs,), (Tk, hs)
        fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
        return CausalHeadInternals(**fields, q_before=q_before, keys_before=keys_before, kv_head=kv, group=group,
                                   n_kv_heads=self.n_kv_heads, rotated=self.rotated)  # fmt: skip


def _unrotated(x: torch.Tensor, rotary: Rotary | None) -> torch.Tensor:
    """(h, T, hs) rotated at positions 0 .. T - 1 -> as the projection gave it, before the rotation."""
    if rotary is None:
        return x
    cos, sin = rotary.cos_sin(x.size(1), 0, x.device)  # (T, hs) each
    return Rotary.rotate(x, cos, -sin)


def _layer(cache: dict, attn, i: int, n_heads: int) -> dict[str, torch.Tensor]:
    """One layer's cached points, heads first: keys and values repeated to every query head as the layer repeats them,
    q and k also before the rotation."""
    q, k, v, z = (cache[attn_point(CAUSAL.name, i, p)][0].float().transpose(0, 1) for p in HEAD_POINTS)  # (h, T, hs)
    group = n_heads // k.size(0)
    return {
        "q": q, "k": k.repeat_interleave(group, 0), "v": v.repeat_interleave(group, 0), "heads": z,
        "q_before": _unrotated(q, attn.rotary), "k_before": _unrotated(k, attn.rotary),
    }  # fmt: skip


@torch.no_grad()
def causal_internals(adapter: CausalLMAdapter, ids: list[int]) -> CausalInternals:
    """Every head of a CausalLM adapter (pipelines.models.adapter.OurCausalLM) on one sequence of ids, from one
    forward pass with need_weights (the pass LanguageModelPipeline makes for a result's maps: result.sequence_ids)."""
    if not ids:
        raise ValueError("the sequence has no tokens")
    x = torch.tensor([ids], device=adapter.device)  # (1, T)
    L, H = adapter.n_layers, adapter.n_heads
    names = [attn_point(CAUSAL.name, i, p) for i in range(L) for p in HEAD_POINTS]
    run, cache = adapter.run_with_cache(lambda: adapter.forward(x, need_weights=True), names)
    blocks = adapter.model.blocks
    per = [_layer(cache, blocks[i].attn, i, H) for i in range(L)]
    stacked = {name: torch.stack([p[name] for p in per]).cpu() for name in per[0]}  # (L, H or Hkv, T, hs)
    w_o = adapter.W_O(CAUSAL.name).float().cpu()  # (L, H, hs, D)
    projected = stacked["heads"] @ w_o  # (L, H, T, D)
    value_norms = (stacked["v"] @ w_o).norm(dim=-1)  # (L, H, T)
    maps = torch.stack([a[0] for a in run.attentions]).float().cpu()  # (L, H, T, T)
    T = len(ids)
    kind = KindInternals(stacked["q"], stacked["k"], stacked["v"], stacked["heads"], maps, causal_mask(T, T)[0, 0],
                         projected, value_norms)  # fmt: skip
    rotated = any(block.attn.rotary is not None for block in blocks)
    return CausalInternals({CAUSAL.name: kind}, stacked["q_before"], stacked["k_before"], rotated)
