"""Inside one head: how a row of attention is computed, and how much each weighted value carries.

One model run (the adapter's own forward, the one that makes the heatmaps) with the core's hook points cached
(adapter.run_with_cache: attn.hook_q, hook_k, hook_v and hook_z of every layer, pipelines/models/hook_names.py) keeps
what each head read and wrote: its queries, keys and values and its output (what the output projection read).
The softmax weights are the run's own attention maps, the same tensors the heatmaps show; everything else about one
query is arithmetic on those, done in `AttentionInternals.head`:

    scores = q . k_j          scaled = scores / sqrt(hs)        masked: -inf where the mask hides key j
    weights = softmax(masked)  output = sum_j weights_j v_j      projected = output W_O^h (the head's slice of W_O)

and the norm of each weighted, projected value, ||weights_j v_j W_O^h|| (Kobayashi et al. 2020, "Attention is
Not Only a Weight"): how much key j actually moves the output, not only how much it is looked at.
Works for every adapter (ours, `transformers` BERT-family and Marian): their heads all scale by 1/sqrt(hs).
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import torch

from pipelines.contracts import Adapter, CausalLMAdapter
from pipelines.kinds import CAUSAL
from pipelines.models.hook_names import attn_point, attn_points
from transformer.embeddings import Rotary
from transformer.masks import causal_mask


@dataclass
class HeadInternals:
    """One query of one head, step by step. Vectors are float32 on the CPU."""

    kind: str  # "self" | "encoder" | "decoder" | "cross"
    layer: int
    head: int
    query: int  # the row (query position)
    q: torch.Tensor  # (hs,) the query vector
    keys: torch.Tensor  # (Tk, hs) every key vector of the head
    values: torch.Tensor  # (Tk, hs) every value vector
    scores: torch.Tensor  # (Tk,) q . k_j
    scale: float  # 1 / sqrt(hs)
    scaled: torch.Tensor  # (Tk,) scores * scale
    mask: torch.Tensor  # (Tk,) bool, True = attend
    weights: torch.Tensor  # (Tk,) the softmax weights: the run's own attention row (the heatmap's)
    weighted_values: torch.Tensor  # (Tk, hs) weights_j * v_j
    output: torch.Tensor  # (hs,) the head's output, as the output projection read it (= weighted_values.sum(0))
    projected: torch.Tensor  # (D,) output @ W_O^h: the head's contribution to the block's output (bias apart)
    carried: torch.Tensor  # (Tk,) ||weights_j v_j W_O^h||: what each key's weighted value carries into it

    # the fields with one entry per key (a class attribute, not a field)
    key_fields = ("keys", "values", "scores", "scaled", "mask", "weights", "weighted_values", "carried")

    def up_to(self, n: int) -> "HeadInternals":
        """The first n keys only (a causal row that a view cut to n tokens: the later keys are hidden and weigh 0)."""
        return dataclasses.replace(self, **{name: getattr(self, name)[:n] for name in self.key_fields})

    @property
    def masked(self) -> torch.Tensor:
        """(Tk,) the scaled scores with hidden keys at -inf: what the softmax reads."""
        return self.scaled.masked_fill(~self.mask, float("-inf"))

    @property
    def projected_norm(self) -> float:
        return float(self.projected.norm())


@dataclass
class KindInternals:
    """Every layer and head of one kind of attention in one run (a batch of one)."""

    q: torch.Tensor  # (L, H, Tq, hs) queries
    k: torch.Tensor  # (L, H, Tk, hs) keys
    v: torch.Tensor  # (L, H, Tk, hs) values
    heads: torch.Tensor  # (L, H, Tq, hs) each head's output, as the output projection read it
    weights: torch.Tensor  # (L, H, Tq, Tk) the run's attention maps
    mask: torch.Tensor  # (Tq, Tk) bool, True = attend
    projected: torch.Tensor  # (L, H, Tq, D) each head's output through its slice of W_O
    value_norms: torch.Tensor  # (L, H, Tk) ||v_j W_O^h||

    def norm_maps(self) -> torch.Tensor:
        """(L, H, Tq, Tk) ||w_ij v_j W_O^h||: the attention maps weighted by what each value carries."""
        return self.weights * self.value_norms[:, :, None, :]

    def head_norms(self, layer: int, query: int) -> torch.Tensor:
        """(H,) ||projected|| of every head of a layer for one query: each head's share of the assembled output."""
        return self.projected[layer, :, query].norm(dim=-1)


@dataclass
class AttentionInternals:
    """What every head of a run read and wrote, by kind; `head` gives one query's steps."""

    kinds: dict[str, KindInternals]

    def head(self, kind: str, layer: int, head: int, query: int) -> HeadInternals:
        """The steps of one query of one head (IndexError for a layer, head or query the run lacks)."""
        ki = self.kinds[kind]
        q, keys, values = ki.q[layer, head, query], ki.k[layer, head], ki.v[layer, head]  # (hs,), (Tk, hs) x2
        scale = q.numel() ** -0.5
        scores = keys @ q  # (Tk,)
        weights = ki.weights[layer, head, query]  # (Tk,)
        weighted = weights[:, None] * values  # (Tk, hs)
        carried = weights * ki.value_norms[layer, head]  # (Tk,)
        return HeadInternals(
            kind, layer, head, query, q, keys, values, scores, scale, scores * scale, ki.mask[query], weights,
            weighted, ki.heads[layer, head, query], ki.projected[layer, head, query], carried,
        )  # fmt: skip


HEAD_POINTS = ("hook_q", "hook_k", "hook_v", "hook_z")


def _heads_first(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(1, T, h, hs) a hook point's value -> (H, T, hs) float32, key/value heads repeated to the n_heads query heads
    that read them."""
    x = x[0].float().transpose(0, 1)  # (h, T, hs)
    return x.repeat_interleave(n_heads // x.size(0), dim=0) if x.size(0) != n_heads else x


def kind_internals(
    cache: dict, w_o: torch.Tensor, weights: list[torch.Tensor], mask: torch.Tensor, kind: str, n_heads: int
) -> KindInternals:
    """One kind's cached points (every layer) as a KindInternals; w_o (L, H, hs, D) its output projections, weights:
    per layer (1, H, Tq, Tk) of the run."""
    per = {name: [] for name in ("q", "k", "v", "heads", "projected", "value_norms")}
    for i in range(len(weights)):
        for name, point in zip(("q", "k", "v", "heads"), HEAD_POINTS):
            per[name].append(_heads_first(cache[attn_point(kind, i, point)], n_heads))  # (H, T, hs)
        per["projected"].append(per["heads"][-1] @ w_o[i])  # (H, Tq, D)
        per["value_norms"].append((per["v"][-1] @ w_o[i]).norm(dim=-1))  # (H, Tk)
    stacked = {name: torch.stack(xs).cpu() for name, xs in per.items()}
    maps = torch.stack([w[0] for w in weights]).float().cpu()  # (L, H, Tq, Tk)
    return KindInternals(**stacked, weights=maps, mask=mask.cpu())


def run_maps(run) -> dict[str, list[torch.Tensor]]:
    """{kind: per layer (1, H, Tq, Tk)} of an adapter's ClassifierRun or Seq2SeqRun."""
    if hasattr(run, "cross"):
        return {"encoder": run.encoder, "decoder": run.decoder, "cross": run.cross}
    return {"self": run.attentions}


def masks_for(kinds, Tq: dict[str, int], Tk: dict[str, int]) -> dict[str, torch.Tensor]:
    """{kind: (Tq, Tk) bool} for one unpadded input: the decoder's self-attention is causal, the rest see all."""
    out = {}
    for kind in kinds:
        full = torch.ones(Tq[kind], Tk[kind], dtype=torch.bool)
        out[kind] = full & causal_mask(Tq[kind], Tk[kind])[0, 0] if kind == "decoder" else full
    return out


@torch.no_grad()
def record(adapter: Adapter, forward: Callable[[], object]) -> AttentionInternals:
    """forward(): the adapter's own forward with need_weights=True on a batch of one (no padding), run once with every
    attention's q, k, v and z points cached."""
    run, cache = adapter.run_with_cache(forward, attn_points(adapter.head_layers, HEAD_POINTS))
    maps = run_maps(run)
    shapes = {kind: maps[kind][0].shape[-2:] for kind in maps}
    masks = masks_for(maps, {k: s[0] for k, s in shapes.items()}, {k: s[1] for k, s in shapes.items()})
    H = adapter.n_heads
    return AttentionInternals(
        {kind: kind_internals(cache, adapter.W_O(kind), maps[kind], masks[kind], kind, H) for kind in maps}
    )


def sentiment_internals(pipe, text: str) -> AttentionInternals:
    """Every head of the classifier on one review, from the run SentimentPipeline.__call__ makes."""
    from pipelines.batching import pad

    ids, _, _ = pipe.encode(text)
    if not ids:
        raise ValueError("the text has no tokens")
    a = pipe.adapter
    batch = pad([ids], a.pad_id, a.device)  # (1, T), as analyze_many builds it
    return record(a, lambda: a.forward(batch, need_weights=True))


def translation_internals(pipe, text: str, target_ids: list[int]) -> AttentionInternals:
    """Every head of the translator on one sentence and its output ids (TranslationResult.target_ids),
    teacher-forced as TranslationPipeline.__call__ runs it for the maps."""
    from pipelines.batching import pad

    ids, _, _ = pipe.encode_source([text])
    if len(ids[0]) <= 1:
        raise ValueError("the text has no tokens")
    a = pipe.adapter
    src = pad(ids, a.pad_id, a.device)  # (1, Ts)
    tgt_in = pad([[a.bos_id] + list(target_ids)[:-1]], a.pad_id, a.device)  # (1, Tt)
    return record(a, lambda: a.forward(src, tgt_in, need_weights=True))


def combined_norms(ki: KindInternals, w_o: torch.Tensor, layer: int, readout: torch.Tensor) -> torch.Tensor:
    """readout (R, Tq) @ ||sum_h w^h_ij v^h_j W_O^h|| -> (R, Tk): what each key's weighted values, summed over
    the layer's heads and projected, carry into the block's output (Kobayashi et al.'s norm of the whole
    layer, bias apart), mixed over the queries by each readout row; w_o (H, hs, D) the layer's output projection.
    Queries go QUERY_CHUNK at a time."""
    H, Tk, hs = ki.v.shape[1:]
    carried = ki.v[layer] @ w_o.float().cpu()  # (H, Tk, D): v_j^h W_O^h
    out = torch.zeros(readout.size(0), Tk)
    for start in range(0, ki.weights.size(2), QUERY_CHUNK):
        rows = slice(start, start + QUERY_CHUNK)
        mixed = torch.einsum("hqk,hkd->qkd", ki.weights[layer, :, rows], carried)  # (q, Tk, D)
        out += readout[:, rows].float() @ mixed.norm(dim=-1)  # (R, Tk)
    return out


QUERY_CHUNK = 32  # queries a pass in combined_norms: (32, Tk, D) floats at a time


def value_norms(v: torch.Tensor, w_o: torch.Tensor) -> torch.Tensor:
    """v (B, Tk, h, hs) a layer's hook_v (h = its key/value heads), w_o (H, hs, D) -> (B, H, Tk) ||v_j W_O^h||: for
    grouped heads, the value head each query head reads, times that query head's slice of W_O."""
    v = v.float().transpose(1, 2)  # (B, h, Tk, hs)
    v = v.repeat_interleave(w_o.size(0) // v.size(1), dim=1)  # (B, H, Tk, hs)
    return (v @ w_o.float().to(v.device)).norm(dim=-1)  # (B, H, Tk)


@torch.no_grad()
def with_value_norms(adapter: Adapter, forward: Callable[[], object]) -> tuple[object, dict[str, torch.Tensor]]:
    """(forward(), {kind: (B, L, H, Tk) ||v_j W_O^h||}): the run, and the norm of every value vector through its
    head's slice of the output projection, read from the same run (each layer's attn.hook_v). The maps weighted by
    what each value carries are then weights (B, H, Tq, Tk) * norms[:, layer, :, None, :]."""
    layers = adapter.head_layers
    run, cache = adapter.run_with_cache(forward, attn_points(layers, ("hook_v",)))
    norms = {}
    for kind, n in layers.items():
        w_o = adapter.W_O(kind)  # (L, H, hs, D)
        norms[kind] = torch.stack([value_norms(cache[attn_point(kind, i, "hook_v")], w_o[i]) for i in range(n)], 1)
    return run, norms


# --- a decoder-only model's heads: what they do differently ------------------------------------------------------
# Inside one head of a decoder-only model (transformer.CausalLM): what pipelines.attention.inside_head shows, plus what
# such a head does differently. Its queries and keys are rotated before they meet (rotary positions: q and k are shown
# before and after the rotation), row i sees keys 0..i only (the causal mask), and its key/value heads are grouped: with
# n_kv_heads < n_heads, key/value head g serves query heads g * G .. g * G + G - 1 (G = n_heads / n_kv_heads), as the
# model's `repeat_interleave` shares them.
#
# Everything is the model's own: one forward pass (the one that makes the result's maps) with its hook points cached
# (attn.hook_q and hook_k after the rotation, hook_v, hook_z), the rotation undone for the "before" views (a rotation
# is orthogonal: the inverse turns by -angle), and the softmax weights the run's maps. So
# softmax(mask(q_rot . k_rot / sqrt(hs))) of a row equals that head's returned attention row.


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
