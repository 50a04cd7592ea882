"""Pre-training of the sentiment encoder on unlabelled text: BERT's masked-language model, or ELECTRA's
replaced-token detection (`--objective`, training/tasks/objectives.py).

`python -m training pretrain --data-dir ../shared/data/imdb --sst2-dir ../shared/data/sst2 --out runs/pretrain`
reads IMDB's unlabelled and training reviews (minus the reviews the sentiment task holds out for validation)
and SST-2's training sentences, trains the tokenizer on them, and teaches a TransformerClassifier's
embeddings and encoder to fill in masked tokens (or to spot the tokens a small generator put in their place).
`python -m training sentiment --init-from runs/pretrain/best` then fine-tunes it.
"""

import random
import time
from pathlib import Path

import torch
from torch import nn

from pipelines.batching import pad
from pipelines.models.folders import save_folder
from pipelines.models.tokenizers_io import PAD, train_bpe
from pipelines.text import clean_text
from training.engine.batching import bucketed_batches
from training.engine.device import model_device
from training.tasks.layer_options import encoder_config
from training.tasks.lineage import check_runs_behind, sst2_holdout
from training.tasks.objectives import MASK, N_SPECIAL, OBJECTIVES, MaskedLM, mask_tokens
from training.tasks.sentiment import LABELS, held_out_split
from transformer import TransformerClassifier

__all__ = ["MASK", "N_SPECIAL", "MaskedLM", "PretrainTask", "chunks", "mask_tokens", "pretraining_texts"]


def chunks(ids: list[int], length: int) -> list[list[int]]:
    """Consecutive pieces of at most `length` tokens (pieces under 8 tokens are dropped unless alone)."""
    out = [ids[i : i + length] for i in range(0, len(ids), length)]
    return [c for c in out if len(c) >= 8] or out[:1]


def pretraining_texts(splits: dict, args) -> list[str]:
    """IMDB's unlabelled reviews, its training reviews and SST-2's training sentences, less the rows the
    sentiment task holds out for validation (drawn from the full splits, as `python -m training sentiment`
    draws them); `args.limit` then keeps the first N texts of each source (so a smoke run never reads them
    either)."""
    limit = getattr(args, "limit", None)
    texts = list(splits.get("unsupervised", {"text": []})["text"])[:limit]
    for name, key, column in (("imdb", "train", "text"), ("sst2", "sst2_train", "sentence")):
        if key in splits:
            rows = list(splits[key][column])
            _, keep = held_out_split(name, rows, args)  # never read the sentiment validation rows
            texts += [rows[i] for i in keep][:limit]
    return texts


class PretrainTask:
    metric = "mlm_accuracy"

    def __init__(self, args, splits: dict, log=print):
        self.args = args
        check_runs_behind(args)  # --resume holds out what the run held out when it started
        self.objective = OBJECTIVES[args.objective].from_args(args)
        texts = pretraining_texts(splits, args)
        self.held_out = {"sst2": sst2_holdout(args)} if "sst2_train" in splits else {}  # recorded by the run
        t0 = time.time()
        self.tokenizer = train_bpe(texts, args.vocab_size, lowercase=True, strip_html_breaks=True)
        log(f"tokenizer: {self.tokenizer.get_vocab_size()} tokens trained in {time.time() - t0:.1f}s")
        seqs = [
            c for e in self.tokenizer.encode_batch([clean_text(t) for t in texts]) for c in chunks(e.ids, args.seq_len)
        ]
        random.Random(args.seed).shuffle(seqs)
        n_val = min(1000, len(seqs) // 10)
        self.val_ids, self.train_ids = seqs[:n_val], seqs[n_val:]
        self.lengths = [len(s) for s in self.train_ids]
        log(
            f"{len(texts)} texts -> {len(self.train_ids)} training / {n_val} validation pieces, "
            f"{sum(self.lengths):,} tokens"
        )

    def build_model(self) -> nn.Module:
        a = self.args
        cfg = encoder_config(a, self.tokenizer.get_vocab_size(), PAD, pooling="attention")
        return self.objective.build(TransformerClassifier(cfg))

    def train_batches(self, epoch: int) -> list:
        a = self.args
        batches = bucketed_batches(self.lengths, a.batch_size, a.seed + epoch, a.max_tokens)
        # The seed of each batch's masking travels with the batch, so a resumed run masks identically.
        return [
            (pad([self.train_ids[i] for i in b], PAD), (a.seed + 1) * 1_000_003 * (epoch + 1) + k)
            for k, b in enumerate(batches)
        ]

    def step(self, model, batch):
        ids, seed = batch
        vocab = self.tokenizer.get_vocab_size()
        loss, sums = self.objective.losses(model, ids, int(seed), vocab, self.args.mask_rate)
        return loss, {"tokens": int((ids != PAD).sum()), "correct": sums["correct"], "count": sums["count"]}

    @torch.no_grad()
    def evaluate(self, model) -> dict:
        was = model.training
        model.eval()
        totals: dict = {}
        device = model_device(model)
        for k in range(0, len(self.val_ids), 64):
            ids = pad(self.val_ids[k : k + 64], PAD).to(device)  # (B, T)
            _, sums = self.objective.losses(model, ids, k, self.tokenizer.get_vocab_size(), self.args.mask_rate)
            totals = {key: totals.get(key, 0) + value for key, value in sums.items()}
        model.train(was)
        return self.objective.scores(totals)

    def export(self, model, folder: Path) -> None:
        """The encoder as a TransformerClassifier folder (its head untrained) with the tokenizer."""
        prep = {"max_len": self.args.max_len, "head": self.args.max_len // 4, "labels": LABELS, "pretrained_only": True}
        save_folder(model.backbone, self.tokenizer, folder, self.args.max_len, prep)
