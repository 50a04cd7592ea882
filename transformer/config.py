"""Dataclass configs for the three models. Plain scalars only, so they round-trip through config.json.

`TransformerConfig` holds what every layer needs; it is passed down whole (as nanoGPT passes `config`)
to the encoder, the decoder and their layers. The two model configs add what only they use.
"""

from dataclasses import dataclass

ACTIVATIONS = ("relu", "gelu")
POSITIONS = ("sinusoidal", "learned")
POOLINGS = ("mean", "attention", "cls")


@dataclass
class TransformerConfig:
    """The fields every encoder and decoder layer reads."""

    vocab_size: int
    d_model: int = 128
    n_heads: int = 4
    d_ff: int = 512
    dropout: float = 0.1
    attn_dropout: float = 0.0
    max_len: int = 512
    positions: str = "sinusoidal"  # "sinusoidal" | "learned"
    norm_first: bool = False  # False: post-norm as in Vaswani et al.; True: pre-norm
    pad_id: int = 0
    # BERT-family weights (transformer/bert.py) need these four; the defaults are Vaswani et al.'s.
    activation: str = "relu"  # "relu" | "gelu" (erf GELU, as BERT) in the feed-forward layers
    layer_norm_eps: float = 1e-5  # BERT: 1e-12
    scale_embeddings: bool = True  # token vectors times sqrt(d_model) before positions are added (BERT: no)
    embedding_norm: bool = False  # a LayerNorm over token + position vectors before the first layer (BERT: yes)
    norm: str = "layernorm"  # "layernorm" | "rmsnorm" (Llama)
    n_kv_heads: int = 0  # key/value heads, each shared by n_heads / n_kv_heads query heads; 0: one per query head
    head_dim: int = 0  # 0: d_model / n_heads
    bias: bool = True  # biases in the attention projections (Llama: no)

    # What this kind of model supports (a subclass widens them; class attributes, not fields)
    POSITIONS = POSITIONS
    ACTIVATIONS = ACTIVATIONS

    def __post_init__(self):
        if not self.head_dim and self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        self.n_kv_heads = self.n_kv_heads or self.n_heads
        self.head_dim = self.head_dim or self.d_model // self.n_heads
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must divide n_heads ({self.n_heads})")
        if self.norm not in ("rmsnorm", "layernorm"):
            raise ValueError(f"norm must be 'rmsnorm' or 'layernorm', got {self.norm!r}")
        if self.positions not in self.POSITIONS:
            raise ValueError(f"positions must be one of {self.POSITIONS}, got {self.positions!r}")
        if self.activation not in self.ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(self.ACTIVATIONS)}, got {self.activation!r}")


@dataclass
class ClassifierConfig(TransformerConfig):
    """A transformer encoder with a pooled classification head."""

    num_labels: int = 2
    n_layers: int = 4
    # "mean" over real tokens | "attention" (a learned query over real tokens) | "cls" (the first token through a
    # dense layer and tanh: BERT's pooler)
    pooling: str = "mean"
    ngram_buckets: int = 0  # > 0 adds hashed n-gram embeddings (orders 2..ngram_order) to the token embeddings
    ngram_order: int = 2
    ngram_dim: int = 32  # hashed n-gram vectors are this wide, projected up to d_model
    ngram_dropout: float = 0.0  # training only: the share of n-gram vectors dropped

    def __post_init__(self):
        super().__post_init__()
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if self.ngram_buckets and self.ngram_order < 2:
            raise ValueError("ngram_order must be at least 2 when ngram_buckets > 0")


@dataclass
class Seq2SeqConfig(TransformerConfig):
    """An encoder-decoder transformer over one shared (joint) vocabulary."""

    d_model: int = 256
    n_heads: int = 8
    d_ff: int = 1024
    max_len: int = 256
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    tie_embeddings: bool = True  # one matrix for source, target and output projection
    bos_id: int = 1
    eos_id: int = 2


@dataclass
class CausalLMConfig(TransformerConfig):
    """A decoder-only language model. The defaults are Llama's choices: rotary positions, RMSNorm, SwiGLU, pre-norm,
    grouped key/value heads, tied input and output embeddings; learned or sinusoidal positions, LayerNorm and GELU
    are there for a GPT-2-like model."""

    POSITIONS = (*POSITIONS, "rotary")
    ACTIVATIONS = (*ACTIVATIONS, "swiglu")

    d_model: int = 256
    n_heads: int = 8
    d_ff: int = 688  # SwiGLU: each of the gate and up projections is this wide
    dropout: float = 0.0
    max_len: int = 512
    positions: str = "rotary"
    norm_first: bool = True  # pre-norm; a decoder-only model here is always pre-norm
    activation: str = "swiglu"
    scale_embeddings: bool = False
    n_layers: int = 4
    norm: str = "rmsnorm"
    rope_base: float = 10000.0
    bias: bool = False  # GPT-2: yes; Llama: no
    tie_embeddings: bool = True
    bos_id: int = 1
    eos_id: int = 2

    def __post_init__(self):
        super().__post_init__()
        if not self.norm_first:
            raise ValueError("a CausalLM is pre-norm (norm_first=True)")
