"""The induction circuit of a language model, found with the score taken apart (pipelines.lens.score_parts) and
confirmed by switching heads off: its strongest induction heads on repeated random tokens; for each, the earlier heads
whose output carries its key side at the repeat (K-composition: Elhage et al. 2021, Olsson et al. 2022); and its
attention to the repeat with those heads off, beside as many other earlier heads off (the least carrying ones)."""

from dataclasses import dataclass

import numpy as np
import torch

from pipelines.attention.head_roles import induction_share, previous_share
from pipelines.attention.over_set import InductionSet
from pipelines.lens import score_parts
from pipelines.lens.score_parts import Side


@dataclass(frozen=True)
class InductionHead:
    """One induction head, what carries its key side at the repeat, and its attention there with heads off."""

    layer: int
    head: int
    score: float  # its induction score: mean attention to the token after the first occurrence
    key_side: list[tuple[str, float]]  # the parts with the largest mean key-side totals at the repeat
    carriers: list[tuple[int, int, float]]  # the earlier heads carrying most of the key side: (layer, head, total)
    without: float  # its induction score with the carriers off
    without_first: float  # with the first carrier alone off
    control: float  # with as many earlier heads off that carry least (smallest |key-side total|)
    carriers_previous: list[float]  # each carrier's previous-token score on the same sequences


@dataclass(frozen=True)
class InductionCircuit:
    heads: list[InductionHead]
    sequences: int  # how many <s> + r + r sequences
    length: int  # tokens in r


def _key_sides(model, ids: torch.Tensor, n: int, targets: list[tuple[int, int]], queries: list[int]) -> dict:
    """{(layer, head): (labels, mean key-side totals (P,))} over the sequences ids (B, T) and the query positions."""
    side = Side(model, "", [""] * ids.shape[1])
    names = set()
    for layer, _ in targets:
        names |= set(score_parts.names_for(side, None, layer, False))
    sums: dict = {}
    for row in ids:
        with torch.no_grad():
            _, cache = model.run_with_cache(row[None], names=sorted(names))
        for layer, head in targets:
            for q in queries:
                cell = score_parts.take_apart(cache, side, layer, head, q, q - n + 1, "causal")
                labels, total = sums.get((layer, head), (cell.key_parts, 0.0))
                sums[(layer, head)] = (labels, total + cell.key_side)
    count = len(ids) * len(queries)
    return {k: (labels, total / count) for k, (labels, total) in sums.items()}


def _earlier_heads(labels, values) -> list[tuple[int, int, float]]:
    """[(layer, head, value)] of the parts that are heads ("L3H5"), largest value first."""
    out = []
    for label, v in zip(labels, values):
        if label.startswith("L") and "H" in label:
            layer, head = label[1:].split("H")
            out.append((int(layer), int(head), float(v)))
    return sorted(out, key=lambda t: -t[2])


@torch.no_grad()
def _score_with_off(model, ids, n: int, layer: int, head: int, off: list[tuple[int, int]]) -> float:
    mask = torch.ones(len(model.blocks), model.blocks[0].attn.n_heads, device=ids.device)  # (L, H)
    for l_off, h_off in off:
        mask[l_off, h_off] = 0.0
    attn = model(ids, need_weights=True, head_mask=mask).attentions[layer][:, head]  # (B, T, T)
    return float(induction_share(attn, n).mean())


def induction_circuit(model, top: int = 3, carriers: int = 3, s: InductionSet | None = None) -> InductionCircuit:
    """The `top` strongest induction heads of a CausalLM on `s` (default: 4 sequences of 40 random tokens, twice),
    each with the `carriers` earlier heads carrying most of its key side at the repeat, and the drop of its score
    when they are switched off (beside the control)."""
    s = s or InductionSet(n=4, length=40, seed=0)
    c = model.config
    ids = s.ids(c.vocab_size, c.bos_id, c.max_len).to(next(model.parameters()).device)  # (B, 1 + 2n)
    n = s.fitted(c.max_len)
    with torch.no_grad():
        maps = model(ids, need_weights=True).attentions  # per layer (B, H, T, T)
    scores = np.stack([induction_share(a, n).mean(0) for a in maps])  # (L, H)
    previous = np.stack([previous_share(a).mean(0) for a in maps])  # (L, H)
    del maps
    order = np.argsort(-scores, axis=None)
    targets = [(int(i // scores.shape[1]), int(i % scores.shape[1])) for i in order[:top]]
    queries = list(range(n + 2, 2 * n + 1, max(1, n // 8)))  # positions of the second copy
    sides = _key_sides(model, ids, n, targets, queries)
    out = []
    for layer, head in targets:
        labels, values = sides[(layer, head)]
        ranked = _earlier_heads(labels, values)
        carry, least = ranked[:carriers], sorted(ranked, key=lambda t: abs(t[2]))[:carriers]
        best = np.argsort(-np.abs(values))[:5]
        out.append(
            InductionHead(
                layer, head, float(scores[layer, head]), [(labels[i], float(values[i])) for i in best], carry,
                _score_with_off(model, ids, n, layer, head, [t[:2] for t in carry]),
                _score_with_off(model, ids, n, layer, head, [t[:2] for t in carry[:1]]),
                _score_with_off(model, ids, n, layer, head, [t[:2] for t in least]),
                [float(previous[t[0], t[1]]) for t in carry],
            )
        )  # fmt: skip
    return InductionCircuit(out, s.n, n)
