"""The start without the Hub (viz/server/hub_access.py): one short probe, offline mode on when it fails, and no
retry loop after it. The network is blocked in every test here (no name lookup or connection opens), the endpoint is a
closed local port, the Hub cache an empty folder; huggingface_hub's retry pauses are counted, not slept."""

import socket
import time

import pytest


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """Offline mode off, no connection possible: every name lookup and connection attempt is counted and refused.
    Returns {"connections": n, "retries": [pauses huggingface_hub would have slept]}."""
    from huggingface_hub import constants
    from huggingface_hub.utils import _http

    seen = {"connections": 0, "retries": []}

    def refuse(*args, **kwargs):
        seen["connections"] += 1
        raise OSError("the network is blocked in this test")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # what the probe asks: a closed port
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(_http.time, "sleep", seen["retries"].append)  # huggingface_hub's backoff, not slept
    return seen


def test_the_counters_see_the_hub_clients_retries_without_offline_mode(no_network):
    """The check the other tests lean on: offline mode off, a download tries, fails and retries five times."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    with pytest.raises(LocalEntryNotFoundError):
        hf_hub_download("Helsinki-NLP/opus-mt-de-en", "snapshots.json")
    assert len(no_network["retries"]) == 5 and no_network["connections"] >= 6  # a try, five retries


def test_one_short_probe_then_offline_mode_is_on(no_network):
    import os

    from huggingface_hub import constants, is_offline_mode

    from viz.server.hub_access import PROBE_TIMEOUT, settle_offline_mode

    start = time.monotonic()
    assert settle_offline_mode() is True
    assert time.monotonic() - start < PROBE_TIMEOUT + 1  # refused at once here; the timeout bounds a hanging one
    assert no_network["connections"] == 1 and no_network["retries"] == []  # one attempt, no retry
    assert os.environ["HF_HUB_OFFLINE"] == "1" and constants.HF_HUB_OFFLINE and is_offline_mode()


def test_no_probe_when_offline_mode_is_already_set(monkeypatch):
    from viz.server.hub_access import settle_offline_mode

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert settle_offline_mode(probe=lambda: pytest.fail("the Hub was probed with HF_HUB_OFFLINE set")) is True


def test_offline_mode_stays_off_where_the_hub_answers(no_network):
    import os

    from huggingface_hub import constants

    from viz.server.hub_access import settle_offline_mode

    assert settle_offline_mode(probe=lambda: True) is False
    assert "HF_HUB_OFFLINE" not in os.environ and not constants.HF_HUB_OFFLINE


def test_offline_the_translators_choice_says_at_once_that_marian_needs_the_hub(no_network, translation):
    """After the probe, building the translation tab's choice (its snapshots listed, Marian's availability asked)
    and choosing Marian send nothing and retry nothing: the choice says Marian needs the Hub."""
    from transformer import CheckpointError
    from viz.models.loading import PRETRAINED_TRANSLATOR, PRETRAINED_TRANSLATOR_NAME, translation_registry
    from viz.server.hub_access import settle_offline_mode

    settle_offline_mode()
    probed = no_network["connections"]
    start = time.monotonic()
    registry = translation_registry(translation, wrap=lambda p: p, sources=[PRETRAINED_TRANSLATOR])
    assert "needs the Hugging Face Hub" in registry.entries[PRETRAINED_TRANSLATOR_NAME].unavailable
    with pytest.raises(CheckpointError, match="cannot reach the Hugging Face Hub"):  # chosen anyway: fails at once
        registry.get(PRETRAINED_TRANSLATOR_NAME)
    assert no_network["connections"] == probed and no_network["retries"] == []
    assert time.monotonic() - start < 30  # generous: nothing waits on the network; the retries' pauses alone are 23 s


def test_offline_the_next_word_choice_says_at_once_that_smollm2_needs_the_hub(no_network, lm):
    """As for Marian: SmolLM2 offered from the Hub beside ours (no file of it here), the Hub not answering."""
    from transformer import CheckpointError
    from viz.models.loading import GET_SMOLLM2, PRETRAINED_LM, SMOLLM2_NAME, lm_registry
    from viz.next_word import tab
    from viz.server.hub_access import settle_offline_mode

    settle_offline_mode()
    probed = no_network["connections"]
    start = time.monotonic()
    registry = lm_registry(lm, wrap=lambda p: p, sources=[PRETRAINED_LM])
    assert registry.names == [registry.default, SMOLLM2_NAME]
    assert "needs the Hugging Face Hub" in registry.entries[SMOLLM2_NAME].unavailable
    assert GET_SMOLLM2 in tab._notes(registry)  # the notes say how to get it here
    with pytest.raises(CheckpointError, match="cannot reach the Hugging Face Hub"):  # chosen anyway: fails at once
        registry.get(SMOLLM2_NAME)
    assert no_network["connections"] == probed and no_network["retries"] == []
    assert time.monotonic() - start < 30  # generous: nothing waits on the network
