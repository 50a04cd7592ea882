"""Inside one head of a decoder-only model (pipelines.attention.inside_head.py) on tiny random CausalLMs with
grouped key/value heads: q and k before the rotation are the projections computed here by hand from the layer's
weights and input, after it they are those rotated by the model's own Rotary, the scores recomputed from the shown q
and k through the causal mask and softmax are the model's returned attention row, and each query head reads the
key/value head of its group."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pipelines import LanguageModelPipeline
from pipelines.attention.inside_head import CausalInternals, causal_internals
from pipelines.models.adapter import OurCausalLM
from transformer import CausalLM
from transformer.config import CausalLMConfig
from transformer.embeddings import Rotary

IDS = [1, 17, 42, 9, 42, 17, 5, 63, 8]


def tiny(n_heads=6, n_kv_heads=2, positions="rotary", bias=False) -> OurCausalLM:
    torch.manual_seed(0)
    cfg = CausalLMConfig(vocab_size=64, d_model=48, n_heads=n_heads, n_kv_heads=n_kv_heads, n_layers=2, d_ff=64,
                         max_len=32, positions=positions, bias=bias)  # fmt: skip
    model = CausalLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.3)  # uneven attention: weights far from uniform
    return OurCausalLM(model, tokenizer=None)


def block_inputs(adapter, ids):
    """What each layer's attention read (its norm's output), by hand: (1, T, D) per layer."""
    seen, hooks = [], []
    for block in adapter.model.blocks:
        hooks.append(block.attn.register_forward_pre_hook(lambda m, args: seen.append(args[0].detach())))
    try:
        with torch.no_grad():
            out = adapter.model(torch.tensor([ids]), need_weights=True)
    finally:
        for h in hooks:
            h.remove()
    return seen, out.attentions


@pytest.mark.parametrize(("n_heads", "n_kv_heads"), [(6, 2), (4, 4), (6, 1)])
@pytest.mark.parametrize("bias", [False, True])
def test_every_row_is_the_models_own_before_and_after_the_rotation(n_heads, n_kv_heads, bias):
    adapter = tiny(n_heads, n_kv_heads, bias=bias)
    internals = causal_internals(adapter, IDS)
    assert isinstance(internals, CausalInternals) and internals.rotated
    inputs, attentions = block_inputs(adapter, IDS)
    T, hs = len(IDS), adapter.config.head_dim
    group = n_heads // n_kv_heads
    for layer, (x, attn) in enumerate(zip(inputs, attentions)):
        a = adapter.model.blocks[layer].attn
        with torch.no_grad():
            q = a.q_proj(x)[0].view(T, n_heads, hs).transpose(0, 1)  # (H, T, hs) by hand
            k = a.k_proj(x)[0].view(T, n_kv_heads, hs).transpose(0, 1)  # (Hkv, T, hs)
        cos, sin = Rotary(hs, adapter.config.rope_base).cos_sin(T)
        for head in range(n_heads):
            kv = head // group
            for query in (0, 3, T - 1):
                h = internals.head("causal", layer, head, query)
                tol = dict(atol=1e-5, rtol=1e-5)
                torch.testing.assert_close(h.q_before, q[head, query], **tol)  # the projections, before
                torch.testing.assert_close(h.keys_before, k[kv], **tol)
                torch.testing.assert_close(h.q, Rotary.rotate(q[head], cos, sin)[query], **tol)  # and after
                torch.testing.assert_close(h.keys, Rotary.rotate(k[kv], cos, sin), **tol)
                # recomputed from the vectors shown: the model's returned attention row, to 1e-5
                scores = (h.keys @ h.q) / hs**0.5
                mask = torch.arange(T) <= query
                assert torch.equal(h.mask, mask)  # causal: nothing above the diagonal
                recomputed = scores.masked_fill(~mask, float("-inf")).softmax(-1)
                torch.testing.assert_close(recomputed, attn[0, head, query], atol=1e-5, rtol=0)
                torch.testing.assert_close(h.masked.softmax(-1), attn[0, head, query], atol=1e-5, rtol=0)
                assert torch.equal(h.weights, attn[0, head, query])  # the returned map itself
                assert bool((h.weights[query + 1 :] == 0).all())
                assert h.kv_head == kv and list(h.group) == list(range(kv * group, (kv + 1) * group))
                assert head in h.group and h.n_kv_heads == n_kv_heads


def test_the_rotation_changes_scores_and_heads_of_a_group_share_their_keys():
    adapter = tiny(6, 2)
    internals = causal_internals(adapter, IDS)
    assert [internals.kv_head_of(h)[0] for h in range(6)] == [0, 0, 0, 1, 1, 1]
    a, b, c = (internals.head("causal", 1, h, 6) for h in (3, 5, 1))
    assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)  # query heads 3 and 5 share kv head 1
    assert not torch.equal(a.keys, c.keys)  # query head 1 reads kv head 0
    assert not torch.equal(a.q, b.q)  # each query head has its own query
    assert not torch.allclose(a.scores, a.scores_before)  # positions enter through the rotation
    assert torch.allclose(a.q_before.norm(), a.q.norm(), atol=1e-5)  # a rotation keeps lengths
    cut = a.up_to(7)
    assert cut.keys.shape == (7, a.keys.size(1)) and cut.keys_before.shape == (7, a.keys.size(1))
    assert torch.equal(cut.weights, a.weights[:7]) and cut.weights.sum() == pytest.approx(1.0, abs=1e-6)


def test_without_rotary_positions_before_and_after_are_the_same():
    internals = causal_internals(tiny(4, 2, positions="learned"), IDS)
    h = internals.head("causal", 0, 2, 5)
    assert not internals.rotated and torch.equal(h.q, h.q_before) and torch.equal(h.keys, h.keys_before)


def test_the_pipeline_records_the_pass_of_a_results_maps(lm_dir):
    pipe = LanguageModelPipeline.from_pretrained(str(lm_dir))
    result = pipe("A wonderful film with a dull ending.", max_new_tokens=4)
    internals = pipe.internals(result.sequence_ids)
    T = len(result.sequence_ids)
    for layer, maps in enumerate(result.attentions):
        for head in range(pipe.n_heads):
            h = internals.head("causal", layer, head, T - 1)
            torch.testing.assert_close(h.weights, maps[head, T - 1], atol=1e-6, rtol=0)
    with pytest.raises(ValueError):
        pipe.internals([])


# --- the lm tab's panel (viz.attention.inside_head_panel over an LMView) --------------------------------------------


def test_the_panel_shows_the_steps_row_with_its_rotation_group_and_mask(lm_dir):
    import re

    from pipelines.models.model_registry import ModelRegistry
    from viz.attention import inside_head_panel as panel
    from viz.next_word import handlers as lm

    pipe = LanguageModelPipeline.from_pretrained(str(lm_dir))  # 4 query heads, 2 key/value heads
    view = list(lm.generate(pipe, "A wonderful film with a dull ending.", max_new_tokens=5))[-1][0]
    models = ModelRegistry.of(pipe)
    internals = panel.record(models, view)
    assert panel.input_key(view) == (None, tuple(view.result.sequence_ids))
    Tp, n = len(view.result.tokens), len(view.steps)
    for step in (1, 3, n):
        maps = view.maps_at(step).maps["causal"]  # (L, H, T, T) at that step
        rows = Tp + step - 1
        out, fig = panel.figures(view, internals, "causal", 1, 3, None, step)
        assert f'data-query="{rows - 1}"' in out and 'data-layer="1" data-head="3"' in out  # the step's last row
        printed = [float(w) for w in re.findall(r'<td data-key="\d+">([\d.]+)</td>', out)]
        assert len(printed) == rows  # the keys read at that step: nothing past it
        assert printed == pytest.approx(maps[1, 3, rows - 1].astype(float).tolist(), abs=1.5e-3)
        assert 'data-kv-head="1" data-group="2-3"' in out
        assert "query head 4 reads key/value head 2 of 2, shared with query heads 3–4" in out
        assert "before" in out and "rotated" in out and 'class="ih-mask"' in out
        mask = re.search(r'<div class="ih-mask".*?</div></div>', out, re.S).group(0)
        assert mask.count("□") == rows * (rows - 1) // 2 and mask.count("■") == rows * (rows + 1) // 2  # the grid
        assert len(out.encode()) < 40_000  # small enough to send on every redraw
        assert len(fig.data[0].y) == pipe.n_heads + 1  # every head of the layer, and their sum
    picked, _ = panel.figures(view, internals, "causal", 0, 0, "src:2", 2)  # a token picked in token focus
    assert 'data-query="2"' in picked and 'data-group="0-1"' in picked and "shared with query heads 1–2" in picked
    assert panel.figures(view, internals, "causal", 0, 0, f"src:{Tp + 3}", 2) == (panel.PICK, None)  # past the step


def test_the_next_word_results_value_norms_are_hook_v_through_w_o_with_grouped_heads():
    """8 query heads over 2 key/value heads: query head h reads value head h // 4, through its own slice of W_O."""
    from pipelines.attention.attention_maps import lm_maps
    from pipelines.attention.inside_head import with_value_norms

    adapter = tiny(n_heads=8, n_kv_heads=2)
    x = torch.tensor([[3, 14, 15, 9, 26, 5]])
    run, norms = with_value_norms(adapter, lambda: adapter.forward(x, need_weights=True))
    _, cache = adapter.model.run_with_cache(x, names=["blocks.1.attn.hook_v"])
    v = cache["blocks.1.attn.hook_v"][0]  # (T, 2, hs)
    w_o = adapter.model.blocks[1].attn.o_proj.weight  # (D, H * hs)
    hs = adapter.config.head_dim
    for h in range(8):
        by_hand = (v[:, h // 4] @ w_o[:, h * hs : (h + 1) * hs].T).norm(dim=-1)  # (T,)
        torch.testing.assert_close(norms["causal"][0, 1, h], by_hand, rtol=1e-5, atol=1e-6)
    # the maps carry them: the weights times what each value carries are not the weights
    result = SimpleNamespace(attentions=[a[0] for a in run.attentions], value_norms=list(norms["causal"][0]),
                             sequence_texts=[str(i) for i in x[0].tolist()])  # fmt: skip
    maps = lm_maps(result)
    assert maps.carried["causal"].shape == (2, 8, 6)
    assert np.abs(maps.norm_maps("causal") - maps.maps["causal"]).max() > 1e-3
