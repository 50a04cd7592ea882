"""python -m training.tuned_lens on the tiny language model and the tiny IMDB reviews: it writes a lens the app finds
beside the model, measured against the logit lens, that reads the early layers closer to the final distribution;
a run resumed from its checkpoint picks up where it was."""

import json
import shutil

import pandas as pd
import pytest

from pipelines import LanguageModelPipeline
from pipelines.lens.tuned import FILE, lens_file
from training import tuned_lens


@pytest.fixture
def data_dir(imdb_dir, tmp_path):
    d = tmp_path / "imdb"
    d.mkdir()
    train = pd.read_parquet(imdb_dir / "train.parquet")
    train.to_parquet(d / "unsupervised.parquet")
    train.to_parquet(d / "test.parquet")
    return d


def test_a_trained_lens_is_found_beside_the_model_and_reads_early_layers_better(lm_dir, data_dir, tmp_path, capsys):
    folder = tmp_path / "lm"
    shutil.copytree(lm_dir, folder)
    args = ["--model", str(folder), "--data-dir", str(data_dir), "--tokens", "2048", "--test-tokens", "512",
            "--seq-len", "16", "--batch-size", "8", "--lr", "1e-2", "--save-every", "4"]  # fmt: skip
    assert tuned_lens.main(args) == 0
    about = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert lens_file(str(folder)) == folder / FILE and json.loads((folder / FILE).with_suffix(".json").read_text())
    logit, tuned = about["test_kl_logit_lens"], about["test_kl_tuned_lens"]
    assert len(logit) == len(tuned) == len(about["layers"]) and logit[-1] == tuned[-1] == 0.0
    assert sum(tuned[:-1]) < sum(logit[:-1])
    pipe = LanguageModelPipeline.from_pretrained(str(folder))
    assert pipe.tuned_lens().about["test_kl_tuned_lens"] == tuned
    assert pipe.logit_lens("The film was", kind="tuned").kind == "tuned"


def test_a_resumed_run_starts_from_its_checkpoint(lm_dir, data_dir, tmp_path, capsys):
    out = tmp_path / "lens.safetensors"
    args = ["--model", str(lm_dir), "--data-dir", str(data_dir), "--tokens", "1024", "--test-tokens", "256",
            "--seq-len", "16", "--batch-size", "8", "--save-every", "2", "--out", str(out)]  # fmt: skip
    assert tuned_lens.main(args) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert tuned_lens.main(args + ["--resume"]) == 0
    printed = capsys.readouterr().out
    assert f"resumed at step {first['steps']}" in printed  # the checkpoint was the last step's: nothing to redo
    assert json.loads(printed.strip().splitlines()[-1])["test_kl_tuned_lens"] == first["test_kl_tuned_lens"]
