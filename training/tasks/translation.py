"""The translation task: Multi30k German -> English with a Seq2SeqTransformer."""

import random
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from pipelines.batching import pad, sorted_batches
from pipelines.models.folders import save_folder
from pipelines.models.tokenizers_io import BOS, EOS, PAD, train_bpe
from pipelines.text import clean_text
from pipelines.translation import TranslationPipeline
from training.engine.batching import bucketed_batches
from training.engine.data import MULTI30K, load_splits
from training.engine.device import model_device
from training.tasks.layer_options import generator_options
from transformer import Seq2SeqConfig, Seq2SeqTransformer


def corpus_scores(hyps: list[str], refs: list[str]) -> dict:
    """sacreBLEU (13a tokenization) lowercased and cased, and chrF."""
    import sacrebleu

    return {
        "bleu": sacrebleu.corpus_bleu(hyps, [refs], lowercase=True).score,
        "bleu_cased": sacrebleu.corpus_bleu(hyps, [refs]).score,
        "chrf": sacrebleu.corpus_chrf(hyps, [refs]).score,
        "n": len(hyps),
    }


def translate_on_device(pipe: TranslationPipeline, texts: list[str], beam: int, batch_size: int = 64) -> list[str]:
    """The pipeline's translations (greedy for beam 1), with each batch of source ids on the model's device."""
    ids, _, _ = pipe.encode_source(texts)
    device = model_device(pipe.model)
    out: list[str] = [""] * len(ids)
    for rows, src in sorted_batches(ids, batch_size, pipe.model.config.pad_id):
        for i, hyp in zip(rows, pipe.search(src.to(device), beam, pipe.alpha)):  # src (B, Ts)
            out[i] = pipe.detokenize(hyp.tokens)
    return out


class TranslationTask:
    metric = "bleu"

    @classmethod
    def load_data(cls, args) -> dict:
        """Multi30k's splits (train, validation, test)."""
        return load_splits(MULTI30K, args.data_dir)

    def __init__(self, args, splits: dict, log=print):
        self.args = args
        train, val = splits["train"], splits["validation"]
        de, en = [clean_text(t) for t in train["de"]], [clean_text(t) for t in train["en"]]
        t0 = time.time()
        # One joint vocabulary: German and English share names, numbers and many subwords, and one
        # matrix can then serve as source embedding, target embedding and output projection.
        self.tokenizer = train_bpe(de + en, args.vocab_size, lowercase=False, strip_html_breaks=False)
        log(f"tokenizer: {self.tokenizer.get_vocab_size()} tokens trained in {time.time() - t0:.1f}s")
        max_len = 254
        self.src = [e.ids[: max_len - 1] + [EOS] for e in self.tokenizer.encode_batch(de)]
        self.tgt = [[BOS] + e.ids[: max_len - 2] + [EOS] for e in self.tokenizer.encode_batch(en)]
        self.lengths = [max(len(s), len(t)) for s, t in zip(self.src, self.tgt)]
        self.val_de, self.val_en = list(val["de"]), list(val["en"])
        rng = random.Random(args.seed)
        self.sample = sorted(rng.sample(range(len(self.val_de)), min(args.bleu_sample, len(self.val_de))))
        n_tgt = sum(len(t) - 1 for t in self.tgt)
        log(f"{len(self.src)} training pairs, {n_tgt} target tokens; {len(self.val_de)} validation pairs")

    def build_model(self) -> Seq2SeqTransformer:
        a = self.args
        cfg = Seq2SeqConfig(
            **generator_options(a, self.tokenizer.get_vocab_size()),
            norm_first=a.norm_first,
            n_encoder_layers=a.n_layers,
            n_decoder_layers=a.n_layers,
            max_len=256,
        )
        return Seq2SeqTransformer(cfg)

    def train_batches(self, epoch: int) -> list:
        out = []
        for b in bucketed_batches(self.lengths, self.args.batch_size, self.args.seed + epoch, self.args.max_tokens):
            out.append((pad([self.src[i] for i in b], PAD), pad([self.tgt[i] for i in b], PAD)))
        return out

    def step(self, model, batch):
        src, tgt = batch
        tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
        logits = model(src, tgt_in).logits  # (B, T, V)
        loss = F.cross_entropy(
            logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD, label_smoothing=self.args.label_smoothing
        )
        real = tgt_out != PAD
        correct = int(((logits.argmax(-1) == tgt_out) & real).sum())
        n = int(real.sum())
        return loss, {"tokens": n, "correct": correct, "count": n}

    def pipeline(self, model) -> TranslationPipeline:
        return TranslationPipeline(model, self.tokenizer, beam_size=self.args.beam, alpha=self.args.alpha)

    @torch.no_grad()
    def evaluate(self, model, full: bool = False, beam: int = 1) -> dict:
        """BLEU on a fixed validation sample (greedy) each epoch; the whole split with `full`."""
        was_training = model.training
        model.eval()
        idx = range(len(self.val_de)) if full else self.sample
        hyps = translate_on_device(self.pipeline(model), [self.val_de[i] for i in idx], beam)
        model.train(was_training)
        return corpus_scores(hyps, [self.val_en[i] for i in idx])

    def export(self, model, folder: Path) -> None:
        prep = {"beam_size": self.args.beam, "alpha": self.args.alpha}
        save_folder(model, self.tokenizer, folder, model.config.max_len, prep)
