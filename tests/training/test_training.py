"""The training and evaluation commands, end to end on the tiny fixtures."""

import json
import subprocess
import sys

import pandas as pd
import pytest
import torch
from safetensors.torch import load_file
from tiny_models import FIXTURES, read_jsonl
from training_runs import TINY_PRETRAIN, TINY_SENTIMENT, TINY_TRANSLATION, launch_two_processes

from training.cli import main as train_main
from training.evaluate import main as evaluate_main


def test_sentiment_training_writes_a_loadable_best_model(imdb_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        train_main(["sentiment", "--data-dir", str(imdb_dir), "--out", str(out), "--epochs", "2", *TINY_SENTIMENT]) == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["epochs_run"] == 2 and summary["steps"] == 8  # 32 training reviews / batch 8, twice
    events = [json.loads(line)["event"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert events[0] == "start" and events.count("validation") == 2 and events[-1] == "end"
    from pipelines import SentimentPipeline

    pipe = SentimentPipeline.from_pretrained(str(out / "best"))
    assert pipe.max_len == 48 and pipe("A wonderful film.").label in ("negative", "positive")
    # The evaluate command prints one JSON object with accuracy and n on its last line.
    capsys.readouterr()
    assert (
        evaluate_main(
            ["sentiment", "--model", str(out / "best"), "--data", str(FIXTURES / "imdb_tiny.jsonl"), "--limit", "10"]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 10 and 0.0 <= result["accuracy"] <= 1.0


def test_a_run_stopped_by_its_time_budget_leaves_a_model(imdb_dir, tmp_path):
    """--max-minutes ended the epoch without scoring it: a pre-training run cut by its budget had no best/ to
    fine-tune from (`--init-from` then failed on the missing tokenizer file)."""
    out = tmp_path / "cut"
    args = ["pretrain", "--data-dir", str(imdb_dir), "--out", str(out), *TINY_PRETRAIN, "--max-minutes", "1e-9"]
    assert train_main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stopped"].startswith("time budget") and summary["best_mlm_accuracy"] is not None
    assert (out / "best" / "tokenizer.json").is_file()


def test_anneal_by_time_ends_the_schedule_with_the_time_budget(imdb_dir, tmp_path, capsys):
    """--anneal-by-time: a run that its time budget stops ends on a decayed learning rate, not mid-schedule."""
    from types import SimpleNamespace

    from training.engine.loop import LoopConfig, Run

    run = SimpleNamespace(cfg=LoopConfig(out=tmp_path, max_minutes=10, anneal_by_time=True), total=1000, elapsed=300)
    assert Run.schedule_step(run, 100) == 500  # half the time spent: half the schedule, though 10% of the steps
    assert Run.schedule_step(run, 800) == 800 and Run.schedule_step(run, 5000) == 5000  # the steps lead
    run.elapsed = 900
    assert Run.schedule_step(run, 10) == 1000  # past the budget: the end of the schedule
    run.cfg.anneal_by_time = False
    assert Run.schedule_step(run, 10) == 10

    args = ["sentiment", "--data-dir", str(imdb_dir), "--epochs", "50", *TINY_SENTIMENT, "--max-minutes", "1e-9"]
    for flag, out in (([], tmp_path / "steps"), (["--anneal-by-time"], tmp_path / "time")):
        assert train_main([*args, *flag, "--out", str(out)]) == 0
    last_lr = {
        name: torch.load(tmp_path / name / "checkpoint.pt", weights_only=True)["scheduler"]["_last_lr"][0]
        for name in ("steps", "time")
    }
    assert last_lr["steps"] > 0 and last_lr["time"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(SystemExit) as stop:
        train_main(["sentiment", "--data-dir", str(imdb_dir), "--out", str(tmp_path / "x"), "--anneal-by-time"])
    assert stop.value.code == 2 and "--anneal-by-time needs --max-minutes" in capsys.readouterr().err


def test_resume_after_a_kill_continues_where_it_stopped(imdb_dir, tmp_path):
    args = ["sentiment", "--data-dir", str(imdb_dir), "--epochs", "2", *TINY_SENTIMENT]
    assert train_main([*args, "--out", str(tmp_path / "straight")]) == 0
    # A run stopped after its first step (as a kill would, after the checkpoint), then resumed.
    assert train_main([*args, "--out", str(tmp_path / "cut"), "--max-minutes", "1e-9"]) == 0
    first = torch.load(tmp_path / "cut" / "checkpoint.pt", weights_only=True)["state"]
    assert first["step"] == 1 and first["batch"] == 1 and first["epoch"] == 0
    assert train_main([*args, "--out", str(tmp_path / "cut"), "--resume"]) == 0
    a = torch.load(tmp_path / "straight" / "checkpoint.pt", weights_only=True)
    b = torch.load(tmp_path / "cut" / "checkpoint.pt", weights_only=True)
    assert a["state"]["step"] == b["state"]["step"] == 8
    for k, v in a["model"].items():  # same seeds, same data order, same result
        torch.testing.assert_close(b["model"][k], v)


def test_translation_training_and_evaluation(multi30k_dir, tmp_path, capsys):
    out = tmp_path / "mt"
    assert (
        train_main(
            [
                "translation",
                "--data-dir",
                str(multi30k_dir),
                "--out",
                str(out),
                "--epochs",
                "2",
                "--average-last",
                "2",
                *TINY_TRANSLATION,
            ]
        )
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["averaged_epochs"] == 2 and summary["kept"] in ("average", "best single epoch")
    assert load_file(out / "best" / "model.safetensors")
    capsys.readouterr()
    assert (
        evaluate_main(
            [
                "translation",
                "--model",
                str(out / "best"),
                "--data",
                str(FIXTURES / "multi30k_tiny.jsonl"),
                "--beam",
                "2",
                "--limit",
                "6",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"bleu", "bleu_cased", "chrf", "n"} <= result.keys() and result["n"] == 6 and result["beam"] == 2


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda df: df.drop(columns=["label"]), "lacks column"),
        (lambda df: df.assign(label=df.label + 1), "outside 0"),
        (lambda df: df.iloc[:0], "empty"),
        (lambda df: df.assign(text=[""] + list(df.text[1:])), "empty or non-text"),
    ],
)
def test_malformed_data_stops_before_training(tmp_path, capsys, mutate, message):
    df = mutate(pd.DataFrame(read_jsonl("imdb_tiny.jsonl")))
    df.to_parquet(tmp_path / "train.parquet")
    pd.DataFrame(read_jsonl("imdb_tiny.jsonl")).to_parquet(tmp_path / "test.parquet")
    code = train_main(["sentiment", "--data-dir", str(tmp_path), "--out", str(tmp_path / "run"), *TINY_SENTIMENT])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_missing_data_dir_and_split(tmp_path, capsys):
    assert train_main(["translation", "--data-dir", str(tmp_path / "nope"), "--out", str(tmp_path / "r")]) == 2
    assert "no such folder" in capsys.readouterr().err
    pd.DataFrame(read_jsonl("multi30k_tiny.jsonl")).to_parquet(tmp_path / "train.parquet")
    assert train_main(["translation", "--data-dir", str(tmp_path), "--out", str(tmp_path / "r")]) == 2
    assert "validation.parquet" in capsys.readouterr().err


def test_evaluate_reports_bad_files_clearly(tmp_path, capsys, sentiment_dir):
    assert evaluate_main(["sentiment", "--model", str(sentiment_dir), "--data", str(tmp_path / "x.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "bad.jsonl").write_text('{"review": "good", "label": 1}\n')
    assert evaluate_main(["sentiment", "--model", str(sentiment_dir), "--data", str(tmp_path / "bad.jsonl")]) == 2
    assert "missing column" in capsys.readouterr().err
    assert (
        evaluate_main(["sentiment", "--model", str(tmp_path / "none"), "--data", str(FIXTURES / "imdb_tiny.jsonl")])
        == 2
    )
    assert "no such folder" in capsys.readouterr().err


def test_help_documents_every_option():
    out = subprocess.run(
        [sys.executable, "-m", "training", "sentiment", "--help"],
        capture_output=True,
        text=True,
        cwd=FIXTURES.parents[1],
        check=True,
    ).stdout
    for opt in ("--data-dir", "--out", "--resume", "--epochs", "--lr", "--push-to-hub", "--ngram-buckets"):
        assert opt in out


def test_training_leaves_the_process_group_it_joined(imdb_dir, tmp_path, monkeypatch):
    """A gloo process group left to the interpreter's exit aborted a two-process run after its summary
    ("terminate called without an active exception", SIGABRT, once in CI): train() ends it, on every process."""
    from accelerate import Accelerator

    ended = []
    monkeypatch.setattr(Accelerator, "end_training", lambda self: ended.append(self.num_processes))
    out = tmp_path / "run"
    assert (
        train_main(["sentiment", "--data-dir", str(imdb_dir), "--out", str(out), "--epochs", "1", *TINY_SENTIMENT]) == 0
    )
    assert ended == [1]


@pytest.mark.slow
@pytest.mark.parametrize(
    "task, options, steps",
    [
        ("sentiment", ["--batch-size", "7"], 3),  # 5 batches: one process takes a batch again, never one step more
        ("pretrain", ["--ngram-buckets", "0"], 3),  # the MLM model leaves the classifier head unused (DDP)
        ("translation", ["--average-last", "2"], 2),
    ],
)
def test_two_cpu_processes_under_accelerate(imdb_dir, multi30k_dir, tmp_path, task, options, steps):
    tiny = {"sentiment": TINY_SENTIMENT, "pretrain": TINY_PRETRAIN, "translation": TINY_TRANSLATION}[task]
    data = multi30k_dir if task == "translation" else imdb_dir
    out = tmp_path / "ddp"
    proc = launch_two_processes([task, "--data-dir", str(data), "--out", str(out), "--epochs", "1", *tiny, *options])
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == steps and summary["processes"] == 2 and summary["tokens_per_s"] > 0
    start = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert start["steps_per_epoch"] == steps and start["processes"] == 2
    assert (out / "best" / "model.safetensors").is_file()


def test_push_to_hub_fails_before_training_when_offline(imdb_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code = train_main(
        [
            "sentiment",
            "--data-dir",
            str(imdb_dir),
            "--out",
            str(tmp_path / "run"),
            "--push-to-hub",
            "someone/model",
            *TINY_SENTIMENT,
        ]
    )
    assert code == 5 and "offline" in capsys.readouterr().err.lower()
    assert not (tmp_path / "run").exists()
    assert (
        train_main(
            [
                "sentiment",
                "--data-dir",
                str(imdb_dir),
                "--out",
                str(tmp_path / "run"),
                "--push-to-hub",
                "not a repo",
                *TINY_SENTIMENT,
            ]
        )
        == 2
    )


def test_param_groups_by_module_type():
    """Linear weights decay; embedding tables get their own decay; biases, norms, positions, pool query none."""
    from training.engine.loop import param_groups
    from transformer import ClassifierConfig, Seq2SeqConfig, Seq2SeqTransformer, TransformerClassifier

    model = TransformerClassifier(ClassifierConfig(vocab_size=50, d_model=16, n_layers=1, ngram_buckets=31))
    groups = {g["name"]: g for g in param_groups(model, 0.01, embedding_decay=0.001)}
    ids = lambda name: {id(p) for p in groups[name]["params"]}  # noqa: E731
    assert id(model.tok_emb.weight) in ids("embeddings") and groups["embeddings"]["weight_decay"] == 0.001
    assert id(model.ngram_emb.table.weight) in ids("embeddings")
    assert id(model.ngram_emb.proj.weight) in ids("linear weights")
    norms = [p for m in model.modules() if isinstance(m, torch.nn.LayerNorm) for p in m.parameters()]
    assert norms and all(id(p) in ids("biases, norms, positions") for p in norms)
    n_grouped = sum(len(g["params"]) for g in groups.values())
    assert n_grouped == len(list(model.parameters()))
    seq = Seq2SeqTransformer(
        Seq2SeqConfig(vocab_size=50, d_model=16, n_heads=4, n_encoder_layers=1, n_decoder_layers=1)
    )
    # tied embeddings: the shared matrix appears once, as an embedding
    seq_groups = param_groups(seq, 0.01)
    assert sum(len(g["params"]) for g in seq_groups) == len(list(seq.parameters()))
    torch.optim.AdamW(seq_groups)  # no parameter in two groups


@pytest.mark.parametrize("objective", ["mlm", "electra"])
def test_pretrain_then_fine_tune_a_plain_encoder_without_ngrams(imdb_dir, tmp_path, objective):
    """Pre-training (MLM or ELECTRA) with --ngram-buckets 0, then `sentiment --init-from`: the classifier is the
    same plain encoder (the sentiment command's own n-gram default does not bring the table back), its embeddings
    and encoder start from the pre-trained weights, its tokenizer is the pre-trained one."""
    from pipelines import SentimentPipeline
    from training.tasks.sentiment import from_pretrained_encoder
    from transformer import ClassifierConfig, TransformerClassifier

    pre = tmp_path / "pre"
    assert (
        train_main(
            [
                "pretrain",
                "--data-dir",
                str(imdb_dir),
                "--out",
                str(pre),
                *TINY_PRETRAIN,
                "--ngram-buckets",
                "0",
                "--objective",
                objective,
            ]
        )  # fmt: skip
        == 0
    )
    validation = [json.loads(line) for line in (pre / "metrics.jsonl").read_text().splitlines()][-2]
    assert validation["event"] == "validation" and 0.0 <= validation["mlm_accuracy"] <= 1.0
    assert ("rtd_accuracy" in validation) == (objective == "electra")
    encoder = TransformerClassifier.from_pretrained(str(pre / "best"))
    assert encoder.config.ngram_buckets == 0 and encoder.ngram_emb is None
    assert json.loads((pre / "best" / "preprocessing.json").read_text())["pretrained_only"] is True

    fresh = ClassifierConfig(vocab_size=9, d_model=16, n_heads=2, n_layers=1, ngram_buckets=262144, pooling="attention")
    model = from_pretrained_encoder(str(pre / "best"), fresh)
    assert model.ngram_emb is None and model.config.d_model == encoder.config.d_model
    own = model.state_dict()
    shared = [k for k in encoder.state_dict() if not k.startswith(("head.", "pool_query"))]
    assert shared and all(torch.equal(own[k], encoder.state_dict()[k]) for k in shared)

    tuned = tmp_path / "tuned"
    tiny = [a for a in TINY_SENTIMENT if a not in ("--vocab-size", "300")]  # sizes come from the encoder
    args = ["sentiment", "--data-dir", str(imdb_dir), "--out", str(tuned), *tiny, "--init-from", str(pre / "best")]
    assert train_main([*args, "--epochs", "1"]) == 0
    pipe = SentimentPipeline.from_pretrained(str(tuned / "best"))
    assert pipe.model.config.ngram_buckets == 0 and pipe.model.ngram_emb is None
    assert pipe.tokenizer.get_vocab() == SentimentPipeline.from_pretrained(str(pre / "best")).tokenizer.get_vocab()
    assert pipe("Not bad at all.").label in ("negative", "positive")


def test_pretraining_never_reads_the_sentiment_validation_rows_even_with_limit(imdb_dir):
    """--limit counts texts after the held-out rows go: cutting a split first would draw another held-out set
    (split_indices on fewer rows), and a later full fine-tuning run would validate on pre-trained rows."""
    from training.cli import build_parser, load_task_data
    from training.tasks.pretrain import pretraining_texts
    from training.tasks.sentiment import labelled_sets

    full = build_parser().parse_args(["sentiment", "--data-dir", str(imdb_dir), "--out", "x", *TINY_SENTIMENT])
    held_out = set(labelled_sets(load_task_data(full), full)["imdb"]["validation"][0])
    assert len(held_out) == 8
    for limit in (None, "20", "3"):
        args = ["pretrain", "--data-dir", str(imdb_dir), "--out", "x", *TINY_PRETRAIN]
        args = build_parser().parse_args(args + (["--limit", limit] if limit else []))
        texts = pretraining_texts(load_task_data(args), args)
        assert len(texts) == (min(int(limit), 32) if limit else 32) and not held_out & set(texts)


def test_shipped_metrics_record_device_precision_and_tokens_per_second(imdb_dir, tmp_path):
    from training.ship import main as ship_main

    run, bundle = tmp_path / "run", tmp_path / "bundle"
    assert train_main(["sentiment", "--data-dir", str(imdb_dir), "--out", str(run), *TINY_SENTIMENT]) == 0
    test = str(FIXTURES / "imdb_tiny.jsonl")
    assert ship_main(["sentiment", "--run", str(run), "--to", str(bundle), "--test-data", test]) == 0
    metrics = json.loads((bundle / "metrics.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    assert metrics["tokens_per_s"] == summary["tokens_per_s"] > 0
    assert (metrics["device"], metrics["precision"], metrics["processes"]) == ("cpu", "fp32", 1)
    from training.cli import build_parser, load_task_data
    from training.tasks.sentiment import SentimentTask

    args = build_parser().parse_args(["sentiment", "--data-dir", str(imdb_dir), "--out", str(run), *TINY_SENTIMENT])
    real_tokens = sum(SentimentTask(args, load_task_data(args), log=lambda *a: None).lengths)
    assert summary["tokens"] == real_tokens * summary["epochs_run"]  # every real token of every epoch, no padding
