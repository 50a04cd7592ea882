"""Padding and length-sorted batches, shared by the pipelines and the training package."""

from collections.abc import Iterator

import torch


def pad(seqs: list[list[int]], pad_id: int = 0, device: torch.device | str = "cpu") -> torch.Tensor:
    """Right-pad a list of id lists into a (B, T) long tensor on `device` (built on the CPU, copied once)."""
    T = max(len(s) for s in seqs)
    out = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out.to(device)


def sorted_batches(
    ids: list[list[int]], batch_size: int, pad_id: int, device: torch.device | str = "cpu"
) -> Iterator[tuple[list[int], torch.Tensor]]:
    """(row indices, padded (B, T) batch on `device`) over `ids` sorted by length, so batches carry little padding."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        yield rows, pad([ids[i] for i in rows], pad_id, device)
