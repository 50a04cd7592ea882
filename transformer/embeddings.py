"""Token, position and hashed n-gram embeddings."""

import math

import torch
from torch import nn


def on_meta() -> bool:
    """Whether modules are being built on the meta device (transformer.llama.from_state: the weights come from a
    checkpoint, nothing is initialised)."""
    return torch.empty(0).is_meta


def computed_on() -> str | None:
    """Where a buffer computed at construction (not loaded) is made: the CPU while building on the meta device (a
    checkpoint holds no such buffer), else the default device."""
    return "cpu" if on_meta() else None


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """(max_len, d_model) fixed sinusoidal positions from Vaswani et al. (on computed_on())."""
    device = computed_on()
    pos = torch.arange(max_len, dtype=torch.float32, device=device)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32, device=device) * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_len, d_model, device=device)
    table[:, 0::2] = torch.sin(pos * div)
    table[:, 1::2] = torch.cos(pos * div)
    return table


def token_embedding(vocab_size: int, d_model: int, pad_id: int) -> nn.Embedding:
    """A token table with N(0, 1/d_model) rows: after the sqrt(d_model) scaling they have unit size."""
    emb = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
    nn.init.normal_(emb.weight, std=d_model**-0.5)
    return emb


class Positions(nn.Module):
    """Adds a position vector to each token vector; `offset` shifts positions for cached decoding."""

    def __init__(self, kind: str, max_len: int, d_model: int):
        super().__init__()
        self.max_len = max_len
        if kind == "learned":
            self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)
        else:
            self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, offset: int | torch.Tensor = 0) -> torch.Tensor:
        """x (B, T, D) plus the vectors of positions offset .. offset + T - 1, or of each token's own position where
        offset is a (B, T) tensor of them (rows decoded together, each at its own length)."""
        if isinstance(offset, torch.Tensor):
            if int(offset.max()) >= self.max_len:
                raise ValueError(f"position {int(offset.max())} is beyond max_len={self.max_len}")
            return x + self.table[offset]  # (B, T, D)
        T = x.size(1)
        if offset + T > self.max_len:
            raise ValueError(f"sequence of {offset + T} positions is longer than max_len={self.max_len}")
        return x + self.table[offset : offset + T]


class HashedNgramEmbedding(nn.Module):
    """Embeds the n-grams (orders 2..order) that end at each position, hashed into `buckets` rows.

    As in fastText and N-Grammer: token embeddings see only one token, these give the model the
    local phrases ("not good", "waste of") directly. Vectors are narrow and projected up to d_model.
    """

    PRIMES = (1_000_003, 998_244_353, 1_000_000_007)

    def __init__(self, buckets: int, order: int, dim: int, d_model: int, dropout: float = 0.0):
        super().__init__()
        self.buckets, self.order, self.dropout = buckets, order, dropout
        self.table = nn.Embedding(buckets, dim)
        nn.init.normal_(self.table.weight, std=0.02)
        self.proj = nn.Linear(dim, d_model, bias=False)

    def ngram_ids(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids -> (B, T, order-1) bucket ids of the n-grams ending at each position."""
        B, T = ids.shape
        h = ids.long()
        out = []
        for n in range(2, self.order + 1):
            prev = torch.nn.functional.pad(ids.long(), (n - 1, 0), value=-1)[:, :T]  # token n-1 back
            h = h * self.PRIMES[(n - 2) % len(self.PRIMES)] + prev + n
            out.append(torch.remainder(h, self.buckets))
        return torch.stack(out, dim=-1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) -> (B, T, d_model)."""
        vecs = self.table(self.ngram_ids(ids))  # (B, T, order-1, dim)
        if self.training and self.dropout > 0:
            # Drop whole n-gram vectors, so the model cannot lean on memorised phrases alone.
            keep = torch.rand(vecs.shape[:3] + (1,), device=vecs.device) >= self.dropout
            vecs = vecs * keep / (1 - self.dropout)
        return self.proj(vecs.sum(dim=2))


class Rotary(nn.Module):
    """Rotary position embeddings (Su et al. 2021), as Llama applies them: each head's dims are split in two halves,
    dim i and dim i + hs/2 form a pair, and the pair is rotated by position * base^(-2i/hs). Positions then enter
    the scores only as the distance between query and key; nothing is added to the token vectors."""

    def __init__(self, head_dim: int, base: float = 10000.0):
        super().__init__()
        self.head_dim, self.base = head_dim, base
        self.register_buffer("inv_freq", self.frequencies(), persistent=False)

    def frequencies(self) -> torch.Tensor:
        """(hs/2,) base^(-2i/hs): the angle per position of each pair (a buffer, not saved with the weights: made on
        computed_on(), so a model built on the meta device, which loads the weights only, has it)."""
        pairs = torch.arange(0, self.head_dim, 2, dtype=torch.float32, device=computed_on())
        return 1.0 / (self.base ** (pairs / self.head_dim))

    def cos_sin(self, T: int, offset: int = 0, device=None) -> tuple[torch.Tensor, torch.Tensor]:
        """(T, hs) cos and sin for positions offset .. offset + T - 1."""
        pos = torch.arange(offset, offset + T, device=device, dtype=torch.float32)
        freqs = pos[:, None] * self.inv_freq.to(device)[None, :]  # (T, hs/2)
        angles = torch.cat([freqs, freqs], dim=-1)  # (T, hs): the same angle for dim i and i + hs/2
        return angles.cos(), angles.sin()

    def cos_sin_at(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """positions (B, T), each token's own -> cos and sin (B, 1, T, hs), broadcast over the heads: rows decoded
        together, each at its own length."""
        freqs = positions.float()[..., None] * self.inv_freq.to(positions.device)  # (B, T, hs/2)
        angles = torch.cat([freqs, freqs], dim=-1)[:, None]  # (B, 1, T, hs)
        return angles.cos(), angles.sin()

    @staticmethod
    def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """x (B, H, T, hs) rotated pair by pair: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)."""
        x1, x2 = x.chunk(2, dim=-1)
        rotated_half = torch.cat([-x2, x1], dim=-1)  # (B, H, T, hs)
        return (x * cos + rotated_half * sin).to(x.dtype)
