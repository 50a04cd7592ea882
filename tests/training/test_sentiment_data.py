"""Sentiment on IMDB and SST-2 together, MLM pre-training, and the contrast set, on tiny fixtures."""

import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from training.cli import main as train_main
from training.contrast import PAIRS, load_pairs, score_pairs
from training.tasks.pretrain import MASK, N_SPECIAL, mask_tokens

TINY = "--vocab-size 300 --d-model 32 --n-heads 4 --n-layers 1 --d-ff 64 --threads 1 --ngram-buckets 101".split()
TINY += "--ngram-dim 8 --val-size 8 --sst2-val-size 6".split()


@pytest.fixture(scope="module")
def data_dirs(imdb_dir, tmp_path_factory):
    """The tiny IMDB folder (conftest) with its reviews again as the unlabelled split, and a tiny SST-2."""
    imdb = imdb_dir
    pd.read_parquet(imdb / "train.parquet").assign(label=-1).to_parquet(imdb / "unsupervised.parquet")
    sst2 = tmp_path_factory.mktemp("sst2")
    pairs = load_pairs()
    rows = [{"sentence": p[s].lower(), "label": p[f"label_{s}"], "idx": i} for i, p in enumerate(pairs) for s in "ab"]
    pd.DataFrame(rows).to_parquet(sst2 / "train.parquet")
    return imdb, sst2


def test_contrast_set_is_balanced_minimal_pairs():
    pairs = load_pairs(PAIRS)
    assert len(pairs) >= 100
    assert all(p["label_a"] != p["label_b"] for p in pairs)  # every pair flips its label
    kinds = {p["kind"] for p in pairs}
    assert {"negation", "but", "yet", "intensifier", "hedge", "sarcasm"} <= kinds


def test_score_pairs_counts_flips():
    pairs = [
        {"kind": "negation", "a": "good", "label_a": 1, "b": "not good", "label_b": 0},
        {"kind": "but", "a": "x but bad", "label_a": 0, "b": "y but good", "label_b": 1},
    ]
    # A model that reads only the word "good": right on 3 of 4 sides, one pair flipped.
    predict = lambda texts: [
        {"negative": 0.1, "positive": 0.9} if "good" in t else {"negative": 0.9, "positive": 0.1} for t in texts
    ]  # noqa: E501, E731
    result = score_pairs(predict, pairs, ["negative", "positive"])
    assert result["contrast_accuracy"] == 0.75 and result["pairs_flipped"] == 1
    assert result["by_kind"]["negation"]["flipped"] == 0 and result["by_kind"]["but"]["flipped"] == 1


def test_mask_tokens_is_reproducible_and_never_masks_specials():
    ids = torch.tensor([[1, 10, 11, 12, 13, 14, 15, 16, 2, 0, 0]] * 50)
    a = mask_tokens(ids, seed=3, vocab_size=40)
    b = mask_tokens(ids, seed=3, vocab_size=40)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    corrupted, where, targets = a
    assert not where[ids < N_SPECIAL].any()  # padding, <s>, </s> are never predicted
    assert torch.equal(targets, ids[where]) and (corrupted[where] == MASK).float().mean() > 0.5
    assert torch.equal(corrupted[~where], ids[~where])  # only chosen positions change


def test_pretrain_then_finetune_on_imdb_and_sst2(data_dirs, tmp_path):
    imdb, sst2 = data_dirs
    pre = tmp_path / "pretrain"
    common = ["--data-dir", str(imdb), "--sst2-dir", str(sst2), *TINY]
    assert train_main(["pretrain", *common, "--out", str(pre), "--seq-len", "32", "--max-len", "64"]) == 0
    assert (pre / "best" / "tokenizer.json").is_file()
    summary = json.loads((pre / "summary.json").read_text())
    assert 0.0 <= summary["best_mlm_accuracy"] <= 1.0
    out = tmp_path / "finetune"
    args = ["sentiment", *common, "--out", str(out), "--init-from", str(pre / "best"), "--max-len", "64"]
    assert train_main([*args, "--head", "16", "--batch-size", "8", "--max-tokens", "256"]) == 0
    events = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    val = [e for e in events if e["event"] == "validation"][-1]
    assert {"imdb_accuracy", "sst2_accuracy"} <= set(val)
    assert val["accuracy"] == pytest.approx((val["imdb_accuracy"] + val["sst2_accuracy"]) / 2)
    assert events[0]["held_out"] == {"sst2": {"holdout": "phrases", "size": 6}}  # what --continue-from checks
    # The fine-tuned encoder starts from the pre-trained one: same tokenizer, same embedding shape.
    from pipelines import SentimentPipeline

    pipe = SentimentPipeline.from_pretrained(str(out / "best"))
    assert pipe.tokenizer.get_vocab() == SentimentPipeline.from_pretrained(str(pre / "best")).tokenizer.get_vocab()
    held = [json.loads(line) for line in (out / "heldout-sst2.jsonl").read_text().splitlines()]
    assert len(held) == 6 and {"text", "label"} <= set(held[0])


def test_model_card_reports_the_contrast_set():
    from training.release.model_card import _evaluation

    metrics = {
        "test": {"accuracy": 0.9, "n": 10, "split": "test"},
        "contrast": {
            "contrast_accuracy": 0.75,
            "pairs_flipped": 3,
            "pairs": 5,
            "by_kind": {"negation": {"accuracy": 0.5, "flipped": 1, "pairs": 2}},
        },
    }
    text = _evaluation("sentiment", metrics)
    assert "Contrast set (5 hand-written minimal pairs" in text and "75.0%" in text and "negation 1/2" in text
    assert "Contrast set" not in _evaluation("sentiment", {"test": metrics["test"]})
    metrics["contrast"]["builtin_examples"] = {"right": 9, "examples": 10, "wrong": ["Sarcastic"]}
    assert "10 example reviews: 9 right; wrong on: Sarcastic." in _evaluation("sentiment", metrics)


@pytest.mark.parametrize(
    "bundle,limit",
    [
        ("sentiment", "Subtle cases: sarcasm, mixed reviews, and some negation"),  # fine-tuned from public weights
        ("sentiment-scratch", "Subtle cases: negation (even right next to what it negates)"),  # misreads "not bad"
    ],
)
def test_model_card_limits_name_what_the_contrast_set_measures(bundle, limit):
    """Each bundled model's card: its limits name what that model misreads and point at the contrast-set scores
    that follow; its data is IMDB and SST-2, not IMDB alone."""
    from training.release.model_card import model_card

    folder = Path(__file__).resolve().parents[2] / "assets" / bundle
    config, metrics = (json.loads((folder / name).read_text()) for name in ("config.json", "metrics.json"))
    card = str(model_card("sentiment", "user/sentiment", config, metrics["parameters"], metrics))
    subtle = card.index(limit)
    assert subtle < card.index("Contrast set (") and "the contrast-set scores below" in card
    assert "IMDB movie reviews only" not in card and "(IMDB and SST-2)" in card


def test_self_training_from_a_teachers_soft_labels(data_dirs, tmp_path, capsys):
    """Teacher -> pseudo-labels on the unlabelled reviews -> a student trained on both."""
    from pipelines import SentimentPipeline
    from training.pseudolabel import main as pseudolabel_main

    imdb, _ = data_dirs
    teacher, student, labels = tmp_path / "teacher", tmp_path / "student", tmp_path / "pseudo.jsonl"
    common = ["sentiment", "--data-dir", str(imdb), *TINY, "--max-len", "64", "--head", "16", "--batch-size", "8"]
    assert train_main([*common, "--out", str(teacher)]) == 0
    unlabelled = imdb / "unsupervised.parquet"
    args = ["--model", str(teacher / "best"), "--data", str(unlabelled), "--out", str(labels), "--limit", "12"]
    assert pseudolabel_main(args) == 0
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    texts = list(pd.read_parquet(unlabelled)["text"][:12])
    assert [r["text"] for r in rows] == texts
    expected = SentimentPipeline.from_pretrained(str(teacher / "best")).predict(texts)
    assert [r["p_positive"] for r in rows] == pytest.approx([p["positive"] for p in expected], abs=1e-5)
    assert train_main([*common, "--out", str(student), "--pseudo-labels", str(labels)]) == 0
    assert f"pseudo-labelled: 12 texts from {labels}" in capsys.readouterr().out


def test_soft_targets_match_hard_labels_and_pull_towards_the_teacher():
    """0/1 soft targets give the hard-label loss exactly; a teacher's 0.5 is minimised at equal logits."""
    from types import SimpleNamespace

    from training.tasks.sentiment import SentimentTask

    task = SentimentTask.__new__(SentimentTask)
    task.args = SimpleNamespace(label_smoothing=0.1)
    logits = torch.tensor([[2.0, -1.0], [0.5, 0.3], [-1.0, 1.5]], requires_grad=True)

    class Model:
        def __call__(self, ids):
            return SimpleNamespace(logits=logits)

    ids = torch.ones(3, 4, dtype=torch.long)
    loss, stats = task.step(Model(), (ids, torch.tensor([0.0, 1.0, 1.0])))
    hard = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 1]), label_smoothing=0.1)
    assert loss.item() == pytest.approx(hard.item(), abs=1e-6)
    assert stats["correct"] == 2 and stats["count"] == 3
    loss, _ = task.step(Model(), (ids, torch.tensor([0.5, 0.5, 0.5])))
    (grad,) = torch.autograd.grad(loss, logits)
    assert (grad[:, 0] > 0).tolist() == (logits[:, 0] > logits[:, 1]).tolist()  # descent moves towards equal


def test_sst2_repeat_reads_each_phrase_n_times_and_holds_out_the_same_rows(data_dirs):
    """--sst2-repeat N puts every SST-2 training phrase N times in an epoch; IMDB and the held-out rows of both
    data sets stay as they were."""
    from types import SimpleNamespace

    from training.tasks.sentiment import SentimentTask, held_out_split

    imdb, sst2 = (pd.read_parquet(d / "train.parquet") for d in data_dirs)
    splits = {"train": imdb, "sst2_train": sst2}
    base = dict(val_size=8, sst2_val_size=6, seed=0, limit=None, vocab_size=300, max_len=64, head=16)
    once, twice = (SentimentTask(SimpleNamespace(**base, sst2_repeat=n), splits, log=lambda _: None) for n in (1, 2))
    n_imdb, n_sst2 = len(imdb) - 8, len(held_out_split("sst2", list(sst2["sentence"]), SimpleNamespace(**base))[1])
    assert len(once.train_ids) == n_imdb + n_sst2 and len(twice.train_ids) == n_imdb + 2 * n_sst2
    assert twice.train_ids[n_imdb + n_sst2 :] == twice.train_ids[n_imdb : n_imdb + n_sst2]
    assert twice.train_y[n_imdb:] == once.train_y[n_imdb:] * 2
    assert once.val == twice.val


def test_sst2_holds_out_whole_sentences_and_every_part_of_them():
    """--sst2-holdout sentences: only full sentences are held out, and no training row is a word span of one (SST-2
    train lists every sub-phrase of its sentences), a phrase listed twice included; --sst2-holdout phrases (the
    default) is the old row split."""
    from types import SimpleNamespace

    from training.tasks.sentiment import held_out_split, split_indices

    roots = [f"the {a} film was {b}" for a in ("first", "second", "third", "last", "new") for b in ("good", "bad")]
    parts = ["film was good", "film was bad", "good", "bad", "the first film", "was", "was", "film  was good"]
    phrases = roots + parts
    args = SimpleNamespace(val_size=0, sst2_val_size=2, seed=0, sst2_holdout="sentences")
    val, train = held_out_split("sst2", phrases, args)
    assert len(val) == 2 and all(phrases[i] in roots for i in val)
    spans = {
        " ".join(w[a:b]) for i in val for w in [phrases[i].split()] for a in range(len(w)) for b in range(a, len(w) + 1)
    }
    trained = {" ".join(phrases[i].split()) for i in train}
    assert not trained & spans  # no part of a held-out sentence is trained on, however often it is listed
    assert {"was", "good", "bad"} <= spans and not {"was", "good", "bad"} & trained  # these are parts of any root
    left_out = [i for i in range(len(phrases)) if " ".join(phrases[i].split()) in spans]
    assert sorted(train + left_out) == list(range(len(phrases)))  # every other row trains
    assert held_out_split("sst2", phrases, args) == (val, train)  # seeded
    rows = held_out_split("sst2", phrases, SimpleNamespace(**{**vars(args), "sst2_holdout": "phrases"}))
    assert rows == split_indices(len(phrases), 2, 0)
    default = SimpleNamespace(val_size=0, sst2_val_size=2, seed=0)  # no --sst2-holdout: the old split
    assert held_out_split("sst2", phrases, default) == rows


def _args(*words):
    from training.cli import build_parser

    return build_parser().parse_args(["sentiment", "--data-dir", "d", "--out", "o", *words])  # a later --out wins


def _record(command: str, **more) -> dict:
    return {"command": "python -m training sentiment --data-dir d --out o " + command, **more}


def test_continue_from_refuses_another_sst2_holdout():
    """A model is only continued with the SST-2 hold-out it was trained with: its metrics.json's record, or for a
    model from before --sst2-holdout, 2,000 random rows (phrases); runs without SST-2 are not asked."""
    from training.engine.data import DataError
    from training.tasks.lineage import check_held_out

    old = _record("--sst2-dir s --seed 0")
    with pytest.raises(DataError, match="--sst2-holdout phrases --sst2-val-size 2000"):
        check_held_out(old, _args("--sst2-dir", "s", "--sst2-holdout", "sentences"), "m")
    check_held_out(old, _args("--sst2-dir", "s"), "m")
    check_held_out(old, _args("--sst2-holdout", "sentences"), "m")  # this run reads no SST-2
    new = {**old, "held_out": {"sst2": {"holdout": "sentences", "size": 1000}}}
    check_held_out(new, _args("--sst2-dir", "s", "--sst2-holdout", "sentences"), "m")
    with pytest.raises(DataError, match="--sst2-holdout sentences --sst2-val-size 1000"):
        check_held_out(new, _args("--sst2-dir", "s", "--sst2-holdout", "sentences", "--sst2-val-size", "500"), "m")


@pytest.mark.parametrize(
    "recorded, fix",
    [
        ("--seed=3", "--seed 3"),  # the = form
        ("--sst2-dir s --sst2-val 500", "--sst2-holdout phrases --sst2-val-size 500"),  # an abbreviation
        ("--val-siz 100", "--val-size 100"),
    ],
)
def test_recorded_commands_are_read_as_they_ran(recorded, fix):
    """The recorded command is parsed by the training parser, so every spelling argparse accepts is read."""
    from training.engine.data import DataError
    from training.tasks.lineage import check_held_out

    with pytest.raises(DataError, match=fix):
        check_held_out(_record(recorded), _args("--sst2-dir", "s"), "m")


def test_a_recorded_command_reads_without_its_out_and_a_foreign_one_is_not_read():
    from training.tasks.lineage import recorded_args

    assert recorded_args("python -m training sentiment --sst2-d s --seed 3").seed == 3
    assert recorded_args("python -m training sentiment --sst2-d s --seed 3").sst2_dir == "s"
    assert recorded_args("python train.py --seed 3") is None
    assert recorded_args("python -m training sentiment --pooling nonsense") is None  # no longer parses
    assert recorded_args(None) is None


def test_a_command_that_cannot_be_read_is_refused_and_limit_counts_where_it_cuts_first():
    """What a recorded command held out must be known: one this version cannot read is refused, not skipped.
    --limit cuts the sentiment data before the held-out rows are drawn (other rows), pre-training's after."""
    from training.engine.data import DataError
    from training.tasks.lineage import check_held_out

    with pytest.raises(DataError, match="cannot read"):
        check_held_out(_record("--pooling nonsense"), _args(), "m")
    with pytest.raises(DataError, match="cannot read"):
        check_held_out({"command": "python -m training sentiment --out 'o"}, _args(), "m")  # unbalanced quote
    check_held_out({"calibration": {}}, _args(), "m")  # nothing recorded: nothing to check
    with pytest.raises(DataError, match="--limit 100"):
        check_held_out(_record("--limit 100"), _args(), "m")
    with pytest.raises(DataError, match="no --limit"):
        check_held_out(_record(""), _args("--limit", "100"), "m")
    pretrained = {"command": "python -m training pretrain --data-dir d --out o --limit 100"}
    check_held_out(pretrained, _args(), "m")  # pre-training drew its held-out rows from the whole data


def test_the_whole_chain_of_runs_behind_a_model_is_checked():
    """A run without SST-2 between two with it does not hide the first one's hold-out."""
    from training.engine.data import DataError
    from training.tasks.lineage import check_held_out

    first = _record("--sst2-dir s")  # phrases, 2,000
    middle = _record("--continue-from m1", source_weights={"continued_from": first})
    with pytest.raises(DataError, match="--sst2-holdout phrases"):
        check_held_out(middle, _args("--sst2-dir", "s", "--sst2-holdout", "sentences"), "m2")
    check_held_out(middle, _args("--sst2-dir", "s"), "m2")


def test_the_pretraining_run_behind_an_encoder_is_checked_through_a_run_without_sst2(tmp_path):
    """pre-training read SST-2 less its held-out rows; a sentiment run started from that encoder without SST-2, then
    continued with another SST-2 hold-out, would train on sentences the encoder read: refused."""
    from training.engine.data import DataError
    from training.tasks.lineage import check_held_out

    pre = tmp_path / "pre"
    (pre / "best").mkdir(parents=True)
    start = {"event": "start", "command": "python -m training pretrain --data-dir d --out pre --sst2-dir s"}
    (pre / "metrics.jsonl").write_text(json.dumps(start) + "\n")
    middle = _record(f"--init-from {pre / 'best'}")  # no SST-2 here
    with pytest.raises(DataError, match="--sst2-holdout phrases --sst2-val-size 2000"):
        check_held_out(middle, _args("--sst2-dir", "s", "--sst2-holdout", "sentences"), "m")
    check_held_out(middle, _args("--sst2-dir", "s"), "m")
    check_held_out(_record("--init-from gone/best"), _args("--sst2-dir", "s", "--sst2-holdout", "sentences"), "m")


def test_a_runs_best_folder_and_resume_read_the_runs_start_record(tmp_path):
    """best/ has no metrics.json with a command (training.calibrate may leave one with its calibration alone): the
    last start record of the run's metrics.jsonl says how it was made (a folder used again holds an older one too).
    --resume with another --seed or hold-out is refused before it trains."""
    from training.engine.data import DataError
    from training.tasks.lineage import check_runs_behind, run_record

    run = tmp_path / "run"
    (run / "best").mkdir(parents=True)
    start = _record("--sst2-dir s --seed 1", held_out={"sst2": {"holdout": "phrases", "size": 2000}}, event="start")
    older = _record("--seed 7", event="start")  # an earlier run in the same folder
    lines = [older, {"event": "train"}, start, {"event": "train"}]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (run / "best" / "metrics.json").write_text(json.dumps({"calibration": {"temperature": 1.2}}))
    assert run_record(run / "best")["command"] == start["command"]
    with pytest.raises(DataError, match="--seed 1"):
        check_runs_behind(_args("--sst2-dir", "s", "--init-from", str(run / "best")))
    check_runs_behind(_args("--sst2-dir", "s", "--seed", "1", "--init-from", str(run / "best")))
    with pytest.raises(DataError, match="--resume"):
        check_runs_behind(_args("--sst2-dir", "s", "--resume", "--out", str(run)))
    check_runs_behind(_args("--sst2-dir", "s", "--seed", "1", "--resume", "--out", str(run)))
    check_runs_behind(_args("--resume", "--out", str(tmp_path / "new")))  # nothing recorded yet: nothing to check


def test_pretraining_skips_the_held_out_sentences_and_their_parts():
    """Pre-training reads SST-2 less exactly the rows the sentiment task holds out, in either --sst2-holdout."""
    from types import SimpleNamespace

    from training.tasks.pretrain import pretraining_texts
    from training.tasks.sentiment import labelled_sets

    roots = [f"the {a} film was {b}" for a in ("first", "second", "third", "last", "new") for b in ("good", "bad")]
    phrases = roots + ["film was good", "good", "bad", "was"]
    sst2 = pd.DataFrame({"sentence": phrases, "label": [1] * len(phrases)})
    for holdout in ("sentences", "phrases"):
        args = SimpleNamespace(val_size=0, sst2_val_size=2, seed=0, sst2_holdout=holdout)
        sets = labelled_sets({"sst2_train": sst2}, args)["sst2"]
        texts = pretraining_texts({"sst2_train": sst2}, args)
        assert sorted(texts) == sorted(sets["train"][0]) and not set(texts) & set(sets["validation"][0])
