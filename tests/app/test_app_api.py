"""The app's public API, served on the tiny models and called with gradio_client as a user would."""

import pytest
from gradio_client import Client


@pytest.fixture(scope="module")
def client(app, tmp_path_factory):
    """A gradio_client Client of the app on the two tiny models (tests/app/conftest.py)."""
    _, url = app
    return Client(url, verbose=False, analytics_enabled=False, download_files=str(tmp_path_factory.mktemp("dl")))


def test_only_the_model_endpoints_are_public(client):
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert set(endpoints) == {"/sentiment", "/translate", "/generate"}  # /generate: no language model given here
    assert [p["parameter_name"] for p in endpoints["/translate"]["parameters"]] == [
        "german_text",
        "decoding",
        "beam_size",
    ]
    assert [p["parameter_has_default"] for p in endpoints["/translate"]["parameters"]] == [False, True, True]


def test_sentiment_endpoint_returns_label_and_probabilities(client):
    label, status = client.predict("A warm, funny and beautifully acted film.", api_name="/sentiment")
    probs = {c["label"]: c["confidence"] for c in label["confidences"]}
    assert set(probs) == {"negative", "positive"} and sum(probs.values()) == pytest.approx(1.0, abs=1e-5)
    assert label["label"] == max(probs, key=probs.get)
    assert f"**{label['label']}**" in status and "tokens read" in status


def test_sentiment_endpoint_answers_bad_input_with_a_message(client):
    label, status = client.predict("   ", api_name="/sentiment")
    assert not label and "empty" in status  # a cleared gr.Label reads as {}
    label, status = client.predict("<script>alert(1)</script>" * 8_000, api_name="/sentiment")  # 200,000 chars
    assert label["label"] in ("negative", "positive")
    assert "200,000 characters" in status and "HTML-like tags" in status


def test_translate_endpoint_with_defaults_and_with_greedy(client):
    english, status = client.predict("Ein Hund läuft.", api_name="/translate")
    assert isinstance(english, str) and "beam search, 2 beams" in status  # the slider starts at the model's beam
    english, status = client.predict("Ein Mann fährt Fahrrad.", "greedy", 4, api_name="/translate")
    assert isinstance(english, str) and "greedy decoding" in status
    english, status = client.predict("", api_name="/translate")
    assert english == "" and "Please type or paste a German sentence" in status
