"""What each attention head does, measured on one input: numbers per head from its attention map.

Everything here works on numpy maps (H, Tq, Tk) with rows = queries, so the pipelines, the benchmark and
the app share one definition of each statistic.
"""

import numpy as np

from pipelines.text import is_punctuation

STAT_NAMES = ("entropy", "distance", "previous", "itself", "end", "punctuation")


def punctuation_keys(tokens: list[str]) -> np.ndarray:
    """(T,) bool: which tokens are punctuation."""
    return np.array([is_punctuation(t) for t in tokens], dtype=bool)


def entropy(attn: np.ndarray) -> np.ndarray:
    """(H, Tq, Tk) -> (H,) mean entropy of the query rows, in nats (0 = all weight on one key)."""
    a = np.asarray(attn, dtype=np.float64)  # no copy when it is float64 already
    return -(a * np.log(np.clip(a, 1e-12, None))).sum(-1).mean(-1)


def mean_distance(attn: np.ndarray, same_sequence: bool) -> np.ndarray:
    """(H, Tq, Tk) -> (H,) attention-weighted distance in tokens between query and key, averaged over queries.

    Self-attention: |query position - key position|. Cross-attention (two sequences): the distance from the
    diagonal, |key position - query position * (Tk - 1) / (Tq - 1)|, so a monotone alignment scores near 0.
    """
    H, Tq, Tk = attn.shape
    q = np.arange(Tq, dtype=np.float64)[:, None]
    if not same_sequence:
        q = q * ((Tk - 1) / (Tq - 1) if Tq > 1 else 0.0)
    dist = np.abs(np.arange(Tk, dtype=np.float64)[None, :] - q)  # (Tq, Tk)
    return (np.asarray(attn, dtype=np.float64) * dist).sum(-1).mean(-1)


def diagonal_share(attn: np.ndarray, offset: int) -> np.ndarray | None:
    """(H, T, T) -> (H,) mean weight a query puts on the key `offset` places before it (0 = itself),
    over the queries that have such a key; None when none has."""
    T = attn.shape[1]
    if T <= offset:
        return None
    q = np.arange(offset, T)
    return attn[:, q, q - offset].astype(np.float64).mean(-1)


def head_statistics(
    attn: np.ndarray, same_sequence: bool, end_key: int | None, punct: np.ndarray
) -> dict[str, np.ndarray | None]:
    """Every statistic of STAT_NAMES for the heads of one layer: attn (H, Tq, Tk) -> name -> (H,) or None.

    end_key: the key index of the end (or boundary) token, None if there is none; punct: (Tk,) bool.
    previous / itself exist for self-attention only.
    """
    a = np.asarray(attn, dtype=np.float64)
    return {
        "entropy": entropy(a),
        "distance": mean_distance(a, same_sequence),
        "previous": diagonal_share(a, 1) if same_sequence else None,
        "itself": diagonal_share(a, 0) if same_sequence else None,
        "end": a[:, :, end_key].mean(-1) if end_key is not None else None,
        "punctuation": a[:, :, punct].sum(-1).mean(-1),
    }


def stats_rows(kind: str, maps: list[np.ndarray], end_key: int | None, punct: np.ndarray) -> list[dict]:
    """One dict per (layer, head) of one kind of attention: kind, layer, head (0-based) and the statistics."""
    same = kind != "cross"
    rows = []
    for layer, attn in enumerate(maps):  # attn (H, Tq, Tk)
        stats = head_statistics(np.asarray(attn, dtype=np.float64), same, end_key, punct)
        for head in range(attn.shape[0]):
            row = {"kind": kind, "layer": layer, "head": head}
            row.update({name: (None if v is None else float(v[head])) for name, v in stats.items()})
            rows.append(row)
    return rows


def rank(x: np.ndarray) -> np.ndarray:
    """Ranks of a 1-D array, ties sharing their average rank (as Spearman's correlation needs)."""
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.arange(len(x), dtype=np.float64)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return (sums / counts)[inverse]


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rank correlation of two 1-D arrays; None where either is constant."""
    ra, rb = rank(a), rank(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    den = np.sqrt((ra**2).sum() * (rb**2).sum())
    return float((ra * rb).sum() / den) if den > 0 else None


def agreement(cross: np.ndarray, attribution: np.ndarray) -> np.ndarray:
    """(H, Tt, Ts) cross-attention and (Tt, Ts) attribution -> (H,) mean over target steps of the rank
    correlation between where each head looks and how much each source token drove that step (|score|).
    NaN for a head where no step has a defined correlation."""
    H, Tt, _ = cross.shape
    out = np.full(H, np.nan)
    for h in range(H):
        rhos = [spearman(cross[h, t], np.abs(attribution[t])) for t in range(Tt)]
        rhos = [r for r in rhos if r is not None]
        if rhos:
            out[h] = float(np.mean(rhos))
    return out
