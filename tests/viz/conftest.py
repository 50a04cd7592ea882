"""What the app's tests share beside the root conftest's: tiny `transformers` models in our pipelines."""

import pytest


@pytest.fixture(scope="module", params=["bert", "distilbert", "roberta"])
def hf_classifier(request, tmp_path_factory):
    """A tiny random BERT, DistilBERT or RoBERTa sequence classifier (tests/support/tiny_hf_models.py) in a
    SentimentPipeline: a test that takes it runs once for each."""
    from tiny_hf_models import CLASSIFIERS

    from pipelines import SentimentPipeline

    folder = CLASSIFIERS[request.param](tmp_path_factory.mktemp("hf") / request.param)
    return SentimentPipeline.from_pretrained(str(folder))


@pytest.fixture(scope="module")
def marian(tmp_path_factory):
    """A tiny random Marian translator in a TranslationPipeline."""
    from tiny_hf_models import make_marian_dir

    from pipelines import TranslationPipeline

    return TranslationPipeline.from_pretrained(str(make_marian_dir(tmp_path_factory.mktemp("hf") / "marian")))
