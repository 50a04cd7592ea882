"""The tuned lens: identity translators read as the logit lens does, the last row is the model's own output, a lens
is applied only to the weights it was trained for, and a model without one says so and shows the logit lens."""

import numpy as np
import pytest
import torch

from pipelines.lens.readout import readout_of
from pipelines.lens.tuned import FILE, NO_TUNED_LENS, Fingerprint, Translators, TunedLens, lens_file, tuned_lens_for

PROMPT = "The film was a"


def _lens_for(pipe, randomise: bool) -> TunedLens:
    readout = readout_of(pipe.adapter)
    t = Translators(pipe.n_layers, readout.unembed.shape[0], rank=4)
    if randomise:
        with torch.no_grad():
            t.up.normal_(0, 0.5)
            t.bias.normal_(0, 0.5)
    return TunedLens(t, Fingerprint.of(readout), {"test_kl_tuned_lens": [0.0]})


@pytest.fixture
def lm_with_lens(lm_dir, tmp_path):
    """The tiny language model, copied to a folder that holds a tuned lens with random translators."""
    import shutil

    from pipelines import LanguageModelPipeline

    folder = tmp_path / "lm"
    shutil.copytree(lm_dir, folder)
    pipe = LanguageModelPipeline.from_pretrained(str(folder))
    _lens_for(pipe, randomise=True).save(folder / FILE)
    return LanguageModelPipeline.from_pretrained(str(folder))


def test_identity_translators_read_as_the_logit_lens(lm):
    readout = readout_of(lm.adapter)
    ids = torch.tensor([list(lm.encode(PROMPT).ids)])
    _, cache = lm.adapter.run_with_cache(lambda: lm.adapter.forward(ids), readout.names())
    from pipelines.lens.logit_lens import logit_lens

    plain = logit_lens(readout, cache, ["t"] * ids.shape[1], lm.adapter.token_text)
    tuned = logit_lens(readout, cache, ["t"] * ids.shape[1], lm.adapter.token_text, translators=_lens_for(lm, False)
                       .translators)  # fmt: skip
    assert tuned.kind == "tuned" and plain.kind == "logit"
    assert tuned.top_tokens == plain.top_tokens
    np.testing.assert_allclose(tuned.top_probs, plain.top_probs, atol=1e-6)
    np.testing.assert_allclose(tuned.logit_kl, plain.kl, atol=1e-6)


def test_the_tuned_lens_ends_on_the_models_output_and_differs_before(lm_with_lens):
    pipe = lm_with_lens
    assert pipe.tuned_lens() is not None
    plain, tuned = pipe.logit_lens(PROMPT), pipe.logit_lens(PROMPT, kind="tuned")
    assert tuned.kind == "tuned" and "Tuned lens" in tuned.note
    np.testing.assert_allclose(tuned.top_probs[-1], plain.top_probs[-1], atol=1e-6)  # the last state is untranslated
    assert tuned.kl[-1] == pytest.approx(0.0, abs=1e-6)
    assert not np.allclose(tuned.kl[:-1], plain.kl[:-1])
    np.testing.assert_allclose(tuned.logit_kl, plain.kl, atol=1e-5)  # the logit lens's, drawn beside it


def test_a_lens_saved_and_loaded_translates_the_same(lm, tmp_path):
    lens = _lens_for(lm, randomise=True)
    lens.save(tmp_path / "x.safetensors")
    back = TunedLens.load(tmp_path / "x.safetensors")
    h = torch.randn(2, 3, back.translators.up.shape[-1])
    assert back.fingerprint == lens.fingerprint and back.about == lens.about
    torch.testing.assert_close(back.translators(1, h), lens.translators(1, h))
    assert not back.translators.up.requires_grad


def test_a_lens_is_not_applied_to_other_weights(lm_with_lens):
    readout = readout_of(lm_with_lens.adapter)
    assert tuned_lens_for(lm_with_lens.source, readout, "cpu") is not None
    with torch.no_grad():
        lm_with_lens.adapter.model.W_U[:, 0] += 1.0  # as a training snapshot's weights would differ
    assert tuned_lens_for(lm_with_lens.source, readout, "cpu") is None
    lens = lm_with_lens.logit_lens(PROMPT, kind="tuned")
    assert lens.kind == "logit" and lens.note.startswith(NO_TUNED_LENS)


def test_without_a_lens_the_tuned_kind_says_so_and_a_bad_kind_is_refused(lm):
    assert lens_file(lm.source) is None and lm.tuned_lens() is None
    lens = lm.logit_lens(PROMPT, kind="tuned")
    assert lens.kind == "logit" and lens.note.startswith(NO_TUNED_LENS) and lens.logit_kl is None
    with pytest.raises(ValueError, match="lens kind"):
        lm.logit_lens(PROMPT, kind="sideways")
