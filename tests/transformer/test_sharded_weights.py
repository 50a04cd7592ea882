"""Weights split into shards: a model over the bundle's 25 MB a file (a 4 x 512 encoder is about 40 MB in fp16)
ships as model.safetensors.index.json plus shards, and everything that reads a model folder reads it: the app's
pipelines (with the weights_sha256 check), training.ship, training.publish and `transformers`."""

import json
import shutil

import pytest
import torch
from hf_checks import check_classifier, published
from tiny_models import FIXTURES
from training_runs import fake_run

from pipelines import SentimentPipeline, TranslationPipeline
from pipelines.models.folders import model_file_names, weights_sha256
from training import ship
from training.release.checks import load_pipeline
from transformer import CheckpointError
from transformer.hub import WEIGHTS, WEIGHTS_INDEX, missing_files, weight_files

SHARD_BYTES = 30_000  # the tiny models are a few hundred kB in fp16: several shards each
REVIEWS = ["A wonderful, moving film.", "Dull and far too long. I left early.", "not bad at all"]


def fp16_folder(src, dst, max_file_bytes):
    """A copy of the model folder src with its weights in fp16, as one file or as shards."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(WEIGHTS, "metrics.json"))
    ship.write_weights(src, dst, max_file_bytes)
    return dst


@pytest.fixture(scope="module")
def pair(sentiment_dir, tmp_path_factory):
    """(one-file folder, sharded folder) of the same fp16 sentiment weights."""
    root = tmp_path_factory.mktemp("shards")
    return fp16_folder(sentiment_dir, root / "one", 10**9), fp16_folder(sentiment_dir, root / "sharded", SHARD_BYTES)


def test_a_large_model_is_written_as_shards_each_under_the_limit(pair):
    one, sharded = pair
    assert [f.name for f in weight_files(one)] == [WEIGHTS]
    shards = weight_files(sharded)
    assert len(shards) >= 3 and not (sharded / WEIGHTS).exists() and (sharded / WEIGHTS_INDEX).is_file()
    index = json.loads((sharded / WEIGHTS_INDEX).read_text())["weight_map"]
    for f in shards:
        tensors_here = [k for k, v in index.items() if v == f.name]
        assert f.stat().st_size <= SHARD_BYTES or len(tensors_here) == 1  # only a lone tensor may exceed it
    assert model_file_names(sharded)[:2] == ["config.json", WEIGHTS_INDEX]
    assert set(model_file_names(sharded)) >= {f.name for f in shards}


def test_the_pipelines_read_shards_as_they_read_one_file(pair, translation_dir, tmp_path):
    one, sharded = (SentimentPipeline.from_pretrained(str(f)) for f in pair)
    for text in REVIEWS:
        a, b = one(text), sharded(text)
        assert a.probabilities == b.probabilities and all(torch.equal(x, y) for x, y in zip(a.attentions, b.attentions))
    # The translator ties its output layer to its target embeddings: saved once, it must load into both.
    t_one = TranslationPipeline.from_pretrained(str(fp16_folder(translation_dir, tmp_path / "t1", 10**9)))
    t_sharded = TranslationPipeline.from_pretrained(str(fp16_folder(translation_dir, tmp_path / "t2", SHARD_BYTES)))
    assert len(weight_files(tmp_path / "t2")) >= 2
    for text in ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee."]:
        a, b = t_one(text), t_sharded(text)
        assert a.translation == b.translation and a.score == b.score


def test_a_missing_or_damaged_shard_is_named(pair, tmp_path):
    folder = shutil.copytree(pair[1], tmp_path / "m")
    last = weight_files(folder)[-1]
    (folder / "metrics.json").write_text(json.dumps({"weights_sha256": weights_sha256(folder)}))
    SentimentPipeline.from_pretrained(str(folder))  # the recorded hash matches: loads

    data = bytearray(last.read_bytes())
    data[-3] ^= 0xFF  # a flipped byte inside the last tensor: the same size and shapes
    last.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="does not match the weights_sha256"):
        SentimentPipeline.from_pretrained(str(folder))

    last.unlink()
    assert missing_files(folder, ("config.json", WEIGHTS)) == [last.name]
    with pytest.raises(CheckpointError, match=f"missing {last.name}"):
        SentimentPipeline.from_pretrained(str(folder))
    (folder / WEIGHTS_INDEX).write_text("{not json")
    with pytest.raises(CheckpointError, match="not a valid shard index"):
        SentimentPipeline.from_pretrained(str(folder))


def test_ship_splits_a_model_over_the_file_limit(tmp_path, sentiment_dir, pair, capsys):
    run, to = fake_run(tmp_path, sentiment_dir), tmp_path / "assets" / "sentiment"
    data = str(FIXTURES / "imdb_tiny.jsonl")
    args = ["sentiment", "--run", str(run), "--to", str(to), "--test-data", data]
    assert ship.main([*args, "--max-file-mb", "26"]) == 2  # over the bundle's limit
    assert ship.main([*args, "--max-file-mb", str(SHARD_BYTES / 2**20)]) == 0
    shards = weight_files(to)
    assert len(shards) >= 3 and not (to / WEIGHTS).exists()
    assert all(f.stat().st_size <= SHARD_BYTES for f in shards)
    metrics = json.loads((to / "metrics.json").read_text())
    assert metrics["weights_sha256"] == weights_sha256(to)
    pipe = SentimentPipeline.from_pretrained(str(to))  # checks the recorded hash
    one = SentimentPipeline.from_pretrained(str(pair[0]))  # the same fp16 weights in one file
    assert metrics["test"]["n"] == 40
    assert all(pipe(text).probabilities == one(text).probabilities for text in REVIEWS)


def test_publish_and_transformers_take_a_sharded_folder(pair, tmp_path):
    sharded = pair[1]
    load_pipeline("sentiment", sharded)  # complete: the index and every shard count as the weights
    repo = published("sentiment", sharded, tmp_path / "repo")
    assert {f.name for f in weight_files(sharded)} | {WEIGHTS_INDEX} <= {p.name for p in repo.iterdir()}
    check_classifier(repo)  # AutoModelForSequenceClassification reads the shards: same logits and attention
