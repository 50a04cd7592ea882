"""Our decoder-only model (transformer/causal_lm.py) and its decoding (transformer/generation.py): causal attention,
the key/value cache, head masks, greedy and sampled decoding, and the parts it is made of."""

import pytest
import torch

from transformer import CausalLM, CausalLMConfig, generate, lm_steps
from transformer.generation import next_token
from transformer.layers import RMSNorm


def tiny(**fields) -> CausalLM:
    torch.manual_seed(0)
    cfg = dict(vocab_size=50, d_model=32, n_heads=4, n_kv_heads=2, d_ff=48, n_layers=2, max_len=40) | fields
    return CausalLM(CausalLMConfig(**cfg)).eval()


IDS = torch.tensor([[1, 7, 9, 9, 23, 4, 17, 30, 8], [1, 12, 44, 3, 3, 3, 19, 6, 2]])


@pytest.mark.parametrize(
    "fields", [{}, {"positions": "learned", "norm": "layernorm", "activation": "gelu", "bias": True}]
)
def test_nothing_looks_ahead(fields):
    """Changing a later token changes no earlier logit, and no weight falls above the diagonal."""
    model = tiny(**fields)
    changed = IDS.clone()
    changed[:, 6] = 40
    with torch.no_grad():
        a, b = model(IDS, need_weights=True), model(changed)
    torch.testing.assert_close(a.logits[:, :6], b.logits[:, :6])
    assert not torch.allclose(a.logits[:, 6:], b.logits[:, 6:])
    for weights in a.attentions:
        assert weights.shape == (2, 4, 9, 9)
        assert torch.triu(weights, diagonal=1).abs().max() == 0
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 9))


def test_the_fast_path_equals_the_explicit_one():
    model = tiny()
    with torch.no_grad():
        torch.testing.assert_close(model(IDS).logits, model(IDS, need_weights=True).logits, atol=1e-5, rtol=0)


def test_cached_decoding_equals_the_full_pass():
    model = tiny()
    with torch.no_grad():
        full = model(IDS, need_weights=True)
        first = model(IDS[:, :5], use_cache=True)
        rest = model(IDS[:, 5:], cache=first.cache, use_cache=True, need_weights=True)
        one = model(IDS[:, 5:6], cache=first.cache, need_weights=True)
    torch.testing.assert_close(rest.logits, full.logits[:, 5:], atol=1e-5, rtol=0)
    torch.testing.assert_close(rest.attentions[1], full.attentions[1][:, :, 5:], atol=1e-6, rtol=0)
    torch.testing.assert_close(one.logits[:, 0], full.logits[:, 5], atol=1e-5, rtol=0)
    assert first.cache.self_kv[0][0].shape == (2, 2, 5, 8)  # the cache keeps the key/value heads only


def test_a_head_mask_switches_one_head_off_for_one_call():
    model = tiny()
    off = [torch.ones(4), torch.tensor([1.0, 0.0, 1.0, 1.0])]
    with torch.no_grad():
        base, masked, again = model(IDS), model(IDS, head_mask=off), model(IDS)
        per_row = model(IDS, head_mask=[torch.ones(2, 4), torch.tensor([[1.0, 1, 1, 1], [1, 0, 1, 1]])])
    assert not torch.allclose(base.logits, masked.logits)
    torch.testing.assert_close(base.logits, again.logits)
    torch.testing.assert_close(per_row.logits[0], base.logits[0])
    torch.testing.assert_close(per_row.logits[1], masked.logits[1])
    # switching off head 1 equals zeroing its slice of the output projection's input
    with torch.no_grad():
        model.blocks[1].attn.o_proj.weight[:, 8:16] = 0
        torch.testing.assert_close(model(IDS).logits, masked.logits, atol=1e-6, rtol=0)


@pytest.mark.parametrize("fields", [{"n_layers": 3}, {"n_layers": 3, "positions": "learned", "norm": "layernorm"}])
def test_forward_from_a_layer_equal_the_whole_pass(fields):
    """Run again from what block `layer` read, with a head mask from that layer on, the logits are the whole pass's
    with the same mask; last_only gives the last position's row alone."""
    model = tiny(**fields)
    off = torch.ones(3, 2, 4)
    off[1, 0, 2] = 0.0  # row 0: layer 1's head 2 off
    off[2, 1, 0] = 0.0  # row 1: layer 2's head 0 off
    with torch.no_grad():
        run, cache = model.run_with_cache(IDS, names=lambda n: n.endswith("hook_resid_pre"))
        hidden = [cache[f"blocks.{i}.hook_resid_pre"] for i in range(3)]
        masked = model(IDS, head_mask=off).logits  # (2, T, V)
        for layer in range(3):
            rows = off if layer <= 1 else torch.stack([torch.ones(2, 4), torch.ones(2, 4), off[2]])
            whole = model(IDS, head_mask=rows).logits
            torch.testing.assert_close(model.forward_from(layer, hidden[layer], rows).logits, whole)
            last = model.forward_from(layer, hidden[layer], rows, last_only=True).logits  # (2, 1, V)
            torch.testing.assert_close(last[:, -1], whole[:, -1], atol=1e-5, rtol=0)
        one = model.forward_from(2, hidden[2][:, :1], last_only=True).logits  # a one-token sequence
    torch.testing.assert_close(one[:, -1], run.logits[:, 0], atol=1e-5, rtol=0)
    assert not torch.allclose(masked[:, -1], run.logits[:, -1])


def test_longer_than_max_len_is_an_error():
    with pytest.raises(ValueError, match="longer than max_len 40"):
        tiny()(torch.ones(1, 41, dtype=torch.long))


def test_config_checks():
    with pytest.raises(ValueError, match="must divide n_heads"):
        CausalLMConfig(vocab_size=10, d_model=32, n_heads=4, n_kv_heads=3)
    with pytest.raises(ValueError, match="norm must be"):
        CausalLMConfig(vocab_size=10, norm="batchnorm")
    with pytest.raises(ValueError, match="positions must be one of"):
        CausalLMConfig(vocab_size=10, positions="alibi")
    with pytest.raises(ValueError, match="positions must be one of"):  # the encoder has no rotary positions
        from transformer import ClassifierConfig

        ClassifierConfig(vocab_size=10, positions="rotary")


def test_rmsnorm_has_unit_root_mean_square():
    norm = RMSNorm(16)
    y = norm(torch.randn(3, 16) * 7 + 2)
    torch.testing.assert_close(y.pow(2).mean(-1), torch.ones(3), atol=1e-4, rtol=0)


def test_save_and_load_round_trip(tmp_path):
    model = tiny()
    model.save_pretrained(tmp_path)
    again = CausalLM.from_pretrained(tmp_path)
    assert again.config == model.config
    with torch.no_grad():
        torch.testing.assert_close(again(IDS).logits, model(IDS).logits)


def test_greedy_decoding_is_the_argmax_of_full_passes():
    model = tiny()
    prompt = [1, 7, 9, 9]
    new = generate(model, prompt, 6, stop_ids=())
    ids = list(prompt)
    for _ in range(6):
        with torch.no_grad():
            ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
    assert new == ids[len(prompt) :]


def test_steps_carry_the_new_tokens_attention_rows():
    model = tiny()
    steps = list(lm_steps(model, [1, 7, 9], 3, need_weights=True, stop_ids=()))
    ids = [1, 7, 9] + [s.token for s in steps[:-1]]
    with torch.no_grad():
        full = model(torch.tensor([ids]), need_weights=True)
    for i, step in enumerate(steps):
        t = 3 + i  # the step's query sits at position t - 1 and sees t keys
        assert step.attentions[0].shape == (4, 1, t)
        torch.testing.assert_close(step.attentions[1][:, 0], full.attentions[1][0, :, t - 1, :t], atol=1e-6, rtol=0)


def test_decoding_stops_at_the_end_token():
    model = tiny()
    first = generate(model, [1, 7], 1, stop_ids=())[0]
    model.config.eos_id = first  # the end token is the model's: its first greedy token here
    assert generate(model, [1, 7], 10) == [first]
    assert len(generate(model, [1, 7], 10, stop_ids=())) == 10


def test_sampling_is_reproducible_by_seed():
    model = tiny()
    a = generate(model, [1, 7, 9], 8, temperature=1.5, seed=4, stop_ids=())
    b = generate(model, [1, 7, 9], 8, temperature=1.5, seed=4, stop_ids=())
    others = {tuple(generate(model, [1, 7, 9], 8, temperature=1.5, seed=s, stop_ids=())) for s in range(5, 10)}
    assert a == b
    assert len(others | {tuple(a)}) > 1


def test_top_p_keeps_the_smallest_set_that_reaches_it():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    g = torch.Generator().manual_seed(0)
    picks = {next_token(logits, 1.0, 0.7, g) for _ in range(200)}
    assert picks == {0, 1}  # 0.5 falls short of 0.7, 0.5 + 0.3 reaches it
    assert {next_token(logits, 1.0, 0.01, g) for _ in range(20)} == {0}
    assert next_token(logits, 0.0) == 0
