"""The next-word task: a decoder-only CausalLM trained from scratch on IMDB's review text (the notebooks' Step 5).

Reads IMDB train and the 50,000 unlabelled reviews (never the test reviews), holds out --val-size training reviews
for validation, trains a byte-level BPE and cuts every review into pieces of at most --seq-len tokens, each opening
with <s> (so that the first token a prompt shows the model is the one it always saw first) and the review's last
piece ending with </s>. The tokenized corpus is kept in --out/corpus/ and read from there by --resume or a rerun, so a
run on another machine needs only that folder (benchmarks/gpu/lm.sh).
"""

import json
import math
import random
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

from pipelines.attention.head_roles import induction_scores
from pipelines.batching import pad
from pipelines.models.folders import save_folder
from pipelines.models.tokenizers_io import BOS, EOS, PAD, train_bpe
from training.engine.batching import bucketed_batches
from training.engine.data import IMDB, DataError, load_splits
from training.tasks.layer_options import generator_options
from transformer import CausalLM, CausalLMConfig

CORPUS = "corpus"  # in --out: tokenizer.json, train.npy and val.npy (uint16 ids, pieces separated by offsets)


class LMTask:
    metric = "log_likelihood"  # mean log-probability of a validation token (higher is better)

    def __init__(self, args, splits: dict, log=print):
        self.args = args
        corpus = Path(args.out) / CORPUS
        if not (corpus / "train.npy").is_file():
            write_corpus(args, splits, corpus, log)
        self.tokenizer = Tokenizer.from_file(str(corpus / "tokenizer.json"))
        self.train = load_pieces(corpus / "train.npy")
        self.val = load_pieces(corpus / "val.npy")
        n = sum(len(p) for p in self.train)
        log(f"corpus: {len(self.train)} training pieces, {n} tokens; {len(self.val)} validation pieces")

    @classmethod
    def load_data(cls, args) -> dict:
        """The IMDB splits, unless --out already holds the tokenized corpus (a resumed run, a run on another
        machine): then none is read."""
        if (Path(args.out) / CORPUS / "train.npy").is_file():
            return {}
        return load_splits(IMDB, args.data_dir, ("train",) if args.no_unlabeled else ("train", "unsupervised"))

    def build_model(self) -> CausalLM:
        a = self.args
        options = generator_options(a, self.tokenizer.get_vocab_size())
        cfg = CausalLMConfig(**options, n_kv_heads=a.n_kv_heads, n_layers=a.n_layers, max_len=a.seq_len)
        return CausalLM(cfg)

    def train_batches(self, epoch: int) -> list:
        lengths = [len(p) for p in self.train]
        return [
            (pad([self.train[i] for i in b], PAD),)
            for b in bucketed_batches(lengths, self.args.batch_size, self.args.seed + epoch, self.args.max_tokens)
        ]

    def step(self, model, batch):
        (ids,) = batch  # (B, T + 1)
        inputs, targets = ids[:, :-1], ids[:, 1:]  # (B, T) each
        logits = model(inputs).logits  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(), ignore_index=PAD)
        real = targets != PAD
        correct = int(((logits.argmax(-1) == targets) & real).sum())
        n = int(real.sum())
        return loss, {"tokens": n, "correct": correct, "count": n}

    @torch.no_grad()
    def evaluate(self, model, limit: int | None = None) -> dict:
        """Validation log-likelihood and perplexity per token, and the largest induction score of any head."""
        was_training = model.training
        model.eval()
        device = next(model.parameters()).device
        pieces = self.val[:limit] if limit else self.val
        total, n = 0.0, 0
        for start in range(0, len(pieces), 64):
            batch = pad(pieces[start : start + 64], PAD).to(device)
            logits = model(batch[:, :-1]).logits.float()  # (B, T, V)
            targets = batch[:, 1:]
            total += float(F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=PAD, reduction="sum"))
            n += int((targets != PAD).sum())
        scores = induction_scores(model)
        model.train(was_training)
        ll = -total / max(n, 1)
        return {
            "log_likelihood": ll,
            "perplexity": math.exp(-ll),
            "val_tokens": n,
            "induction_max": float(scores.max()),
        }

    def snapshot_evaluate(self, model) -> dict:
        return self.evaluate(model, limit=256)

    def export(self, model, folder: Path) -> None:
        save_folder(model, self.tokenizer, folder, model.config.max_len, {"task": "lm"})


def write_corpus(args, splits: dict, corpus: Path, log=print) -> None:
    """Tokenizer and pieces, written once: validation reviews held out of IMDB train by --seed, the rest of train and
    the unlabelled reviews for training."""
    if "train" not in splits:
        raise DataError("the next-word task needs IMDB's train split (and its unsupervised split)")
    reviews = list(splits["train"]["text"])
    rng = random.Random(args.seed)
    order = list(range(len(reviews)))
    rng.shuffle(order)
    val = [reviews[i] for i in order[: args.val_size]]
    train = [reviews[i] for i in order[args.val_size :]] + list(splits.get("unsupervised", {"text": []})["text"])
    if args.limit:
        train, val = train[: args.limit], val[: max(1, args.limit // 10)]
    t0 = time.time()
    tokenizer = train_bpe(train, args.vocab_size, lowercase=False, strip_html_breaks=True)
    log(f"tokenizer: {tokenizer.get_vocab_size()} tokens trained in {time.time() - t0:.1f}s")
    corpus.mkdir(parents=True, exist_ok=True)
    for name, texts in (("train", train), ("val", val)):
        pieces = [p for e in tokenizer.encode_batch(texts) for p in cut(e.ids, args.seq_len)]
        save_pieces(corpus / f"{name}.npy", pieces)
    tokenizer.save(str(corpus / "tokenizer.json"))  # last: its presence with train.npy marks a finished corpus
    (corpus / "corpus.json").write_text(json.dumps({"train_reviews": len(train), "val_reviews": len(val)}) + "\n")


def cut(ids: list[int], seq_len: int) -> list[list[int]]:
    """One review's ids -> pieces of at most seq_len + 1 ids (inputs and the shifted targets), each opening with <s>,
    the last closing with </s>."""
    body = ids + [EOS]
    step = seq_len  # each piece: <s> + seq_len tokens, of which the model reads <s> + seq_len - 1
    return [[BOS] + body[i : i + step] for i in range(0, len(body), step)]


def save_pieces(path: Path, pieces: list[list[int]]) -> None:
    """Pieces as one uint16 array and their offsets, in one .npy file of a dict (np.save: atomic enough here, the
    corpus is rebuilt when train.npy is missing)."""
    offsets = np.cumsum([0] + [len(p) for p in pieces])
    flat = np.fromiter((t for p in pieces for t in p), dtype=np.uint16, count=int(offsets[-1]))
    with open(path, "wb") as f:
        np.save(f, offsets.astype(np.int64))
        np.save(f, flat)


def load_pieces(path: Path) -> list[list[int]]:
    with open(path, "rb") as f:
        offsets, flat = np.load(f), np.load(f)
    flat = flat.astype(np.int64)
    return [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
