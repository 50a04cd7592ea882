"""Dataclass configs for the two models. Plain scalars only, so they round-trip through config.json."""

from dataclasses import dataclass


@dataclass
class ClassifierConfig:
    """A transformer encoder with a pooled classification head."""

    vocab_size: int
    num_labels: int = 2
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 512
    dropout: float = 0.1
    attn_dropout: float = 0.0
    max_len: int = 512
    positions: str = "sinusoidal"  # "sinusoidal" | "learned"
    norm_first: bool = False  # False: post-norm as in Vaswani et al.; True: pre-norm
    pooling: str = "mean"  # "mean" over real tokens | "attention" (a learned query over real tokens)
    ngram_buckets: int = 0  # > 0 adds hashed n-gram embeddings (orders 2..ngram_order) to the token embeddings
    ngram_order: int = 2
    ngram_dim: int = 32  # hashed n-gram vectors are this wide, projected up to d_model
    ngram_dropout: float = 0.0  # training only: the share of n-gram vectors dropped
    pad_id: int = 0

    def __post_init__(self):
        _check_common(self.d_model, self.n_heads, self.positions)
        if self.pooling not in ("mean", "attention"):
            raise ValueError(f"pooling must be 'mean' or 'attention', got {self.pooling!r}")
        if self.ngram_buckets and self.ngram_order < 2:
            raise ValueError("ngram_order must be at least 2 when ngram_buckets > 0")


@dataclass
class Seq2SeqConfig:
    """An encoder-decoder transformer over one shared (joint) vocabulary."""

    vocab_size: int
    d_model: int = 256
    n_heads: int = 8
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    d_ff: int = 1024
    dropout: float = 0.1
    attn_dropout: float = 0.0
    max_len: int = 256
    positions: str = "sinusoidal"
    norm_first: bool = False
    tie_embeddings: bool = True  # one matrix for source, target and output projection
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def __post_init__(self):
        _check_common(self.d_model, self.n_heads, self.positions)


def _check_common(d_model: int, n_heads: int, positions: str) -> None:
    if d_model % n_heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
    if positions not in ("sinusoidal", "learned"):
        raise ValueError(f"positions must be 'sinusoidal' or 'learned', got {positions!r}")
