"""The model sizes the tasks take from the command line, apart from the parser (so tasks need not import cli)."""

from pipelines.models.tokenizers_io import BOS, EOS, PAD
from transformer import ClassifierConfig


def layer_options(args, vocab_size: int, pad_id: int) -> dict:
    """The TransformerConfig fields that every task takes from the command line (pre- or post-norm is the encoder
    tasks' and the translator's choice: a language model is always pre-norm)."""
    return dict(
        vocab_size=vocab_size,
        d_model=args.d_model,
        n_heads=args.n_heads,
        d_ff=args.d_ff,
        dropout=args.dropout,
        pad_id=pad_id,
    )


def generator_options(args, vocab_size: int) -> dict:
    """layer_options with the special ids of a model that generates (the translator, the language model), from our
    tokenizers' (pipelines.models.tokenizers_io)."""
    return dict(layer_options(args, vocab_size, PAD), bos_id=BOS, eos_id=EOS)


# ClassifierConfig fields that cli.encoder_task_parser's options (`sentiment`, `pretrain`) carry under their own names
ENCODER_FIELDS = ("n_layers", "max_len", "ngram_buckets", "ngram_order", "ngram_dim")


def encoder_config(args, vocab_size: int, pad_id: int, **fields) -> ClassifierConfig:
    """The sentiment encoder's config from the command line; `fields` adds what the task sets itself (pooling, ...)."""
    sizes = {name: getattr(args, name) for name in ENCODER_FIELDS}
    options = layer_options(args, vocab_size, pad_id)
    return ClassifierConfig(**options, norm_first=args.norm_first, **sizes, **fields)
