"""What every test shares: the tiny models, their pipelines and data folders, the Hub stood in for, one torch
thread; the helpers of tests/support/ importable by name (`import browser`). tests/app/conftest.py adds the app
served on a free port and a chromium page."""

import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent / "support"))  # the helpers, by name: `import browser`
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never call the Hub from a test
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def sentiment_dir(tmp_path_factory):
    from tiny_models import make_sentiment_dir

    return make_sentiment_dir(tmp_path_factory.mktemp("models") / "sentiment")


@pytest.fixture(scope="session")
def translation_dir(tmp_path_factory):
    from tiny_models import make_translation_dir

    return make_translation_dir(tmp_path_factory.mktemp("models") / "translation")


@pytest.fixture(scope="session")
def lm_dir(tmp_path_factory):
    from tiny_models import make_lm_dir

    return make_lm_dir(tmp_path_factory.mktemp("models") / "lm")


@pytest.fixture(scope="module")
def imdb_dir(tmp_path_factory):
    """The tiny IMDB fixture as a data folder (train and test Parquet), as ../shared/data/imdb holds them."""
    import pandas as pd
    from tiny_models import read_jsonl

    d = tmp_path_factory.mktemp("imdb")
    df = pd.DataFrame(read_jsonl("imdb_tiny.jsonl"))
    df.to_parquet(d / "train.parquet")
    df.to_parquet(d / "test.parquet")
    return d


@pytest.fixture(scope="module")
def multi30k_dir(tmp_path_factory):
    """The tiny Multi30k fixture as a data folder (train, validation and test Parquet)."""
    import pandas as pd
    from tiny_models import read_jsonl

    d = tmp_path_factory.mktemp("multi30k")
    df = pd.DataFrame(read_jsonl("multi30k_tiny.jsonl"))
    for split in ("train", "validation", "test"):
        df.to_parquet(d / f"{split}.parquet")
    return d


@pytest.fixture
def online(monkeypatch, tmp_path):
    """As if connected and logged in: offline mode off, a token in HF_TOKEN, temp folders under tmp_path; building
    the real Hub client fails the test (tests/support/fake_hub.py stands in for it)."""
    from huggingface_hub import constants

    from training import publish

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    monkeypatch.setattr(publish, "make_api", lambda token: pytest.fail("the real Hub client was built"))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    return tmp


@pytest.fixture(scope="module")
def sentiment(sentiment_dir):
    """The tiny sentiment model's pipeline."""
    from pipelines import SentimentPipeline

    return SentimentPipeline.from_pretrained(str(sentiment_dir))


@pytest.fixture(scope="module")
def translation(translation_dir):
    """The tiny translation model's pipeline."""
    from pipelines import TranslationPipeline

    return TranslationPipeline.from_pretrained(str(translation_dir))


@pytest.fixture(scope="module")
def lm(lm_dir):
    """The tiny language model's pipeline."""
    from pipelines import LanguageModelPipeline

    return LanguageModelPipeline.from_pretrained(str(lm_dir))


@pytest.fixture
def one_thread():
    """One torch thread for the test: the tiny models gain nothing from threads and lose much on a busy CPU, and a
    child process on one thread gives bit-equal floats only to a parent on one too (test_processes)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
