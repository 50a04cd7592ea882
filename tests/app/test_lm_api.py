"""/generate, the Next word tab's public endpoint, served on the tiny models and called with gradio_client."""

import math

import pytest
from browser import serve
from gradio_client import Client

from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline


@pytest.fixture(scope="module")
def client(sentiment_dir, translation_dir, lm_dir, tmp_path_factory):
    from app import build_demo

    demo = build_demo(
        SentimentPipeline.from_pretrained(str(sentiment_dir)),
        TranslationPipeline.from_pretrained(str(translation_dir)),
        LanguageModelPipeline.from_pretrained(str(lm_dir)),
    )
    url = serve(demo)
    try:
        yield Client(url, verbose=False, analytics_enabled=False, download_files=str(tmp_path_factory.mktemp("dl")))
    finally:
        demo.close()


def test_generate_is_public_with_optional_decoding_options(client):
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert set(endpoints) == {"/sentiment", "/translate", "/generate"}
    params = endpoints["/generate"]["parameters"]
    assert [p["parameter_name"] for p in params] == ["prompt", "max_new_tokens", "decoding", "temperature", "top_p",
                                                     "seed"]  # fmt: skip
    assert [p["parameter_has_default"] for p in params] == [False, True, True, True, True, True]


def test_generate_greedy_and_sampled(client):
    text, top, status = client.predict("This movie was", api_name="/generate")
    assert isinstance(text, str) and "greedy decoding" in status
    probs = [c["confidence"] for c in top["confidences"]]
    assert 1 <= len(probs) <= 10 and all(math.isfinite(p) and 0 <= p <= 1 for p in probs)
    a = client.predict("This movie was", 5, "sampled", 1.2, 0.9, 42, api_name="/generate")
    b = client.predict("This movie was", 5, "sampled", 1.2, 0.9, 42, api_name="/generate")
    assert a[0] == b[0] and "seed 42" in a[2]


@pytest.mark.parametrize(
    "args, words",
    [
        (("",), "Please type or paste a prompt"),
        (("Hello", 0), "from 1 to 64"),
        (("Hello", 1000), "from 1 to 64"),
        (("Hello", 5, "beam search"), "“greedy” or “sampled”"),
        (("Hello", 5, "sampled", -1), "temperature must be"),
        (("Hello", 5, "sampled", 1.0, 0), "top-p must be"),
        (("Hello", 5, "sampled", 1.0, 0.9, 1.5), "seed must be"),
    ],
)
def test_generate_answers_bad_input_with_a_message(client, args, words):
    text, top, status = client.predict(*args, api_name="/generate")
    assert text == "" and not top and words in status and "Traceback" not in status
