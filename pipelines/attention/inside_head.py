"""Inside one head: how a row of attention is computed, and how much each weighted value carries.

One model run (the adapter's own forward, the one that makes the heatmaps) with hooks on every attention block's
projections (adapter.attention_parts) keeps what each head read and wrote: its queries, keys and values (the
outputs of q, k and v, split into heads) and its output (what the output projection read). The softmax weights
are the run's own attention maps, the same tensors the heatmaps show; everything else about one query is
arithmetic on those, done in `AttentionInternals.head`:

    scores = q . k_j          scaled = scores / sqrt(hs)        masked: -inf where the mask hides key j
    weights = softmax(masked)  output = sum_j weights_j v_j      projected = output W_O^h (the head's slice of W_O)

and the norm of each weighted, projected value, ||weights_j v_j W_O^h|| (Kobayashi et al. 2020, "Attention is
Not Only a Weight"): how much key j actually moves the output, not only how much it is looked at.
Works for every adapter (ours, `transformers` BERT-family and Marian): their heads all scale by 1/sqrt(hs).
"""

import dataclasses
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from pipelines.attention.thread_hooks import this_thread_only
from pipelines.models.adapter import AttentionParts
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


@contextmanager
def recording(parts: dict[str, list[AttentionParts]]):
    """Inside: every call of the projections of `parts` made on this thread is recorded, {(kind, layer, name): tensor
    (B, T, D)}: "q", "k", "v" (their outputs) and "heads" (what "out" reads: the heads' outputs, concatenated)."""
    seen: dict[tuple[str, int, str], torch.Tensor] = {}
    hooks = []

    def keep(key, read_input=False):
        def hook(module, args, output=None):
            if key in seen:
                raise RuntimeError(f"{key} ran twice in one recorded run")
            seen[key] = (args[0] if read_input else output).detach()

        return hook

    try:
        for kind, layers in parts.items():
            for i, p in enumerate(layers):
                for name in ("q", "k", "v"):
                    hooks.append(getattr(p, name).register_forward_hook(this_thread_only(keep((kind, i, name)))))
                heads = this_thread_only(keep((kind, i, "heads"), read_input=True))
                hooks.append(p.out.register_forward_pre_hook(heads))
        yield seen
    finally:
        for h in hooks:
            h.remove()


def _split(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(1, T, D) -> (H, T, hs)."""
    _, T, D = x.shape
    return x[0].float().reshape(T, n_heads, D // n_heads).transpose(0, 1)  # (H, T, hs)


def kind_internals(
    seen: dict, parts: list[AttentionParts], weights: list[torch.Tensor], mask: torch.Tensor, kind: str, n_heads: int
) -> KindInternals:
    """One kind's recordings (every layer) as a KindInternals; weights: per layer (1, H, Tq, Tk) of the run."""
    per = {name: [] for name in ("q", "k", "v", "heads", "projected", "value_norms")}
    for i, p in enumerate(parts):
        for name in ("q", "k", "v", "heads"):
            per[name].append(_split(seen[(kind, i, name)], n_heads))  # (H, T, hs)
        w_o = _w_o(p, n_heads)  # (H, hs, D)
        per["projected"].append(per["heads"][-1] @ w_o)  # (H, Tq, D)
        per["value_norms"].append((per["v"][-1] @ w_o).norm(dim=-1))  # (H, Tk)
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
def record(adapter, forward: Callable[[], object]) -> AttentionInternals:
    """forward(): the adapter's own forward with need_weights=True on a batch of one (no padding), run once with
    every attention block's projections recorded."""
    parts = adapter.attention_parts()
    with recording(parts) as seen:
        run = forward()
    maps = run_maps(run)
    shapes = {kind: maps[kind][0].shape[-2:] for kind in maps}
    masks = masks_for(maps, {k: s[0] for k, s in shapes.items()}, {k: s[1] for k, s in shapes.items()})
    H = adapter.n_heads
    return AttentionInternals(
        {kind: kind_internals(seen, parts[kind], maps[kind], masks[kind], kind, H) for kind in maps}
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


def combined_norms(ki: KindInternals, parts: AttentionParts, layer: int, readout: torch.Tensor) -> torch.Tensor:
    """readout (R, Tq) @ ||sum_h w^h_ij v^h_j W_O^h|| -> (R, Tk): what each key's weighted values, summed over
    the layer's heads and projected, carry into the block's output (Kobayashi et al.'s norm of the whole
    layer, bias apart), mixed over the queries by each readout row. Queries go QUERY_CHUNK at a time."""
    H, Tk, hs = ki.v.shape[1:]
    carried = ki.v[layer] @ _w_o(parts, H).cpu()  # (H, Tk, D): v_j^h W_O^h
    out = torch.zeros(readout.size(0), Tk)
    for start in range(0, ki.weights.size(2), QUERY_CHUNK):
        rows = slice(start, start + QUERY_CHUNK)
        mixed = torch.einsum("hqk,hkd->qkd", ki.weights[layer, :, rows], carried)  # (q, Tk, D)
        out += readout[:, rows].float() @ mixed.norm(dim=-1)  # (R, Tk)
    return out


QUERY_CHUNK = 32  # queries a pass in combined_norms: (32, Tk, D) floats at a time


def _w_o(parts: AttentionParts, n_heads: int) -> torch.Tensor:
    """(H, hs, D): each head's slice of the output projection, as a right-hand factor."""
    D = parts.out.weight.size(0)
    return parts.out.weight.detach().float().reshape(D, n_heads, -1).permute(1, 2, 0)


@torch.no_grad()
def with_value_norms(adapter, forward: Callable[[], object]) -> tuple[object, dict[str, torch.Tensor]]:
    """(forward(), {kind: (B, L, H, Tk) ||v_j W_O^h||}): the run, and the norm of every value vector through its
    head's slice of the output projection, read from the same run (a hook on each value projection). The maps
    weighted by what each value carries are then weights (B, H, Tq, Tk) * norms[:, layer, :, None, :]."""
    parts, H = adapter.attention_parts(), adapter.n_heads
    seen, hooks = {}, []

    def keep(key):
        def hook(module, args, out):
            seen[key] = out

        return hook

    for kind, layers in parts.items():
        for i, p in enumerate(layers):
            hooks.append(p.v.register_forward_hook(this_thread_only(keep((kind, i)))))
    try:
        run = forward()
    finally:
        for h in hooks:
            h.remove()
    norms = {}
    for kind, layers in parts.items():
        per_layer = []
        for i, p in enumerate(layers):
            v = seen[(kind, i)].float()  # (B, Tk, D)
            B, Tk, D = v.shape
            v = v.reshape(B, Tk, H, D // H).transpose(1, 2)  # (B, H, Tk, hs)
            per_layer.append((v @ _w_o(p, H)).norm(dim=-1))  # (B, H, Tk)
        norms[kind] = torch.stack(per_layer, dim=1)  # (B, L, H, Tk)
    return run, norms
