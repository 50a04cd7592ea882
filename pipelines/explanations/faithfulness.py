"""Faithfulness of a token ranking on one input: ERASER comprehensiveness and sufficiency (DeYoung et al.
2020), as AOPC over deleting / keeping the top 1, 5, 10, 20 and 50% of tokens, against random rankings.

Comprehensiveness = mean over levels of p(target | input) - p(target | input without the top tokens):
higher is better (the tokens named matter). Sufficiency = mean of p(target | input) - p(target | only the
top tokens): lower is better (the tokens named are enough). Deleting a token removes it from the
sequence; the variants of every ranking are scored together in batched forward passes. A review is scored on
the label's probability; a translation step by step (teacher-forced), over the source tokens; a language model's
next token on its probability, over the prompt's tokens.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from pipelines.batching import pad, sorted_batches
from pipelines.explanations.methods import next_token_log_probs
from pipelines.explanations.registry import EXPLAINS
from pipelines.hosting.microbatch import pause_point

LEVELS = (1, 5, 10, 20, 50)  # percent of tokens deleted or kept
N_RANDOM = 3  # random rankings averaged for the baseline
# Steps a translation's faithfulness measures by default (TranslationPipeline.faithfulness), evenly spaced, so the
# view stays under 3 s on the longest input the app takes (benchmarks/view_times.py); the benchmark measures all.
QUICK_STEPS = 8

ProbFn = Callable[[list[list[int]]], np.ndarray]  # id lists -> (N,) probability of the target


@dataclass
class Faithfulness:
    comprehensiveness: float  # AOPC, higher = more faithful
    sufficiency: float  # AOPC, lower = more faithful
    curve: np.ndarray  # (1 + len(LEVELS),) p(target) after deleting the top 0, 1, 5, 10, 20, 50%
    levels: tuple[int, ...] = LEVELS

    @property
    def score(self) -> float:
        """One number to rank methods: comprehensiveness - sufficiency (higher = more faithful)."""
        return self.comprehensiveness - self.sufficiency


@dataclass
class FaithfulnessReport:
    """ERASER comprehensiveness and sufficiency of an explanation's ranking on its own input, beside random
    rankings of the same tokens (a translation: the mean over steps, and each step's score)."""

    method: Faithfulness
    random: Faithfulness
    seconds: float
    per_step: np.ndarray | None = None  # translator: (Tt,) comprehensiveness - sufficiency (NaN: not measured)
    steps: list[int] | None = None  # translator: the steps measured (0-based): all, or an even sample

    @property
    def sampled(self) -> bool:
        """True when only some of a translation's steps were measured (a long one, to keep the view quick)."""
        return self.per_step is not None and self.steps is not None and len(self.steps) < len(self.per_step)


def n_top(n_tokens: int, percent: float) -> int:
    """How many tokens the top `percent` is: at least one, at most all."""
    return min(n_tokens, max(1, round(n_tokens * percent / 100)))


def variants(ids: list[int], order: np.ndarray, levels=LEVELS) -> tuple[list[list[int]], list[list[int]]]:
    """(without the top k%, only the top k%) per level; `order` ranks token positions, best first.
    Kept tokens stay in their original order."""
    without, only = [], []
    for pct in levels:
        top = set(order[: n_top(len(ids), pct)].tolist())
        without.append([t for i, t in enumerate(ids) if i not in top])
        only.append([t for i, t in enumerate(ids) if i in top])
    return without, only


def ranking(scores: np.ndarray) -> np.ndarray:
    """Token positions from most to least supportive of the target (stable on ties)."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")


def random_rankings(n_tokens: int, n: int = N_RANDOM, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.permutation(n_tokens) for _ in range(n)]


def ranking_batch(ids: list[int], orders: list[np.ndarray], levels=LEVELS) -> list[list[int]]:
    """Every sequence to score for these rankings: the input, then per ranking the variants without and
    with only the top k% at each level."""
    batch: list[list[int]] = [ids]
    for order in orders:
        without, only = variants(ids, order, levels)
        batch += without + only
    return batch


def score_batch(probs: np.ndarray, n_orders: int, levels=LEVELS) -> list[Faithfulness]:
    """Faithfulness per ranking from p(target) of each sequence of ranking_batch, in its order."""
    full, L = float(probs[0]), len(levels)
    out = []
    for r in range(n_orders):
        without = probs[1 + 2 * L * r : 1 + 2 * L * r + L]
        only = probs[1 + 2 * L * r + L : 1 + 2 * L * (r + 1)]
        curve = np.concatenate([[full], without]).astype(np.float32)
        out.append(Faithfulness(float(np.mean(full - without)), float(np.mean(full - only)), curve, tuple(levels)))
    return out


def evaluate_rankings(prob_fn: ProbFn, ids: list[int], orders: list[np.ndarray], levels=LEVELS) -> list[Faithfulness]:
    """Faithfulness of each ranking of `ids`, from one batched call of prob_fn over every variant."""
    return score_batch(prob_fn(ranking_batch(ids, orders, levels)), len(orders), levels)


def mean_faithfulness(results: list[Faithfulness]) -> Faithfulness:
    """The average of several rankings' results (the random baseline)."""
    return Faithfulness(
        float(np.mean([r.comprehensiveness for r in results])),
        float(np.mean([r.sufficiency for r in results])),
        np.mean([r.curve for r in results], axis=0).astype(np.float32),
        results[0].levels,
    )


def faithfulness(
    prob_fn: ProbFn, ids: list[int], scores: np.ndarray, seed: int = 0
) -> tuple[Faithfulness, Faithfulness]:
    """(the ranking by `scores`, the mean of N_RANDOM random rankings) on one input."""
    orders = [ranking(scores), *random_rankings(len(ids), N_RANDOM, seed)]
    method, *rand = evaluate_rankings(prob_fn, ids, orders)
    return method, mean_faithfulness(rand)


# --- on a model: a review, a translation ---------------------------------------------------------------


def target_probs(pipe, batch: list[list[int]], target: int, batch_size: int = 8) -> np.ndarray:
    """(N,) calibrated p(target) for many id lists (an empty list reads as one padding token), batched by
    length: the probability the pipeline returns for each sequence (pipe.calibrated), so a deletion curve
    starts at the prediction's own probability. Small batches: a review's 41 variants run in 3.0-3.6 s in batches
    of 4 or 8 against 7.2-8.1 s in one of 64 (1 torch thread, the 309-word review: far less padding), and a
    waiting call runs at the pause point between two of them."""
    pad = pipe.adapter.pad_id
    ids = [seq or [pad] for seq in batch]
    out = np.zeros(len(ids), dtype=np.float64)
    with torch.no_grad():
        for rows, x in sorted_batches(ids, batch_size, pad, pipe.adapter.device):
            # as a background call, the waiting calls of this model run first (pipelines.hosting.microbatch)
            pause_point()
            probs = pipe.calibrated(pipe.adapter.forward(x).logits, [len(batch[r]) for r in rows])  # (B, C)
            out[rows] = probs[:, target].double().cpu().numpy()
    return out


def own_tokens_faithfulness(expl, prob_fn: ProbFn, seed: int = 0) -> tuple[Faithfulness, Faithfulness, None, None]:
    """Over the input's own tokens, ids[n_prefix : len(ids) - n_suffix]: the special tokens around them (and a
    language model's tokens generated before the step, prefix_ids) stay in place, never ranked. prob_fn: the
    target's probability of whole id lists."""
    a, b = expl.n_prefix, len(expl.ids) - expl.n_suffix  # the input's own tokens: ids[a:b]
    head, body, tail = expl.ids[:a], expl.ids[a:b], expl.ids[b:] + list(expl.prefix_ids)
    scores = np.asarray(expl.scores)[a:b]
    ours, rand = faithfulness(lambda batch: prob_fn([head + s + tail for s in batch]), body, scores, seed)
    return ours, rand, None, None


def review_faithfulness(pipe, expl, seed: int = 0, max_steps=None) -> tuple[Faithfulness, Faithfulness, None, None]:
    """Over the review's own tokens, on the label's calibrated probability."""
    return own_tokens_faithfulness(expl, lambda batch: target_probs(pipe, batch, expl.output_ids[0]), seed)


def next_token_faithfulness(pipe, expl, seed: int = 0, max_steps=None):
    """Over the prompt's own tokens (<s> and a chat template's tokens stay in place, and the tokens generated before
    the step), on the probability of the next token explained; a contrastive explanation's on p(token) -
    p(contrast), what it explains."""
    a, t, c = pipe.adapter, expl.output_ids[0], expl.contrast_id

    def prob(batch):
        p = np.exp(next_token_log_probs(a, batch, t))
        return p if c is None else p - np.exp(next_token_log_probs(a, batch, c))

    return own_tokens_faithfulness(expl, prob, seed)


def step_probs(pipe, queries: list[tuple[list[int], int, int]], tgt_in: list[int], batch_size: int = 128):
    """(N,) p(token at step t | tgt_in[:t+1], source) for (source ids, t, token) queries; an empty source
    reads as one padding token. The decoder is causal, so every row can carry the whole prefix."""
    a = pipe.adapter
    out = np.zeros(len(queries))
    with torch.no_grad():
        for s in range(0, len(queries), batch_size):
            pause_point()
            part = queries[s : s + batch_size]
            src = pad([q[0] or [a.pad_id] for q in part], a.pad_id, a.device)  # (B, Ts)
            tgt = a.embed_target(torch.tensor([tgt_in], device=a.device).expand(len(part), -1))  # (B, Tt, D)
            pos = torch.tensor([q[1] for q in part], device=a.device)  # (B,)
            tok = torch.tensor([q[2] for q in part], device=a.device)  # (B,)
            logp = a.step_log_probs(a.embed_source(src), src, tgt, pos)  # (B, V)
            out[s : s + batch_size] = logp.gather(1, tok[:, None])[:, 0].exp().double().cpu().numpy()
    return out


def every_step_probs(pipe, sources: list[list[int]], produced: list[int], batch_size: int = 16) -> np.ndarray:
    """(N, Tt) p(produced[t] | produced[:t], source) at every step t for each source, teacher-forced: one pass
    per source gives every step (an empty source reads as one padding token)."""
    a = pipe.adapter
    tgt_in = torch.tensor([[a.bos_id] + produced[:-1]], device=a.device)  # (1, Tt)
    gold = torch.tensor(produced, device=a.device)[None, :, None]  # (1, Tt, 1)
    out = np.zeros((len(sources), len(produced)))
    with torch.no_grad():
        for s in range(0, len(sources), batch_size):
            pause_point()
            src = pad([ids or [a.pad_id] for ids in sources[s : s + batch_size]], a.pad_id, a.device)  # (B, Ts)
            logp = a.forward(src, tgt_in.expand(len(src), -1)).logits.log_softmax(-1)  # (B, Tt, V)
            probs = logp.gather(-1, gold.expand(len(src), -1, -1))[..., 0].exp()  # (B, Tt)
            out[s : s + len(src)] = probs.double().cpu().numpy()
    return out


def sampled_steps(n_steps: int, max_steps: int | None) -> list[int]:
    """Every step, or max_steps of them evenly spaced from the first to the last."""
    if max_steps is None or n_steps <= max_steps:
        return list(range(n_steps))
    return sorted({int(round(x)) for x in np.linspace(0, n_steps - 1, max_steps)})


def compare_rankings(
    pipe,
    src_ids: list[int],
    produced: list[int],
    score_mats: list[np.ndarray],
    seed: int = 0,
    max_steps: int | None = None,
):
    """Faithfulness over the source tokens, step by step (teacher-forced on the produced prefix), of several
    (Tt, Ts) score matrices at once, and of random rankings, in batched passes; on every step, or on max_steps
    of them evenly spaced. The random rankings are the same at every step, so each of their variants is one
    teacher-forced pass for all steps. Returns ([per matrix: mean over the measured steps], random mean,
    [per matrix: (Tt,) per-step score, NaN where not measured], the measured steps)."""
    tgt_in = [pipe.adapter.bos_id] + produced[:-1]
    steps = sampled_steps(len(produced), max_steps)
    n = len(score_mats)
    batches = [ranking_batch(src_ids, [ranking(m[t]) for m in score_mats]) for t in steps]  # one per step
    probs = step_probs(pipe, [(src, t, produced[t]) for t, b in zip(steps, batches) for src in b], tgt_in)
    rand_orders = random_rankings(len(src_ids), seed=seed)
    rand_probs = every_step_probs(pipe, ranking_batch(src_ids, rand_orders), produced)  # (1 + variants, Tt)
    per_method: list[list[Faithfulness]] = [[] for _ in range(n)]
    rand, at = [], 0
    for t, batch in zip(steps, batches):
        res = score_batch(probs[at : at + len(batch)], n)
        at += len(batch)
        for k in range(n):
            per_method[k].append(res[k])
        rand.append(mean_faithfulness(score_batch(rand_probs[:, t], len(rand_orders))))
    per_step = []
    for rs in per_method:
        scores = np.full(len(produced), np.nan, dtype=np.float32)
        scores[steps] = [r.score for r in rs]
        per_step.append(scores)
    return [mean_faithfulness(rs) for rs in per_method], mean_faithfulness(rand), per_step, steps


def translation_faithfulness(pipe, expl, seed: int = 0, max_steps: int | None = None):
    """Over the source tokens, step by step (all, or max_steps evenly spaced), averaged over the steps:
    (ours, random, per-step scores, the steps measured)."""
    (ours,), rand, (per_step,), steps = compare_rankings(
        pipe, expl.ids, expl.output_ids, [expl.scores], seed, max_steps
    )
    return ours, rand, per_step, steps


MEASURES = {  # the Method function an explanation was computed by (registry.Explains) -> how it is measured
    "review": review_faithfulness,
    "steps": translation_faithfulness,
    "next_token": next_token_faithfulness,
}


def measure(pipe, expl, seed: int = 0, max_steps: int | None = None):
    """The FaithfulnessReport of an explanation (any task) on its own input; a translation on at most
    max_steps of its steps, evenly spaced (None: all)."""
    start = time.perf_counter()
    ours, rand, per_step, steps = MEASURES[EXPLAINS[expl.task].function](pipe, expl, seed, max_steps)
    return FaithfulnessReport(ours, rand, time.perf_counter() - start, per_step, steps)


# Every method on one input, against random rankings of the same tokens (benchmarks/faithfulness.py, the tests).


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def sentiment_input(pipe, text: str, seed: int) -> dict:
    """Every method on one review, and all rankings (+ random) scored in one batched pass."""
    expls, secs = {}, {}
    for m in pipe.explanation_methods:
        expls[m], secs[m] = timed(pipe.explain, text, m)
    first = next(iter(expls.values()))
    t = pipe.labels.index(first.target)
    a, b = first.n_prefix, len(first.ids) - first.n_suffix  # the review's own tokens (not [CLS], [SEP])
    body, wrap = first.ids[a:b], lambda seq: first.ids[:a] + seq + first.ids[b:]
    orders = [ranking(e.scores[a:b]) for e in expls.values()] + random_rankings(len(body), seed=seed)
    res = evaluate_rankings(lambda batch: target_probs(pipe, [wrap(s) for s in batch], t), body, orders)
    n = len(expls)
    return {"methods": dict(zip(expls, res[:n])), "random": mean_faithfulness(res[n:]), "seconds": secs}


def translation_input(pipe, text: str, seed: int) -> dict:
    """Every method on one sentence (one decoding shared by all), scored step by step in one batched pass."""
    result, decode_s = timed(pipe, text)
    expls, secs = {}, {}
    for m in pipe.explanation_methods:
        expls[m], secs[m] = timed(pipe.explain, text, m, result=result)
        secs[m] += decode_s
    first = next(iter(expls.values()))
    res, rand, _, _ = compare_rankings(pipe, first.src_ids, first.produced, [e.scores for e in expls.values()], seed)
    agreement = expls.get("integrated_gradients", first).head_agreement
    return {"methods": dict(zip(expls, res)), "random": rand, "seconds": secs, "agreement": agreement}
