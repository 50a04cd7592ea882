"""Faithfulness of a token ranking on one input: ERASER comprehensiveness and sufficiency (DeYoung et al.
2020), as AOPC over deleting / keeping the top 1, 5, 10, 20 and 50% of tokens, against random rankings.

Comprehensiveness = mean over levels of p(target | input) - p(target | input without the top tokens):
higher is better (the tokens named matter). Sufficiency = mean of p(target | input) - p(target | only the
top tokens): lower is better (the tokens named are enough). Deleting a token removes it from the
sequence; the variants of every ranking are scored together in batched forward passes.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

LEVELS = (1, 5, 10, 20, 50)  # percent of tokens deleted or kept
N_RANDOM = 3  # random rankings averaged for the baseline

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
