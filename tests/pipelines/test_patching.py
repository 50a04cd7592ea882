"""Activation patching through the hook points: the clean state put back whole restores the clean run exactly, none
leaves the corrupted run, a head's cell is the run with that head's output replaced, and attribution patching is exact
where the model is linear in the patched state; on the three families, tiny and bundled."""

from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_models import linear_in_the_last_heads

from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CLEAN = "When Mary and John went to the store, John gave a drink to"
CORRUPTED = "When John and Mary went to the store, John gave a drink to"  # the same words: the same tokens, reordered
IOI = (CLEAN, "When Mary and John went to the store, Mary gave a drink to")  # the indirect-object pair


def ids_of(lm, text):
    return torch.tensor([list(lm.encode(text).ids)])


def answers(lm):
    model = lm.adapter.model
    with torch.no_grad():
        clean = model(ids_of(lm, CLEAN)).logits[0, -1]
        corrupted = model(ids_of(lm, CORRUPTED)).logits[0, -1]
    t, c = int(clean.argmax()), int(corrupted.argmax())
    return t, (c if c != t else int(corrupted.topk(2).indices[1]))


def metric(lm, hooks, t, c):
    with torch.no_grad():
        logits = lm.adapter.model.run_with_hooks(ids_of(lm, CORRUPTED), hooks=hooks).logits[0, -1]
    return float(logits[t] - logits[c])


def test_every_position_of_layer_0_restores_the_clean_run_and_nothing_leaves_the_corrupted_one(lm):
    t, c = answers(lm)
    p = lm.patch(CLEAN, CORRUPTED, target=t, contrast=c)
    _, cache = lm.adapter.model.run_with_cache(ids_of(lm, CLEAN), names=["blocks.0.hook_resid_pre"])
    whole = metric(lm, [("blocks.0.hook_resid_pre", lambda x, n: cache["blocks.0.hook_resid_pre"])], t, c)
    assert (whole - p.corrupted) / (p.clean - p.corrupted) == pytest.approx(1.0, abs=1e-6)
    assert (metric(lm, [], t, c) - p.corrupted) / (p.clean - p.corrupted) == pytest.approx(0.0, abs=1e-6)
    assert p.grid.shape == (lm.n_layers, ids_of(lm, CORRUPTED).size(1)) and p.rows[0] == "layer 0"


def test_a_head_cell_is_the_run_with_that_heads_output_put_back(lm):
    t, c = answers(lm)
    p = lm.patch(CLEAN, CORRUPTED, over="heads", target=t, contrast=c)
    name = "blocks.1.attn.hook_z"
    _, cache = lm.adapter.model.run_with_cache(ids_of(lm, CLEAN), names=[name])

    def head_2(z, n):
        z = z.clone()
        z[:, :, 2] = cache[name][:, :, 2]
        return z

    by_hand = (metric(lm, [(name, head_2)], t, c) - p.corrupted) / (p.clean - p.corrupted)
    assert p.grid[1, 2] == pytest.approx(by_hand, abs=1e-5)
    assert p.columns == [f"h{h}" for h in range(lm.n_heads)]


def test_a_head_patched_at_the_last_position_only_is_that_run_by_hand(lm):
    t, c = answers(lm)
    p = lm.patch(CLEAN, CORRUPTED, over="heads", target=t, contrast=c, last_only=True)
    name = "blocks.1.attn.hook_z"
    _, cache = lm.adapter.model.run_with_cache(ids_of(lm, CLEAN), names=[name])

    def head_2_last(z, n):
        z = z.clone()
        z[:, -1, 2] = cache[name][:, -1, 2]
        return z

    by_hand = (metric(lm, [(name, head_2_last)], t, c) - p.corrupted) / (p.clean - p.corrupted)
    assert p.grid[1, 2] == pytest.approx(by_hand, abs=1e-5) and "last position only" in p.note
    every = lm.patch(CLEAN, CORRUPTED, over="heads", target=t, contrast=c)
    assert not np.allclose(every.grid, p.grid) and "last position only" not in every.note
    np.testing.assert_allclose(every.grid[-1], p.grid[-1], atol=1e-5)  # the last layer: only the last position counts
    estimate = lm.patch(CLEAN, CORRUPTED, over="heads", exact=False, target=t, contrast=c, last_only=True)
    assert estimate.grid.shape == p.grid.shape and np.isfinite(estimate.grid).all()


def test_attribution_patching_is_exact_where_the_model_is_linear_in_the_patched_state(lm):
    """Final norm out, the last feed-forward layer writing nothing: the logits are linear in the last layer's z."""
    linear = linear_in_the_last_heads(lm)
    t, c = answers(linear)
    exact = linear.patch(CLEAN, CORRUPTED, over="heads", target=t, contrast=c)
    estimate = linear.patch(CLEAN, CORRUPTED, over="heads", exact=False, target=t, contrast=c)
    np.testing.assert_allclose(estimate.grid[-1], exact.grid[-1], atol=1e-4)
    assert not estimate.exact and exact.exact


def test_inputs_of_other_lengths_patch_heads_at_the_last_position_only(lm):
    with pytest.raises(ValueError, match="by position only between inputs of one length"):
        lm.patch(CLEAN, "A much shorter prompt", over="resid")
    p = lm.patch(CLEAN, "When Mary went to the store, she gave a drink to", over="heads", contrast=5)
    assert not p.aligned and "last position only" in p.note


@pytest.mark.parametrize("bundled", ["lm", "sentiment-scratch", "translation"])
def test_the_bundled_models_grids_are_finite_and_agree_roughly(bundled):
    folder = str(ASSETS / bundled)
    if bundled == "lm":
        pipe, pair, extra = LanguageModelPipeline.from_pretrained(folder), IOI, {}
    elif bundled == "translation":
        pipe, extra = TranslationPipeline.from_pretrained(folder), {"step": 1}
        pair = ("Ein Mann fährt Fahrrad.", "Eine Frau fährt Fahrrad.")
    else:
        pipe, extra = SentimentPipeline.from_pretrained(folder), {}
        pair = ("The film was not bad.", "The film was very bad.")
    exact = pipe.patch(*pair, over="resid", **extra)
    estimate = pipe.patch(*pair, over="resid", exact=False, **extra)
    assert np.isfinite(exact.grid).all() and np.isfinite(estimate.grid).all()
    assert exact.grid.shape == estimate.grid.shape
    if bundled == "lm":  # the pair differs in one token: at layer 0 that position alone holds the difference
        assert exact.grid[0].max() == pytest.approx(1.0, abs=1e-3) and exact.grid[0].sum() == pytest.approx(
            1.0, abs=1e-3
        )


def test_task_patching_says_when_both_inputs_answer_alike(lm):
    with pytest.raises(ValueError, match="both inputs answer"):
        lm.patch(CLEAN, CLEAN)


def test_translation_patches_at_the_first_step_where_the_two_sentences_answers_differ():
    from pipelines.lens.family import first_difference

    pipe = TranslationPipeline.from_pretrained(str(ASSETS / "translation"))
    a, b = "Ein Mann fährt mit dem Fahrrad.", "Eine Frau fährt mit dem Fahrrad."
    p = pipe.patch(a, b, over="heads", exact=False)
    result = pipe(a, beam_size=1)
    srcs = [torch.tensor([pipe.encode_source([t])[0][0]]) for t in (a, b)]
    step = first_difference(pipe, srcs, result.target_ids)
    assert f"at decoding step {step}." in p.note and p.clean > p.corrupted
    same = pipe.patch(a, b, over="heads", exact=False, step=step)
    np.testing.assert_allclose(p.grid, same.grid, atol=1e-6)
    with pytest.raises(ValueError, match="same token first at every step"):
        pipe.patch(a, a, over="heads", exact=False)
