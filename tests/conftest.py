import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))
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
