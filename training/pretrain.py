"""Masked-language-model pre-training of the sentiment encoder on unlabelled text (BERT-style MLM).

`python -m training pretrain --data-dir ../shared/data/imdb --sst2-dir ../shared/data/sst2 --out runs/pretrain`
reads IMDB's unlabelled and training reviews (minus the reviews the sentiment task holds out for validation)
and SST-2's training sentences, trains the tokenizer on them, and teaches a TransformerClassifier's
embeddings and encoder to fill in masked tokens. `python -m training sentiment --init-from runs/pretrain/best`
then fine-tunes it. Masking is BERT's: 15% of the real tokens are predicted; of those 80% become the mask
token (`<unk>`, which byte-level BPE never produces), 10% a random token, 10% stay as they are.
"""

import random
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from pipelines.batching import pad
from pipelines.common import save_folder
from pipelines.text import clean_text
from pipelines.tokenizers_io import PAD, UNK, train_bpe
from transformer import ClassifierConfig, TransformerClassifier
from transformer.masks import padding_mask

from .batching import bucketed_batches
from .device import model_device
from .sentiment import LABELS, split_indices

MASK = UNK
N_SPECIAL = 4


class MaskedLM(nn.Module):
    """A TransformerClassifier's embeddings and encoder, plus an output layer tied to the token embeddings."""

    def __init__(self, backbone: TransformerClassifier):
        super().__init__()
        self.backbone = backbone
        d = backbone.config.d_model
        self.transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d))
        self.bias = nn.Parameter(torch.zeros(backbone.config.vocab_size))
        # The classifier's pooling query and head take no part here: frozen, so that DistributedDataParallel
        # (accelerate launch with several processes) does not wait for gradients they never get.
        for p in [*backbone.head.parameters(), *([backbone.pool_query] if backbone.pool_query is not None else [])]:
            p.requires_grad_(False)

    def forward(self, ids: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
        """ids (B, T) with masked tokens, where (B, T) bool -> logits (N, V) at the N positions in `where`."""
        m = self.backbone
        tok = m.tok_emb(ids)  # (B, T, D)
        if m.ngram_emb is not None:
            tok = tok + m.ngram_emb(ids) / m.encoder.scale
        x = m.encoder(tok, padding_mask(ids, m.config.pad_id)).memory  # (B, T, D)
        h = self.transform(x[where])  # (N, D)
        return h @ m.tok_emb.weight.T + self.bias  # (N, V)


def mask_tokens(ids: torch.Tensor, seed: int, vocab_size: int, rate: float = 0.15):
    """(corrupted ids, where (B, T) bool, targets (N,)), on the device of ids, reproducible from `seed`.

    The draws come from a CPU generator and then move to ids' device: a resumed run, or one on another device,
    masks the same tokens."""
    g = torch.Generator().manual_seed(seed)
    pick = torch.rand(ids.shape, generator=g).to(ids.device)  # (B, T) which tokens are predicted
    roll = torch.rand(ids.shape, generator=g).to(ids.device)  # (B, T) and how each is corrupted
    random_ids = torch.randint(N_SPECIAL, vocab_size, ids.shape, generator=g).to(ids.device)  # (B, T)
    real = ids >= N_SPECIAL
    where = (pick < rate) & real
    corrupted = ids.clone()
    corrupted[where & (roll < 0.8)] = MASK
    rand_pos = where & (roll >= 0.8) & (roll < 0.9)
    corrupted[rand_pos] = random_ids[rand_pos]
    return corrupted, where, ids[where]


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
    for key, column, val_size in (("train", "text", args.val_size), ("sst2_train", "sentence", args.sst2_val_size)):
        if key in splits:
            rows = list(splits[key][column])
            _, keep = split_indices(len(rows), val_size, args.seed)  # never read the sentiment validation rows
            texts += [rows[i] for i in keep][:limit]
    return texts


class PretrainTask:
    metric = "mlm_accuracy"
    applies_limit = True  # --limit counts texts after the held-out rows are removed (pretraining_texts)

    def __init__(self, args, splits: dict, log=print):
        self.args = args
        texts = pretraining_texts(splits, args)
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

    def build_model(self) -> MaskedLM:
        a = self.args
        cfg = ClassifierConfig(
            vocab_size=self.tokenizer.get_vocab_size(),
            d_model=a.d_model,
            n_heads=a.n_heads,
            n_layers=a.n_layers,
            d_ff=a.d_ff,
            dropout=a.dropout,
            max_len=a.max_len,
            pooling="attention",
            norm_first=a.norm_first,
            ngram_buckets=a.ngram_buckets,
            ngram_order=a.ngram_order,
            ngram_dim=a.ngram_dim,
            pad_id=PAD,
        )
        return MaskedLM(TransformerClassifier(cfg))

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
        corrupted, where, targets = mask_tokens(ids, int(seed), self.tokenizer.get_vocab_size(), self.args.mask_rate)
        logits = model(corrupted, where)
        loss = F.cross_entropy(logits, targets)
        return loss, {
            "tokens": int((ids != PAD).sum()),
            "correct": int((logits.argmax(-1) == targets).sum()),
            "count": len(targets),
        }

    @torch.no_grad()
    def evaluate(self, model) -> dict:
        was = model.training
        model.eval()
        correct = count = 0
        loss = 0.0
        device = model_device(model)
        for k in range(0, len(self.val_ids), 64):
            ids = pad(self.val_ids[k : k + 64], PAD).to(device)  # (B, T)
            corrupted, where, targets = mask_tokens(ids, k, self.tokenizer.get_vocab_size(), self.args.mask_rate)
            logits = model(corrupted, where)
            loss += float(F.cross_entropy(logits, targets, reduction="sum"))
            correct += int((logits.argmax(-1) == targets).sum())
            count += len(targets)
        model.train(was)
        return {"mlm_accuracy": correct / max(count, 1), "mlm_loss": loss / max(count, 1)}

    def export(self, model, folder: Path) -> None:
        """The encoder as a TransformerClassifier folder (its head untrained) with the tokenizer."""
        prep = {"max_len": self.args.max_len, "head": self.args.max_len // 4, "labels": LABELS, "pretrained_only": True}
        save_folder(model.backbone, self.tokenizer, folder, self.args.max_len, prep)
