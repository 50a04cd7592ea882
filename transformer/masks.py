"""The one place that builds attention masks. Convention everywhere: a bool tensor, True = attend.

Masks broadcast against attention scores of shape (B, H, Tq, Tk):
padding masks are (B, 1, 1, Tk), causal masks are (1, 1, Tq, Tk).
"""

import torch


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, T) token ids -> (B, 1, 1, T) mask that hides padding keys."""
    return (ids != pad_id)[:, None, None, :]


def causal_mask(tq: int, tk: int, device=None) -> torch.Tensor:
    """(1, 1, tq, tk) mask where the tq queries are the *last* tq of tk positions.

    With a key/value cache, tk = past + tq and query i sits at absolute position tk - tq + i,
    so it may attend to keys 0 .. tk - tq + i and never to the future.
    """
    q_pos = torch.arange(tk - tq, tk, device=device)[:, None]  # (tq, 1)
    k_pos = torch.arange(tk, device=device)[None, :]  # (1, tk)
    return (k_pos <= q_pos)[None, None]
