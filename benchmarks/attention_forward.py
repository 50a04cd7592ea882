"""The sentiment forward that returns attention maps, beside Hugging Face's BERT of the same size.

    python -m benchmarks.attention_forward [--lengths 64 512] [--batch 1] [--repeats 30] [--threads 1]

Our TransformerClassifier (the bundled model's config: layers, heads, widths, vocabulary; its hashed n-gram
embedding included) runs with need_weights=True; transformers' BertForSequenceClassification of the same
layers, heads, widths and vocabulary runs eagerly with output_attentions=True. Both run the same unpadded ids
under torch.no_grad(), interleaved, one torch thread by default (as the app serves). Prints the median
milliseconds of each and the ratio (> 1: ours is faster). The weights are random: speed does not depend on them.
"""

import argparse
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import torch  # noqa: E402

from transformer import ClassifierConfig, TransformerClassifier  # noqa: E402


def ours(config: ClassifierConfig) -> TransformerClassifier:
    return TransformerClassifier(config).eval()


# BertConfig field -> our ClassifierConfig field: the sizes a BERT needs to be the same size as ours
BERT_SIZES = {
    "vocab_size": "vocab_size",
    "hidden_size": "d_model",
    "num_hidden_layers": "n_layers",
    "num_attention_heads": "n_heads",
    "intermediate_size": "d_ff",
    "max_position_embeddings": "max_len",
    "num_labels": "num_labels",
    "pad_token_id": "pad_id",
}


def bert_config(config: ClassifierConfig, **overrides):
    """A `transformers` BertConfig of our config's sizes; BERT's defaults for the rest (dropout, activation, ...)
    unless `overrides` set them. Also used by mlm_reference.py."""
    from transformers import BertConfig

    return BertConfig(**{theirs: getattr(config, ours) for theirs, ours in BERT_SIZES.items()}, **overrides)


def bert(config: ClassifierConfig):
    from transformers import BertForSequenceClassification

    hf = bert_config(config, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="eager")
    return BertForSequenceClassification(hf).eval()


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


@torch.no_grad()
def compare(config: ClassifierConfig, length: int, batch: int, repeats: int) -> tuple[float, float]:
    """(ours ms, HF ms): medians over `repeats` rounds, the two run alternately in each round."""
    model, reference = ours(config), bert(config)
    ids = torch.randint(5, config.vocab_size, (batch, length))  # no padding: every token is real
    mask = torch.ones_like(ids)

    def run_ours():
        out = model(ids, need_weights=True)
        assert len(out.attentions) == config.n_layers

    def run_hf():
        out = reference(input_ids=ids, attention_mask=mask, output_attentions=True)
        assert len(out.attentions) == config.n_layers

    for fn in (run_ours, run_hf):  # warm up
        fn()
    a, b = [], []
    for _ in range(repeats):
        a.append(median_ms(run_ours, 1))
        b.append(median_ms(run_hf, 1))
    return statistics.median(a), statistics.median(b)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(ROOT / "assets" / "sentiment"), help="folder with the config.json")
    ap.add_argument("--lengths", type=int, nargs="+", default=[64, 512])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = TransformerClassifier.from_pretrained(args.model).config
    print(
        f"{config.n_layers} layers, {config.n_heads} heads, d_model {config.d_model}, d_ff {config.d_ff}, "
        f"vocabulary {config.vocab_size:,}; batch {args.batch}, {args.threads} thread(s)"
    )
    for length in args.lengths:
        mine, theirs = compare(config, length, args.batch, args.repeats)
        print(f"T={length}: ours {mine:.2f} ms, HF BERT eager {theirs:.2f} ms: ours is {theirs / mine:.2f}x HF's speed")


if __name__ == "__main__":
    main()
