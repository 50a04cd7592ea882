"""The model sizes the tasks take from the command line, apart from the parser (so tasks need not import cli)."""

from transformer import ClassifierConfig


def layer_options(args, vocab_size: int, pad_id: int) -> dict:
    """The TransformerConfig fields that every task takes from the command line."""
    return dict(
        vocab_size=vocab_size,
        d_model=args.d_model,
        n_heads=args.n_heads,
        d_ff=args.d_ff,
        dropout=args.dropout,
        norm_first=args.norm_first,
        pad_id=pad_id,
    )


# ClassifierConfig fields that cli.encoder_task_parser's options (`sentiment`, `pretrain`) carry under their own names
ENCODER_FIELDS = ("n_layers", "max_len", "ngram_buckets", "ngram_order", "ngram_dim")


def encoder_config(args, vocab_size: int, pad_id: int, **fields) -> ClassifierConfig:
    """The sentiment encoder's config from the command line; `fields` adds what the task sets itself (pooling, ...)."""
    sizes = {name: getattr(args, name) for name in ENCODER_FIELDS}
    return ClassifierConfig(**layer_options(args, vocab_size, pad_id), **sizes, **fields)
