"""The sentiment task: IMDB reviews -> positive / negative with a TransformerClassifier."""

import random
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from pipelines.batching import pad, sorted_batches
from pipelines.common import save_folder
from pipelines.text import clean_text, head_tail
from pipelines.tokenizers_io import PAD, train_bpe
from transformer import ClassifierConfig, TransformerClassifier

from .batching import bucketed_batches
from .cli import layer_options

LABELS = ["negative", "positive"]


def encode(tokenizer, texts: list[str], max_len: int, head: int) -> list[list[int]]:
    """Token ids of each text, cut to max_len by keeping its head and tail."""
    encs = tokenizer.encode_batch([clean_text(t) for t in texts])
    return [head_tail(e.ids, max_len, head) for e in encs]


class SentimentTask:
    metric = "accuracy"

    def __init__(self, args, splits: dict, log=print):
        self.args = args
        train = splits["train"]
        texts, labels = list(train["text"]), list(train["label"])
        idx = list(range(len(texts)))
        random.Random(args.seed).shuffle(idx)
        n_val = min(args.val_size, len(idx) // 5) if args.val_size else 0
        val_idx, train_idx = idx[:n_val], idx[n_val:]

        t0 = time.time()
        corpus = [texts[i] for i in train_idx]
        self.tokenizer = train_bpe(corpus, args.vocab_size, lowercase=True, strip_html_breaks=True)
        log(f"tokenizer: {self.tokenizer.get_vocab_size()} tokens trained in {time.time() - t0:.1f}s")
        self.train_ids = encode(self.tokenizer, [texts[i] for i in train_idx], args.max_len, args.head)
        self.train_y = [labels[i] for i in train_idx]
        self.val_ids = encode(self.tokenizer, [texts[i] for i in val_idx], args.max_len, args.head)
        self.val_y = [labels[i] for i in val_idx]
        self.lengths = [len(s) for s in self.train_ids]
        log(
            f"{len(self.train_ids)} train / {len(self.val_ids)} validation reviews, "
            f"mean {sum(self.lengths) / len(self.lengths):.0f} tokens after cutting to {args.max_len}"
        )

    def build_model(self) -> TransformerClassifier:
        a = self.args
        cfg = ClassifierConfig(
            **layer_options(a, self.tokenizer.get_vocab_size(), PAD),
            n_layers=a.n_layers,
            max_len=a.max_len,
            pooling=a.pooling,
            ngram_buckets=a.ngram_buckets,
            ngram_order=a.ngram_order,
            ngram_dim=a.ngram_dim,
            ngram_dropout=a.ngram_dropout,
        )
        return TransformerClassifier(cfg)

    def train_batches(self, epoch: int) -> list:
        out = []
        for b in bucketed_batches(self.lengths, self.args.batch_size, self.args.seed + epoch):
            out.append((pad([self.train_ids[i] for i in b], PAD), torch.tensor([self.train_y[i] for i in b])))
        return out

    def step(self, model, batch):
        ids, y = batch
        logits = model(ids).logits
        loss = F.cross_entropy(logits, y, label_smoothing=self.args.label_smoothing)
        return loss, {
            "tokens": int((ids != PAD).sum()),
            "correct": int((logits.argmax(-1) == y).sum()),
            "count": len(y),
        }

    @torch.no_grad()
    def evaluate(self, model) -> dict:
        if not self.val_ids:
            return {"accuracy": 0.0}
        return accuracy(model, self.val_ids, self.val_y)

    def export(self, model, folder: Path) -> None:
        prep = {"max_len": self.args.max_len, "head": self.args.head, "labels": LABELS}
        save_folder(model, self.tokenizer, folder, self.args.max_len, prep)


@torch.no_grad()
def accuracy(model, ids: list[list[int]], labels: list[int], batch_size: int = 64) -> dict:
    """Accuracy and mean loss of `model` over pre-tokenized reviews (sorted by length for speed)."""
    was_training = model.training
    model.eval()
    correct, loss = 0, 0.0
    for rows, batch in sorted_batches(ids, batch_size, PAD):
        logits = model(batch).logits
        y = torch.tensor([labels[i] for i in rows])
        correct += int((logits.argmax(-1) == y).sum())
        loss += float(F.cross_entropy(logits, y, reduction="sum"))
    model.train(was_training)
    return {"accuracy": correct / len(ids), "loss": loss / len(ids), "n": len(ids)}
