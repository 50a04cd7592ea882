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

from pipelines.contracts import Adapter
from pipelines.models.hook_names import attn_point, attn_points
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
