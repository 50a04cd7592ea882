"""The named hook points of the one core, on all three families: what they hold adds up to what the forward computes,
a hook that changes nothing changes nothing, a hook that replaces a value changes the rest of the pass."""

import contextvars
import threading

import pytest
import torch

from transformer import (
    CausalLM,
    CausalLMConfig,
    ClassifierConfig,
    Seq2SeqConfig,
    Seq2SeqTransformer,
    TransformerClassifier,
)
from transformer.legacy_names import today_name

torch.manual_seed(0)
H = 4


def classifier(norm_first=False):
    torch.manual_seed(1)
    cfg = ClassifierConfig(vocab_size=40, d_model=16, n_heads=H, n_layers=2, d_ff=24, max_len=32, norm_first=norm_first)
    return TransformerClassifier(cfg).eval()


def seq2seq(norm_first=False):
    torch.manual_seed(2)
    cfg = Seq2SeqConfig(vocab_size=40, d_model=16, n_heads=H, d_ff=24, n_encoder_layers=2, n_decoder_layers=2,
                        max_len=32, norm_first=norm_first)  # fmt: skip
    return Seq2SeqTransformer(cfg).eval()


def lm(n_heads=8, n_kv_heads=2, **fields):
    torch.manual_seed(3)
    cfg = CausalLMConfig(vocab_size=40, d_model=32, n_heads=n_heads, n_kv_heads=n_kv_heads, d_ff=48, n_layers=2,
                         max_len=32, **fields)  # fmt: skip
    return CausalLM(cfg).eval()


IDS = torch.tensor([[5, 9, 3, 17, 22, 8, 4], [7, 1, 12, 30, 2, 6, 11]])
TGT = torch.tensor([[1, 5, 9, 3], [1, 7, 7, 8]])

# (model, forward args, forward keyword arguments, {attention prefix: the output's list of maps})
FAMILIES = {
    "classifier": lambda: (classifier(), (IDS,), {"need_weights": True}, {"blocks.{}.attn": "attentions"}),
    "classifier-prenorm": lambda: (classifier(True), (IDS,), {"need_weights": True}, {"blocks.{}.attn": "attentions"}),
    "seq2seq": lambda: (seq2seq(), (IDS, TGT), {"need_weights": True},
                        {"decoder.blocks.{}.attn": "self_attentions",
                         "decoder.blocks.{}.cross_attn": "cross_attentions"}),
    "lm": lambda: (lm(), (IDS,), {"need_weights": True}, {"blocks.{}.attn": "attentions"}),
    "lm-gpt2": lambda: (lm(4, 4, positions="learned", norm="layernorm", activation="gelu", bias=True), (IDS,),
                        {"need_weights": True}, {"blocks.{}.attn": "attentions"}),
}  # fmt: skip


def logits(out):
    return out.logits


@pytest.fixture(params=list(FAMILIES))
def family(request):
    return FAMILIES[request.param]()


def test_transformer_lens_names_on_every_family(family):
    model, *_ = family
    names = set(model.hook_points)
    prefix = "decoder." if isinstance(model, Seq2SeqTransformer) else ""
    for point in ("hook_resid_pre", "attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_pattern", "attn.hook_z",
                  "attn.hook_result", "hook_attn_out", "hook_resid_mid", "mlp.hook_post", "hook_mlp_out",
                  "hook_resid_post"):  # fmt: skip
        assert f"{prefix}blocks.1.{point}" in names
    assert {f"{prefix}hook_embed", f"{prefix}hook_final"} <= names
    if prefix:
        assert "encoder.blocks.0.attn.hook_pattern" in names and "decoder.blocks.0.cross_attn.hook_z" in names


def test_the_pattern_is_the_attention_the_forward_returns(family):
    model, args, kwargs, maps = family
    with torch.no_grad():
        out, cache = model.run_with_cache(*args, **kwargs)
    for prefix, field in maps.items():
        for layer, returned in enumerate(getattr(out, field)):
            torch.testing.assert_close(cache[prefix.format(layer) + ".hook_pattern"], returned, rtol=0, atol=0)


def test_heads_results_plus_the_bias_are_the_attention_output(family):
    model, args, kwargs, maps = family
    with torch.no_grad():
        _, cache = model.run_with_cache(*args, **kwargs)
        # the outputs as the plain forward computes them (through o_proj): hook_result not asked for
        _, plain = model.run_with_cache(*args, names=lambda n: n.endswith("attn_out"), **kwargs)
    for prefix in maps:
        for layer in range(2):
            attn = prefix.format(layer)
            block, kind = attn.rsplit(".", 1)
            result = cache[f"{attn}.hook_result"]  # (B, T, H, D)
            bias = model.get_submodule(attn).b_O
            out = plain[f"{block}.hook_{'cross_attn' if kind == 'cross_attn' else 'attn'}_out"]
            torch.testing.assert_close(result.sum(2) + bias, out, rtol=0, atol=1e-5)
            # and each head's result is its hook_z through its slice of W_O
            z, w_o = cache[f"{attn}.hook_z"], model.get_submodule(attn).W_O  # (B, T, H, hs), (H, hs, D)
            torch.testing.assert_close(result[:, :, 1], z[:, :, 1] @ w_o[1], rtol=0, atol=1e-5)


def test_a_pre_norm_blocks_output_is_its_middle_plus_its_mlp(family):
    model, args, kwargs, _ = family
    if not model.config.norm_first:
        pytest.skip("post-norm: the sum is normed after the residual add")
    with torch.no_grad():
        _, cache = model.run_with_cache(*args, **kwargs)
    for name in [n for n in cache if n.endswith("hook_resid_post")]:
        block = name.removesuffix("hook_resid_post")
        mid = cache.get(block + "hook_resid_cross", cache[block + "hook_resid_mid"])
        torch.testing.assert_close(cache[name], mid + cache[block + "hook_mlp_out"], rtol=0, atol=1e-6)


def test_a_hook_that_returns_its_input_changes_nothing_and_a_replaced_pattern_changes_the_logits(family):
    model, args, kwargs, maps = family
    with torch.no_grad():
        plain = model(*args, **kwargs).logits
        # every point but hook_result: the same arithmetic, the same bits
        kept = lambda n: not n.endswith("hook_result")  # noqa: E731
        same = model.run_with_hooks(*args, hooks=[(kept, lambda x, name: x)], **kwargs).logits
        # hook_result asked for: the output is the heads' results summed (another order of the same sums)
        every = model.run_with_hooks(*args, hooks=[(lambda n: True, lambda x, name: None)], **kwargs).logits
        point = next(iter(maps)).format(1) + ".hook_pattern"

        def uniform_head_0(pattern, name):
            pattern = pattern.clone()
            pattern[:, 0] = 1.0 / pattern.size(-1)  # head 0 looks everywhere alike
            return pattern

        changed = model.run_with_hooks(*args, hooks=[(point, uniform_head_0)], **kwargs).logits
    torch.testing.assert_close(same, plain, rtol=0, atol=0)
    torch.testing.assert_close(every, plain, rtol=0, atol=1e-5)
    assert (changed - plain).abs().max() > 1e-4
    # nothing stays active after the call
    with torch.no_grad():
        torch.testing.assert_close(model(*args, **kwargs).logits, plain, rtol=0, atol=0)


def test_a_replaced_residual_stream_is_what_the_rest_of_the_pass_reads():
    model = lm()
    with torch.no_grad():
        _, cache = model.run_with_cache(IDS, names=["blocks.1.hook_resid_pre"])
        resid = cache["blocks.1.hook_resid_pre"]
        by_hand = model.forward_from(1, resid * 2).logits
        hooked = model.run_with_hooks(IDS, hooks=[("blocks.1.hook_resid_pre", lambda x, name: x * 2)]).logits
    torch.testing.assert_close(hooked, by_hand, rtol=0, atol=1e-5)


def test_weight_views_have_transformer_lens_shapes_and_compute_the_heads():
    model = lm()  # 8 query heads over 2 key/value heads
    L, D, hs = 2, 32, 4
    assert model.W_Q.shape == model.W_K.shape == model.W_V.shape == (L, 8, D, hs)
    assert model.W_O.shape == (L, 8, hs, D) and model.W_U.shape == (D, 40)
    assert torch.equal(model.W_K[0, 2], model.W_K[0, 3]) and not torch.equal(model.W_K[0, 3], model.W_K[0, 4])
    with torch.no_grad():
        _, cache = model.run_with_cache(IDS, names=["blocks.0.hook_resid_pre", "blocks.0.attn.hook_v"])
        x = model.blocks[0].attn_norm(cache["blocks.0.hook_resid_pre"])  # (B, T, D)
        v = cache["blocks.0.attn.hook_v"]  # (B, T, Hkv, hs)
        torch.testing.assert_close(x @ model.W_V[0, 5], v[:, :, 5 // 4], rtol=0, atol=1e-6)
    clf = classifier()
    assert clf.W_O.shape == (2, H, 4, 16) and clf.W_U.shape == (16, 2)


def test_the_cache_holds_only_what_was_asked_and_hooks_stay_on_their_thread():
    model = lm()
    _, cache = model.run_with_cache(IDS, names=["blocks.0.attn.hook_z"])
    assert list(cache) == ["blocks.0.attn.hook_z"] and cache["blocks.0.attn.hook_z"].shape == (2, 7, 8, 4)
    with pytest.raises(KeyError, match="no hook point named"):
        model.run_with_cache(IDS, names=["blocks.9.attn.hook_z"])
    seen, plain = [], model(IDS).logits
    other = {}

    def other_thread():
        other["logits"] = model(IDS).logits

    def record_and_run(x, name):
        seen.append(name)
        thread = threading.Thread(target=other_thread)  # its pass runs while this thread's hook is active
        thread.start()
        thread.join()

    model.run_with_hooks(IDS, hooks=[("blocks.0.hook_resid_pre", record_and_run)])
    assert seen == ["blocks.0.hook_resid_pre"]  # the other thread's pass did not run it
    torch.testing.assert_close(other["logits"], plain, rtol=0, atol=0)


def test_hooks_keep_to_their_context_and_a_copy_of_it_carries_them():
    """The active hooks are a context variable: a fresh context (a call served at a pause point) runs without them, a
    copy of the context (a pass on a pool's thread, pipelines.attention.passes) with them."""
    model = lm()
    plain = model(IDS).logits
    zero = ("blocks.0.hook_resid_pre", lambda x, name: x * 0)
    with model.hook_registry.hooks([zero]):
        zeroed = model(IDS).logits
        fresh = contextvars.Context().run(lambda: model(IDS).logits)
        copied = contextvars.copy_context().run(lambda: model(IDS).logits)
    assert not torch.allclose(zeroed, plain)
    torch.testing.assert_close(fresh, plain, rtol=0, atol=0)
    torch.testing.assert_close(copied, zeroed, rtol=0, atol=0)
    torch.testing.assert_close(model(IDS).logits, plain, rtol=0, atol=0)  # and none is left after the block


def test_the_cache_of_a_decoding_step_holds_the_new_positions_only():
    model = lm()
    with torch.no_grad():
        first = model(IDS[:, :5], use_cache=True)
        _, cache = model.run_with_cache(IDS[:, 5:6], cache=first.cache, names=lambda n: "blocks.0.attn" in n)
    assert cache["blocks.0.attn.hook_k"].shape == (2, 1, 2, 4) and cache["blocks.0.attn.hook_pattern"].shape[-1] == 6


@pytest.mark.parametrize(
    "old,new",
    [
        ("encoder.layers.0.self_attn.out_proj.weight", "encoder.blocks.0.attn.o_proj.weight"),
        ("encoder.layers.1.res_attn.norm.bias", "encoder.blocks.1.attn_norm.bias"),
        ("encoder.layers.1.ff.net.3.weight", "encoder.blocks.1.mlp.down.weight"),
        ("decoder.layers.2.cross_attn.out_proj.bias", "decoder.blocks.2.cross_attn.o_proj.bias"),
        ("decoder.layers.2.res_cross.norm.weight", "decoder.blocks.2.cross_norm.weight"),
        ("layers.3.mlp.gate.weight", "blocks.3.mlp.gate.weight"),
        ("norm.weight", "final_norm.weight"),
        ("encoder.embed_norm.weight", "encoder.embed_norm.weight"),
    ],
)
def test_the_names_of_files_written_before_the_one_core_are_mapped(old, new):
    assert today_name(old) == new


def test_a_state_dict_with_the_old_names_loads_into_every_family():
    for model in (classifier(), seq2seq(), lm(), lm(4, 4, activation="gelu", norm="layernorm")):
        today = model.state_dict()
        old = {}
        for key, value in today.items():  # today's names written back the old way
            key = key.replace("blocks.", "layers.").replace("final_norm.", "norm.")
            if not isinstance(model, CausalLM):
                key = key.replace(".attn.o_proj", ".self_attn.out_proj").replace(".attn.", ".self_attn.")
                key = key.replace(".cross_attn.o_proj", ".cross_attn.out_proj").replace(".mlp.up.", ".ff.net.0.")
                key = key.replace(".mlp.down.", ".ff.net.3.").replace(".attn_norm.", ".res_attn.norm.")
                key = key.replace(".cross_norm.", ".res_cross.norm.").replace(".mlp_norm.", ".res_ff.norm.")
            else:
                key = key.replace(".mlp.up.", ".mlp.net.0." if model.config.activation == "gelu" else ".mlp.up.")
                key = key.replace(".mlp.down.", ".mlp.net.3." if model.config.activation == "gelu" else ".mlp.down.")
            old[key] = value.clone() + 1.0
        fresh = type(model)(model.config)
        fresh.load_state_dict(old, strict=True)
        assert all(torch.equal(fresh.state_dict()[k], today[k] + 1.0) for k in today)


@pytest.mark.parametrize("name", ["sentiment", "sentiment-scratch", "translation", "lm"])
def test_the_bundled_models_points_add_up(name):
    """Each bundled model once, loaded from its shipped files (old parameter names): the pattern is the returned
    attention, the heads' results and the bias are the attention output, and an identity hook changes nothing."""
    from pathlib import Path

    from transformer import load_model

    folder = Path(__file__).resolve().parents[2] / "assets" / name
    cls = {"translation": Seq2SeqTransformer, "lm": CausalLM}.get(name, TransformerClassifier)
    model = load_model(cls, folder)
    ids = torch.tensor([[5, 9, 3, 17, 22, 8, 4, 30]])
    args = (ids, ids[:, :5]) if cls is Seq2SeqTransformer else (ids,)
    prefix = "decoder." if cls is Seq2SeqTransformer else ""
    last = len(model.decoder.blocks if prefix else model.blocks) - 1
    attn = f"{prefix}blocks.{last}.attn"
    out_name = f"{prefix}blocks.{last}.hook_attn_out"
    with torch.no_grad():
        out, cache = model.run_with_cache(*args, need_weights=True)
        _, plain = model.run_with_cache(*args, names=[out_name])  # through o_proj: hook_result not asked for
        same = model.run_with_hooks(*args, hooks=[(f"{prefix}blocks.0.hook_resid_pre", lambda x, n: x)]).logits
    maps = out.self_attentions if prefix else out.attentions
    torch.testing.assert_close(cache[f"{attn}.hook_pattern"], maps[last], rtol=0, atol=0)
    summed = cache[f"{attn}.hook_result"].sum(2) + model.get_submodule(attn).b_O
    torch.testing.assert_close(summed, plain[out_name], rtol=0, atol=1e-4)
    torch.testing.assert_close(same, model(*args).logits, rtol=0, atol=0)
