"""Activation patching through the hook points: the clean state put back whole restores the clean run exactly, none
leaves the corrupted run, a head's cell is the run with that head's output replaced, and attribution patching is exact
where the model is linear in the patched state; on the three families, tiny and bundled."""

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_models import linear_in_the_last_heads

from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline
from pipelines.lens import cost

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


def test_a_grid_of_grouped_positions_patches_each_group_together_and_the_last_ones_are_the_full_grids_columns(lm):
    t, c = answers(lm)
    T = ids_of(lm, CORRUPTED).size(1)
    every = lm.patch(CLEAN, CORRUPTED, target=t, contrast=c)
    grouped = lm.patch(CLEAN, CORRUPTED, target=t, contrast=c, cells=cost.Cells(group=3))
    assert grouped.cells == [list(range(s, min(s + 3, T))) for s in range(0, T, 3)]
    assert grouped.grid.shape == (lm.n_layers, len(grouped.cells)) and grouped.columns[0].startswith("0-2: ")
    name = "blocks.1.hook_resid_pre"
    _, cache = lm.adapter.model.run_with_cache(ids_of(lm, CLEAN), names=[name])

    def first_three(x, n):
        x = x.clone()
        x[:, :3] = cache[name][:, :3]
        return x

    by_hand = (metric(lm, [(name, first_three)], t, c) - grouped.corrupted) / (grouped.clean - grouped.corrupted)
    assert grouped.grid[1, 0] == pytest.approx(by_hand, abs=1e-5)
    last = lm.patch(CLEAN, CORRUPTED, target=t, contrast=c, cells=cost.Cells(last=4))
    assert last.cells == [[i] for i in range(T - 4, T)] and last.columns[0].startswith(f"{T - 4}: ")
    np.testing.assert_allclose(last.grid, every.grid[:, -4:], atol=1e-5)


def test_an_exact_grid_past_the_bound_is_not_run_and_the_error_names_its_cost_and_the_coarser_grids(lm):
    t, c = answers(lm)
    ran = []
    with pytest.raises(cost.TooCostly) as raised:
        lm.patch(CLEAN, CORRUPTED, target=t, contrast=c, max_seconds=1e-9, progress=lambda d, n: ran.append(d))
    e = raised.value
    T = ids_of(lm, CORRUPTED).size(1)
    assert ran == [] and e.cost.cells == T and e.cost.layers == lm.n_layers
    assert e.cost.passes == T * (lm.n_layers + 1) / 2  # each row from its layer's input on
    assert "would take about" in str(e) and "attribution patching" in str(e) and e.options == []  # not one cell fits
    with pytest.raises(cost.TooCostly, match="attribution patching") as heads:
        lm.patch(CLEAN, CORRUPTED, over="heads", target=t, contrast=c, max_seconds=1e-9)
    assert heads.value.cost.cells == lm.n_heads and heads.value.options == []
    bounded = lm.patch(CLEAN, CORRUPTED, target=t, contrast=c, max_seconds=600.0)  # well within: the same grid
    np.testing.assert_allclose(bounded.grid, lm.patch(CLEAN, CORRUPTED, target=t, contrast=c).grid, atol=1e-5)


def test_the_coarser_grids_are_the_finest_within_the_bound():
    """12 positions, 3 layers from their own inputs (2 whole passes a cell), 1 s a pass, 10 s at most: 5 cells fit."""
    options = cost.coarser(12, 3, True, 1.0, 10.0)
    assert [c for c, _ in options] == [cost.Cells(group=3), cost.Cells(last=5)]
    assert [g.seconds for _, g in options] == [8.0, 10.0]
    assert cost.bounded(cost.Cells(fit="group"), False, 12, 3, True, 1.0, 10.0) == [[0, 1, 2], [3, 4, 5], [6, 7, 8],
                                                                                     [9, 10, 11]]  # fmt: skip
    assert cost.bounded(cost.Cells(fit="last"), False, 12, 3, True, 1.0, 10.0) == [[i] for i in range(7, 12)]
    assert cost.bounded(None, False, 12, 3, True, 0.1, 10.0) is None  # 2.4 s: every position, as asked
    assert cost.bounded(cost.Cells(fit="last"), False, 12, 3, True, 1.0, None) is None  # no bound: every position
    with pytest.raises(cost.TooCostly, match=r"groups of 3 \(about 8 s\) or the last 5 positions only") as e:
        cost.bounded(None, False, 12, 3, True, 1.0, 10.0)
    assert e.value.cost.seconds == 24.0
    again = pickle.loads(pickle.dumps(e.value))  # as it comes back from a model's own process
    assert str(again) == str(e.value) and again.options == e.value.options
    with pytest.raises(ValueError, match="cells"):
        cost.Cells(group=0)


def test_an_exact_grid_in_passes_of_fewer_rows_is_the_same_grid(lm, monkeypatch):
    """After its first layer's pass, an exact grid's passes are cut so that each lasts about cost.PASS_S (its pause
    points come that often): at a row a pass, the grid is the one of a pass a layer."""
    t, c = answers(lm)
    whole = lm.patch(CLEAN, CORRUPTED, target=t, contrast=c)
    monkeypatch.setattr(cost, "PASS_S", 0.0)
    np.testing.assert_allclose(lm.patch(CLEAN, CORRUPTED, target=t, contrast=c).grid, whole.grid, atol=1e-5)
    assert cost.rows_within(1.0, 4) == 1
    monkeypatch.setattr(cost, "PASS_S", 0.5)
    assert cost.rows_within(0.025, 4) == 5 and cost.rows_within(0.025, 1) == 20 and cost.rows_within(1.0, 4) == 1
