"""The model sizes both tasks take from the command line, apart from the parser (so tasks need not import cli)."""


def layer_options(args, vocab_size: int, pad_id: int) -> dict:
    """The TransformerConfig fields that both tasks take from the command line."""
    return dict(
        vocab_size=vocab_size,
        d_model=args.d_model,
        n_heads=args.n_heads,
        d_ff=args.d_ff,
        dropout=args.dropout,
        norm_first=args.norm_first,
        pad_id=pad_id,
    )
