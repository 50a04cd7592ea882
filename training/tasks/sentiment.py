"""The sentiment task: movie reviews (IMDB) and sentences (SST-2) -> positive / negative.

One TransformerClassifier reads both. Each data set keeps a validation part held out of its `train`
split; the validation score is the mean of the per-data-set accuracies, so the short SST-2 phrases
(67k of them) do not drown the 22.5k reviews. `--init-from` starts from a pre-trained encoder
(`python -m training pretrain`), whose tokenizer is then reused; `--init-from-bert` from public BERT-architecture
weights (training/tasks/bert_init.py), with their WordPiece tokenizer. `--pseudo-labels` adds unlabelled texts with a
teacher's probabilities as soft targets (`python -m training.pseudolabel`: self-training).
"""

import json
import random
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

from pipelines.batching import pad, sorted_batches
from pipelines.models.folders import TOKENIZER, save_folder
from pipelines.models.tokenizers_io import PAD, special_ids, train_bpe
from pipelines.text import clean_text, head_tail
from training.engine.batching import bucketed_batches
from training.engine.data import DataError
from training.engine.device import model_device
from training.tasks.crops import review_crops
from training.tasks.layer_options import encoder_config
from training.tasks.lineage import check_runs_behind, run_record, sst2_holdout
from transformer import ClassifierConfig, TransformerClassifier
from transformer.bert import file_sha256

LABELS = ["negative", "positive"]
# A snapshot (--snapshots) is scored on this many validation texts of each data set: a fixed random sample (the
# held-out rows are shuffled), so that eight snapshots cost about 1% of a run rather than 4%.
SNAPSHOT_VALIDATION = 500


def encode(tokenizer, texts: list[str], max_len: int, head: int) -> list[list[int]]:
    """Token ids of each text, cut to max_len by keeping its head and tail, as the app cuts them: the text's own
    tokens are cut, then the tokenizer's special tokens ([CLS] ... [SEP] for BERT's) go around them."""
    prefix, suffix = special_ids(tokenizer)
    encs = tokenizer.encode_batch([clean_text(t) for t in texts], add_special_tokens=False)
    cut = max_len - len(prefix) - len(suffix)
    return [[*prefix, *head_tail(e.ids, cut, head), *suffix] for e in encs]


def mean_length(ids: list[list[int]]) -> float:
    """The mean number of tokens of the encoded texts (0 for none)."""
    return sum(map(len, ids)) / max(len(ids), 1)


def split_indices(n: int, val_size: int, seed: int) -> tuple[list[int], list[int]]:
    """(validation, train) row indices: a seeded shuffle, the first `val_size` rows held out (at most a fifth)."""
    idx = list(range(n))
    random.Random(seed).shuffle(idx)
    n_val = min(val_size, n // 5) if val_size else 0
    return idx[:n_val], idx[n_val:]


def word_spans(words: list[str]) -> set[str]:
    """Every run of consecutive words, joined by single spaces, the whole included."""
    return {" ".join(words[a:b]) for a in range(len(words)) for b in range(a + 1, len(words) + 1)}


def full_sentences(phrases: list[str]) -> list[int]:
    """Indices of the phrases that are not a word-aligned part of another phrase (SST's whole sentences)."""
    words = [p.split() for p in phrases]
    known = {" ".join(w) for w in words}
    contained = {span for w in words for span in word_spans(w) - {" ".join(w)} if span in known}
    return [i for i, w in enumerate(words) if w and " ".join(w) not in contained]


def sentence_split(phrases: list[str], val_size: int, seed: int) -> tuple[list[int], list[int]]:
    """(validation, train) row indices of SST-2 train held out by whole sentence: a seeded sample of its full
    sentences (at most a fifth) is held out, and every row that is a word span of one of them leaves training.
    SST-2 train lists every sub-phrase of its sentences, so a random row is most often part of a training row or
    holds one; a sentence held out this way was not trained on in pieces, as SST-2 validation's were not."""
    roots = full_sentences(phrases)
    random.Random(seed).shuffle(roots)
    val = roots[: min(val_size, len(roots) // 5)] if val_size > 0 else []
    spans = {span for i in val for span in word_spans(phrases[i].split())}  # a row with one of these texts leaves,
    return val, [i for i, p in enumerate(phrases) if " ".join(p.split()) not in spans]  # however often it is listed


def held_out_split(name: str, texts: list[str], args) -> tuple[list[int], list[int]]:
    """(validation, train) row indices of data set `name` ("imdb" or "sst2"), as the command line asks."""
    if name == "imdb":
        return split_indices(len(texts), args.val_size, args.seed)
    held = sst2_holdout(args)
    if held["holdout"] == "sentences":
        return sentence_split(texts, held["size"], args.seed)
    return split_indices(len(texts), held["size"], args.seed)


def labelled_sets(splits: dict, args) -> dict[str, dict[str, tuple[list[str], list[int]]]]:
    """{"imdb": {"train": (texts, labels), "validation": ...}, "sst2": {...}} from the loaded splits."""
    sets = {}
    for name, key, column in (("imdb", "train", "text"), ("sst2", "sst2_train", "sentence")):
        if key not in splits:
            continue
        texts, labels = list(splits[key][column]), list(splits[key]["label"])
        val, train = held_out_split(name, texts, args)
        sets[name] = {
            "train": ([texts[i] for i in train], [labels[i] for i in train]),
            "validation": ([texts[i] for i in val], [labels[i] for i in val]),
        }
    return sets


def read_pseudo_labels(path: str, limit: int | None = None) -> tuple[list[str], list[float]]:
    """(texts, P(positive)) from the JSON lines `python -m training.pseudolabel` writes."""
    from training.engine.data import load_table

    rows = load_table(path, ("text", "p_positive"))[:limit]
    return list(rows["text"]), [float(p) for p in rows["p_positive"]]


class SentimentTask:
    metric = "accuracy"

    def __init__(self, args, splits: dict, log=print):
        self.args, self.log = args, log
        check_runs_behind(args)  # --continue-from, --init-from and --resume hold out what the runs before held out
        self.sets = labelled_sets(splits, args)
        self.held_out = {"sst2": sst2_holdout(args)} if "sst2" in self.sets else {}  # recorded by the run
        pseudo = getattr(args, "pseudo_labels", None)
        self.pseudo = read_pseudo_labels(pseudo, args.limit) if pseudo else ([], [])
        t0 = time.time()
        self.provenance, self.epoch_offset = {}, 0
        if getattr(args, "init_from_bert", None):
            from training.tasks import bert_init

            self.bert_folder = bert_init.resolve_source(args.init_from_bert)
            self.provenance = bert_init.provenance(self.bert_folder, args.bert_sha256 or None, args.init_from_bert)
            self.tokenizer = bert_init.load_tokenizer(self.bert_folder)
            log(f"BERT weights and tokenizer from {self.bert_folder} (sha256 {self.provenance['sha256'][:12]}…)")
        elif getattr(args, "continue_from", None):
            self.tokenizer = Tokenizer.from_file(str(Path(args.continue_from) / TOKENIZER))
            self.provenance, self.epoch_offset = continued_provenance(Path(args.continue_from), args)
            log(f"going on from {args.continue_from}: its runs used {self.epoch_offset} data orders")
        elif getattr(args, "init_from", None):
            self.tokenizer = Tokenizer.from_file(str(Path(args.init_from) / TOKENIZER))
            log(f"tokenizer: {self.tokenizer.get_vocab_size()} tokens from {args.init_from}")
        else:
            corpus = [t for s in self.sets.values() for t in s["train"][0]] + self.pseudo[0]
            self.tokenizer = train_bpe(corpus, args.vocab_size, lowercase=True, strip_html_breaks=True)
            log(f"tokenizer: {self.tokenizer.get_vocab_size()} tokens trained in {time.time() - t0:.1f}s")
        self.train_ids, self.train_y, self.val = [], [], {}  # train_y: P(positive), 0 or 1 for labelled rows
        for name, s in self.sets.items():
            ids = encode(self.tokenizer, s["train"][0], args.max_len, args.head)
            repeat = getattr(args, f"{name}_repeat", 1)  # its rows are read this many times an epoch (--sst2-repeat)
            self.train_ids += ids * repeat
            self.train_y += [float(y) for y in s["train"][1]] * repeat
            self.val[name] = (encode(self.tokenizer, s["validation"][0], args.max_len, args.head), s["validation"][1])
            log(
                f"{name}: {len(ids)} train{f' (x{repeat} an epoch)' if repeat > 1 else ''} / "
                f"{len(self.val[name][0])} validation texts, "
                f"mean {mean_length(ids):.0f} tokens after cutting to {args.max_len}"
            )
        self.add_review_crops()
        if self.pseudo[0]:
            self.train_ids += encode(self.tokenizer, self.pseudo[0], args.max_len, args.head)
            self.train_y += self.pseudo[1]
            log(f"pseudo-labelled: {len(self.pseudo[0])} texts from {pseudo} (soft targets)")
        self.lengths = [len(s) for s in self.train_ids]

    def add_review_crops(self) -> None:
        """--review-crops N: N short crops of each IMDB training review join the training rows
        (training/tasks/crops.py)."""
        n = getattr(self.args, "review_crops", 0)
        if not n or "imdb" not in self.sets:
            return
        texts, labels = review_crops(*self.sets["imdb"]["train"], n, self.args.seed)
        ids = encode(self.tokenizer, texts, self.args.max_len, self.args.head)
        self.train_ids += ids
        self.train_y += [float(y) for y in labels]
        self.log(
            f"imdb crops: {len(ids)} short crops of the training reviews (--review-crops {n}), "
            f"mean {mean_length(ids):.0f} tokens"
        )

    def build_model(self) -> TransformerClassifier:
        a = self.args
        if getattr(a, "init_from_bert", None):
            sha = self.provenance["sha256"]
            model = TransformerClassifier.from_bert(
                str(self.bert_folder), sha256=sha, pooling=a.pooling, dropout=a.dropout
            )
            c = model.config
            self.log(f"from BERT weights: {c.n_layers} layers x {c.d_model}, {c.n_heads} heads, pooling {c.pooling}")
            return model
        if getattr(a, "continue_from", None):
            model = TransformerClassifier.from_pretrained(a.continue_from)
            c = model.config
            self.log(f"from {a.continue_from}: {c.n_layers} layers x {c.d_model}, {c.n_heads} heads, every weight")
            return model
        cfg = encoder_config(a, self.tokenizer.get_vocab_size(), PAD, pooling=a.pooling, ngram_dropout=a.ngram_dropout)
        if getattr(a, "init_from", None):
            model = from_pretrained_encoder(a.init_from, cfg)
            c = model.config
            ngrams = f"{c.ngram_buckets} n-gram buckets" if c.ngram_buckets else "no n-gram table"
            self.log(
                f"encoder from {a.init_from}: {c.n_layers} layers x {c.d_model}, {c.n_heads} heads, {ngrams} "
                "(its sizes, not this command's); pooling and head start fresh"
            )
            return model
        return TransformerClassifier(cfg)

    def train_batches(self, epoch: int) -> list:
        out = []
        max_tokens = getattr(self.args, "max_tokens", None)
        seed = self.args.seed + self.epoch_offset + epoch  # a continued run does not repeat its first epochs' order
        for b in bucketed_batches(self.lengths, self.args.batch_size, seed, max_tokens):
            out.append((pad([self.train_ids[i] for i in b], PAD), torch.tensor([self.train_y[i] for i in b])))
        return out

    def step(self, model, batch):
        ids, p = batch  # p: (B,) P(positive), 0 or 1 for labelled rows, a teacher's probability for pseudo ones
        logits = model(ids).logits
        target = torch.stack([1 - p, p], dim=-1)  # (B, 2) probabilities over (negative, positive)
        loss = F.cross_entropy(logits, target, label_smoothing=self.args.label_smoothing)
        return loss, {
            "tokens": int((ids != PAD).sum()),
            "correct": int((logits.argmax(-1) == (p > 0.5).long()).sum()),
            "count": len(p),
        }

    @torch.no_grad()
    def evaluate(self, model, limit: int | None = None) -> dict:
        """Accuracy per data set and their mean (the validation score); on the first `limit` texts of each."""
        scores = {name: accuracy(model, ids[:limit], y[:limit]) for name, (ids, y) in self.val.items() if ids}
        if not scores:
            return {"accuracy": 0.0}
        out = {"accuracy": sum(s["accuracy"] for s in scores.values()) / len(scores)}
        for name, s in scores.items():
            out[f"{name}_accuracy"], out[f"{name}_loss"] = s["accuracy"], s["loss"]
        return out

    def snapshot_evaluate(self, model) -> dict:
        """evaluate() on the first SNAPSHOT_VALIDATION texts of each data set: a snapshot's scores."""
        return {**self.evaluate(model, SNAPSHOT_VALIDATION), "validation_texts_each": SNAPSHOT_VALIDATION}

    def export(self, model, folder: Path) -> None:
        prep = {"max_len": self.args.max_len, "head": self.args.head, "labels": LABELS}
        save_folder(model, self.tokenizer, folder, self.args.max_len, prep)
        write_heldout(self.sets, Path(self.args.out))  # the run folder (best/ and snapshots/ are in it)


def write_heldout(sets: dict, run: Path) -> None:
    """The held-out validation texts of each data set as JSON lines (text, label) in the run folder,
    for calibration and out-of-domain thresholds fitted on data the model never trained on."""
    for name, s in sets.items():
        path = run / f"heldout-{name}.jsonl"
        if path.exists():
            continue
        texts, labels = s["validation"]
        with path.open("w") as f:
            for t, y in zip(texts, labels):
                f.write(json.dumps({"text": t, "label": int(y)}) + "\n")


def continued_provenance(folder: Path, args) -> tuple[dict, int]:
    """What a run that goes on from a trained model folder records of it, and how many data orders (epochs, over
    every run behind the model) it has used: the new run's order starts after them.

    The folder must cut long reviews as this run does (the same --head; --max-len may change within its positions,
    to read more of a review than it was trained on); the rows every run behind it held out are checked by
    training.tasks.lineage."""
    prep = json.loads((folder / "preprocessing.json").read_text())
    if prep.get("head") != args.head:
        raise DataError(f"{folder} reads --head {prep.get('head')}; this run was asked for --head {args.head}")
    config = folder / "config.json"
    positions = json.loads(config.read_text()).get("max_len") if config.exists() else None
    if positions is not None and args.max_len > positions:
        raise DataError(f"{folder} has {positions} positions: --max-len {args.max_len} is longer than it can read")
    metrics = run_record(folder)  # metrics.json of a shipped folder, the start record of a run's best/
    source = metrics.get("source_weights") or {}
    # The data orders (seed + n) the model's runs used: those of the runs it went on from, and its own run's epochs,
    # at least one (a run stopped inside its first epoch used that epoch's order)
    earlier = int((source.get("continued_from") or {}).get("data_orders", 0))
    data_orders = earlier + max(int((metrics.get("training") or {}).get("epochs_run", 0)), 1)
    before = {
        "folder": str(folder),
        "max_len": prep.get("max_len"),
        "command": metrics.get("command"),
        **({"held_out": metrics["held_out"]} if metrics.get("held_out") else {}),  # read by training.tasks.lineage
        "train_seconds": metrics.get("train_seconds"),
        "sha256": {w.name: file_sha256(w) for w in sorted(folder.glob("*.safetensors"))},
        "data_orders": data_orders,
        # the runs behind that model, newest first: a chain of --continue-from runs keeps every command
        **({"continued_from": source["continued_from"]} if source.get("continued_from") else {}),
    }
    return {**source, "continued_from": before}, data_orders


def from_pretrained_encoder(folder: str, cfg: ClassifierConfig) -> TransformerClassifier:
    """A classifier whose embeddings and encoder come from a pre-trained folder; sizes follow that folder.

    The pooling query and the classification head start fresh."""
    pre = TransformerClassifier.from_pretrained(folder)
    p = pre.config
    shape = ["vocab_size", "d_model", "n_heads", "n_kv_heads", "head_dim", "n_layers", "d_ff", "positions"]
    shape += ["norm_first"]
    shape += ["ngram_buckets", "ngram_order", "ngram_dim"] + (["max_len"] if p.positions == "learned" else [])
    for field in shape:
        setattr(cfg, field, getattr(p, field))
    model = TransformerClassifier(cfg)
    state = {k: v for k, v in pre.state_dict().items() if not k.startswith(("head.", "pool_query"))}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all(k.startswith(("head.", "pool_query")) for k in missing), (missing, unexpected)
    return model


@torch.no_grad()
def accuracy(model, ids: list[list[int]], labels: list[int], batch_size: int = 64) -> dict:
    """Accuracy and mean loss of `model` over pre-tokenized texts (sorted by length for speed)."""
    was_training = model.training
    model.eval()
    device = model_device(model)
    correct, loss = 0, 0.0
    for rows, batch in sorted_batches(ids, batch_size, PAD):
        logits = model(batch.to(device)).logits  # (B, 2)
        y = torch.tensor([labels[i] for i in rows], device=device)  # (B,)
        correct += int((logits.argmax(-1) == y).sum())
        loss += float(F.cross_entropy(logits, y, reduction="sum"))
    model.train(was_training)
    return {"accuracy": correct / len(ids), "loss": loss / len(ids), "n": len(ids)}
