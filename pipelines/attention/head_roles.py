"""What a language model's heads do, as plain functions over causal attention maps (rows = queries), apart from the
model (TransformerLens' recipes): attention sinks, previous-token heads, induction heads and duplicate-token heads.

Each function takes maps (..., T, T), any leading dimensions (layers, heads, a batch), numpy arrays or tensors, and
returns one number per leading index. Only `induction_scores` runs a model, to make the maps it measures.
"""

import numpy as np
import torch

from pipelines.attention.head_stats import diagonal_share
from pipelines.attention.passes import at_once, run_passes


def _float(attn) -> np.ndarray:
    return np.asarray(attn.float().cpu() if isinstance(attn, torch.Tensor) else attn, dtype=np.float64)


def sink_share(attn) -> np.ndarray:
    """(..., T, T) -> (...,) mean weight on the first token (position 0: <s> where there is one) over the queries
    after it; the first query, which can read nothing else, is left out. NaN for T < 2."""
    a = _float(attn)
    return a[..., 1:, 0].mean(-1) if a.shape[-1] > 1 else np.full(a.shape[:-2], np.nan)


def previous_share(attn) -> np.ndarray:
    """(..., T, T) -> (...,) mean weight on the token just before, over the queries that have one: 1.0 for a head
    that always reads the previous token. NaN for T < 2."""
    a = _float(attn)
    lead = a.shape[:-2]
    out = diagonal_share(a.reshape(-1, *a.shape[-2:]), 1)  # (N,) over the flattened leading dimensions
    return np.full(lead, np.nan) if out is None else out.reshape(lead)


def induction_share(attn, n: int) -> np.ndarray:
    """(..., 1 + 2n, 1 + 2n) maps of <s> + r + r (r: n random tokens) -> (...,) mean weight from each token of the
    second copy (position q) on the token after its first occurrence (position q - n + 1): where an induction head
    looks to predict that the sequence repeats."""
    a = _float(attn)
    if a.shape[-1] != 2 * n + 1:
        raise ValueError(f"induction maps are over <s> + {n} tokens twice ({2 * n + 1}), got {a.shape[-1]}")
    q = np.arange(n + 1, 2 * n + 1)  # the second copy
    return a[..., q, q - n + 1].mean(-1)


def duplicate_share(attn, ids) -> np.ndarray:
    """(..., T, T) maps over token ids (T,) -> (...,) mean weight a token puts on the earlier occurrences of the
    same token, over the queries that have one; NaN when no token repeats."""
    a = _float(attn)
    ids = np.asarray(ids)
    earlier = (ids[:, None] == ids[None, :]) & np.tril(np.ones((len(ids), len(ids)), dtype=bool), -1)  # (T, T)
    rows = earlier.any(-1)  # (T,) the queries with an earlier twin
    if not rows.any():
        return np.full(a.shape[:-2], np.nan)
    return (a * earlier).sum(-1)[..., rows].mean(-1)


def repeated_random_ids(vocab_size: int, n: int, batch: int, seed: int, bos_id: int, first_id: int = 4):
    """(batch, 1 + 2n) long: <s>, then n random tokens from first_id on (no special tokens), repeated once."""
    g = torch.Generator().manual_seed(seed)
    r = torch.randint(first_id, vocab_size, (batch, n), generator=g)  # (B, n)
    return torch.cat([torch.full((batch, 1), bos_id), r, r], dim=1)  # (B, 1 + 2n)


@torch.no_grad()
def induction_scores(model, n: int = 50, batch: int = 8, seed: int = 0, first_id: int = 4) -> torch.Tensor:
    """(L, H) each head's induction score (Olsson et al. 2022; TransformerLens' recipe) for a CausalLM: the mean
    over `batch` sequences of induction_share on <s> + n random tokens repeated once (n shortened to fit
    max_len). The model runs in eval mode and is left in the mode it was in."""
    c = model.config
    n = min(n, (c.max_len - 1) // 2)
    device = next(model.parameters()).device
    ids = repeated_random_ids(c.vocab_size, n, batch, seed, c.bos_id, first_id).to(device)  # (B, 1 + 2n)
    passes = at_once(device)

    def shares(rows: torch.Tensor) -> np.ndarray:  # (b, T) -> (L, b, H)
        return np.stack([induction_share(a, n) for a in model(rows, need_weights=True).attentions])

    was_training = model.training
    model.eval()
    try:  # the sequences in `passes` parts, run at once (pipelines.attention.passes)
        per_row = np.concatenate(run_passes(shares, ids.split(-(-batch // passes)), passes), axis=1)  # (L, B, H)
    finally:
        model.train(was_training)
    return torch.tensor(per_row.mean(1), dtype=torch.float32)  # (L, H)
