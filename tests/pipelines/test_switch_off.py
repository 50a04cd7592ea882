"""Each head switched off alone, on the logit the direct logit attribution splits: a cell equals a run with that head
masked by hand, and in a tiny model with the final norm out and the last feed-forward layer silent a last-layer head's
whole effect is its direct attribution (what reaches the logit only directly); a Stop leaves rows NaN."""

import numpy as np
import pytest
import torch
from tiny_models import linear_in_the_last_heads

PROMPT = "The film was a"
REVIEW = "The film was not bad at all."


def test_a_cell_is_the_run_with_that_head_masked(lm):
    off = lm.switch_off(PROMPT)
    ids = torch.tensor([list(lm.encode(PROMPT).ids)])
    model = lm.adapter.model
    with torch.no_grad():
        logits = model(ids).logits[0, -1]
        t = int(logits.argmax())
        assert off.total == pytest.approx(float(logits[t]), abs=1e-5) and off.target == lm.adapter.token_text(t)
        for layer, head in [(0, 0), (1, lm.n_heads - 1), (lm.n_layers - 1, 1)]:
            mask = torch.ones(lm.n_layers, lm.n_heads)
            mask[layer, head] = 0.0
            by_hand = float(logits[t] - model(ids, head_mask=mask).logits[0, -1, t])
            assert off.heads[layer, head] == pytest.approx(by_hand, abs=1e-4)


def test_a_last_layer_heads_whole_effect_is_its_direct_part_where_nothing_reads_it_after(lm):
    pipe = linear_in_the_last_heads(lm)
    off, direct = pipe.switch_off(PROMPT), pipe.direct_logit_attribution(PROMPT)
    np.testing.assert_allclose(off.heads[-1], direct.heads[-1], atol=1e-5)
    assert not np.allclose(off.heads[:-1], direct.heads[:-1], atol=1e-3)  # earlier heads are read by later ones


def test_the_classifier_with_a_contrast_and_a_stop(sentiment):
    label = sentiment(REVIEW).label
    other = [x for x in sentiment.labels if x != label][0]
    off = sentiment.switch_off(REVIEW, contrast=other)
    assert off.target == label and off.contrast == other
    assert off.total == pytest.approx(sentiment.direct_logit_attribution(REVIEW, contrast=other).total, abs=1e-4)
    assert off.heads.shape == (sentiment.n_layers, sentiment.n_heads) and np.isfinite(off.heads).all()
    stopped = sentiment.switch_off(REVIEW, stop=lambda: True)
    assert np.isnan(stopped.heads).all()


def test_the_translators_decoder_and_cross_heads_each_by_hand(translation):
    text = "Ein Mann fährt mit dem Fahrrad."
    result = translation(text, beam_size=1)
    step = min(1, len(result.target_ids) - 1)
    off = translation.switch_off(text, step=step, result=result)
    a = translation.adapter
    src = torch.tensor([translation.encode_source([text])[0][0]])
    tgt = torch.tensor([[a.bos_id] + list(result.target_ids)[:-1]])
    t = result.target_ids[step]
    model = a.model
    with torch.no_grad():
        intact = float(model(src, tgt).logits[0, step, t])
        assert off.total == pytest.approx(intact, abs=1e-5)
        for attn, grid in (("attn", off.heads), ("cross_attn", off.cross)):
            layer, head = grid.shape[0] - 1, 1

            def zero(z, name, head=head):
                z = z.clone()
                z[:, :, head] = 0.0
                return z

            name = f"decoder.blocks.{layer}.{attn}.hook_z"
            by_hand = intact - float(model.run_with_hooks(src, tgt, hooks=[(name, zero)]).logits[0, step, t])
            assert grid[layer, head] == pytest.approx(by_hand, abs=1e-4)
