"""Continuous batching for a CausalLM: sequences decoded together, one new token each a step, joining and leaving
between steps (Yu et al. 2022's iteration-level scheduling, on our key/value cache).

Decoding one token reads every weight of the model for a few multiplications each: one sequence or sixteen cost
nearly the same time (benchmarks/batched_decoding.py). Each row keeps its keys and values in one shared cache,
left-padded to the longest row, with a key mask (True = attend) hiding the padding and its own position for the rotary
angles (or the position table), so a row computes what it would alone: the rows that join at one step run their
prompts together the same way, and every logit differs from a run alone only by the float rounding of the batched
products (tests/transformer/test_batch_decoding.py holds them to 1e-5). A padding query sees no key: attention gives
it zeros (transformer.attention), and no real row ever reads it.
"""

from collections.abc import Hashable

import torch
import torch.nn.functional as F

from .decoder import DecoderCache


class DecodingBatch:
    """The rows of one CausalLM decoding together. join({key: ids}) runs prompts and returns their next-token logits;
    step({key: token}) feeds every row its next token and returns each row's next logits; leave(key) drops a row.
    A row may switch heads off (its head mask, (L, H) multipliers, for the whole of its decoding)."""

    def __init__(self, model):
        self.model = model
        self.keys: list[Hashable] = []  # the rows, in the cache's order
        self.cache: DecoderCache | None = None  # per layer (k, v) (B, Hkv, Tk, hs), rows left-padded
        self.key_mask: torch.Tensor | None = None  # (B, Tk) bool: True = a real key, False = a row's padding
        self.next_position: torch.Tensor | None = None  # (B,) the position of each row's next token
        self.head_masks: list[torch.Tensor | None] = []  # each row's (L, H) multipliers, None: every head on

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, key: Hashable) -> bool:
        return key in self.keys

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @torch.no_grad()
    def join(self, prompts: dict[Hashable, list[int]], head_masks: dict | None = None) -> dict[Hashable, torch.Tensor]:
        """New rows, {key: the ids it reads (its prompt)}, each with its head mask (head_masks {key: (L, H)}, absent or
        None: every head on): their prompts run in one forward, left-padded to the longest, then their keys and values
        join the batch's. Returns {key: its next-token logits (V,)}."""
        taken = [k for k in prompts if k in self.keys]
        if taken:
            raise KeyError(f"{taken[0]!r} is decoding already")
        keys, masks = list(prompts), [(head_masks or {}).get(k) for k in prompts]
        P = max(len(ids) for ids in prompts.values())
        pads = torch.tensor([P - len(prompts[k]) for k in keys], device=self.device)  # (B,)
        x = torch.tensor([[0] * (P - len(prompts[k])) + prompts[k] for k in keys], device=self.device)  # (B, P)
        columns = torch.arange(P, device=self.device)[None]  # (1, P)
        key_mask = columns >= pads[:, None]  # (B, P): False on the left padding
        positions = (columns - pads[:, None]).clamp(min=0)  # (B, P): each row's own from 0
        out = self.model(x, head_mask=self._stacked(masks), use_cache=True, positions=positions, key_mask=key_mask)
        self._merge(keys, out.cache, key_mask, positions[:, -1] + 1)
        self.head_masks += masks
        return {k: out.logits[i, -1] for i, k in enumerate(keys)}

    @torch.no_grad()
    def step(self, tokens: dict[Hashable, int]) -> dict[Hashable, torch.Tensor]:
        """Every row's next token ({key: id}, one for each row) read in one forward of the batch -> {key: its next
        logits (V,)}."""
        missing = set(self.keys) - set(tokens)
        if missing:
            raise KeyError(f"no token for {sorted(map(repr, missing))}: every row steps together")
        B = len(self.keys)
        x = torch.tensor([[tokens[k]] for k in self.keys], device=self.device)  # (B, 1)
        key_mask = torch.cat([self.key_mask, self.key_mask.new_ones(B, 1)], 1)  # (B, Tk + 1)
        positions = self.next_position[:, None]  # (B, 1)
        masks = self._stacked(self.head_masks)  # (L, B, H) or None
        out = self.model(x, head_mask=masks, cache=self.cache, use_cache=True, positions=positions, key_mask=key_mask)
        self.cache, self.key_mask = out.cache, key_mask
        self.next_position = self.next_position + 1
        return {k: out.logits[i, -1] for i, k in enumerate(self.keys)}

    def leave(self, key: Hashable) -> None:
        """Drop a row (it ended, or its visitor stopped it); the padding no row needs any more goes too."""
        i = self.keys.index(key)
        self.keys.pop(i)
        self.head_masks.pop(i)
        if not self.keys:
            self.cache = self.key_mask = self.next_position = None
            return
        keep = torch.tensor([j for j in range(len(self.keys) + 1) if j != i], device=self.device)
        mask = self.key_mask.index_select(0, keep)  # (B - 1, Tk)
        start = int(mask.any(0).nonzero()[0])  # the first column some row still reads
        pick = lambda t: t.index_select(0, keep)[:, :, start:]  # noqa: E731
        self.cache = DecoderCache([(pick(k), pick(v)) for k, v in self.cache.self_kv])
        self.key_mask = mask[:, start:]
        self.next_position = self.next_position.index_select(0, keep)

    def _stacked(self, masks: list[torch.Tensor | None]) -> torch.Tensor | None:
        """(L, B, H) the rows' head masks (ones where a row has none), None where no row has one."""
        if all(m is None for m in masks):
            return None
        c = self.model.config
        on = torch.ones(c.n_layers, c.n_heads, device=self.device)
        return torch.stack([on if m is None else m.to(on) for m in masks], 1)

    def _merge(self, keys: list, cache: DecoderCache, key_mask: torch.Tensor, next_position: torch.Tensor) -> None:
        """Append rows (their cache (B', Hkv, P, hs) a layer, key_mask (B', P)), left-padding them or the batch to
        the longer of the two."""
        if not self.keys:
            self.keys, self.cache, self.key_mask, self.next_position = keys, cache, key_mask, next_position
            return
        Tk, P = self.key_mask.size(1), key_mask.size(1)
        grow, pad = max(P - Tk, 0), max(Tk - P, 0)  # columns added on the left of the batch, of the new rows
        layers = [
            (_cat(k0, k1, grow, pad), _cat(v0, v1, grow, pad))
            for (k0, v0), (k1, v1) in zip(self.cache.self_kv, cache.self_kv)
        ]
        self.cache = DecoderCache(layers)
        self.key_mask = torch.cat([F.pad(self.key_mask, (grow, 0)), F.pad(key_mask, (pad, 0))], 0)  # (B + B', Tk')
        self.next_position = torch.cat([self.next_position, next_position])
        self.keys = self.keys + keys


def _cat(batch: torch.Tensor, rows: torch.Tensor, grow: int, pad: int) -> torch.Tensor:
    """batch (B, Hkv, Tk, hs) left-padded by `grow` columns, rows (B', Hkv, P, hs) by `pad`, stacked: (B + B', ...)."""
    return torch.cat([F.pad(batch, (0, 0, grow, 0)), F.pad(rows, (0, 0, pad, 0))], 0)
