"""Llama weights in our CausalLM (transformer/llama.py, transformer/causal_lm.py): on a tiny random `transformers`
LlamaForCausalLM with grouped key/value heads, rotary positions and tied embeddings, our logits, hidden states and
every head's attention equal theirs; a wrong mapping (rotary halves paired the wrong way, key/value heads shared the
wrong way) is caught; the weights' sha256 is checked."""

import json
from types import SimpleNamespace

import pytest
import torch

from transformer import CausalLM, CheckpointError
from transformer import llama as llama_module
from transformer.embeddings import Rotary
from transformer.hub import file_sha256

transformers = pytest.importorskip("transformers")


def tiny_llama(folder, tie: bool = True, seed: int = 2):
    """A random LlamaForCausalLM (2 layers, 6 query heads sharing 2 key/value heads, d=48) with non-trivial norms,
    saved with save_pretrained (offline)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=97, hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=6,
        num_key_value_heads=2, max_position_embeddings=64, rope_theta=500.0, rms_norm_eps=1e-5,
        tie_word_embeddings=tie, bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.normal_(mean=1.0, std=0.3)
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    return tiny_llama(tmp_path_factory.mktemp("llama"))


def reference(folder, ids):
    from transformers import LlamaForCausalLM

    ref = LlamaForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        return ref(ids, output_attentions=True, output_hidden_states=True)


def ours(model, ids):
    """Our logits, attentions and hidden states (each block's hook_resid_pre, then hook_final) on ids."""
    names = [f"blocks.{i}.hook_resid_pre" for i in range(len(model.blocks))] + ["hook_final"]
    with torch.no_grad():
        out, cache = model.run_with_cache(ids, names=names, need_weights=True)
    return SimpleNamespace(logits=out.logits, attentions=out.attentions, hidden_states=[cache[n] for n in names])


IDS = torch.tensor([[1, 5, 17, 42, 8, 8, 90, 3, 11, 60, 2], [1, 64, 12, 12, 7, 33, 4, 81, 19, 5, 6]])


def assert_equal_to_transformers(folder, model):
    ref, out = reference(folder, IDS), ours(model, IDS)
    torch.testing.assert_close(out.logits, ref.logits, atol=1e-5, rtol=0)
    assert len(out.hidden_states) == len(ref.hidden_states) == 3
    for a, b in zip(out.hidden_states, ref.hidden_states):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    assert len(out.attentions) == 2
    for a, b in zip(out.attentions, ref.attentions):
        assert a.shape == (2, 6, 11, 11)  # every query head, not one per key/value head
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


def test_equal_to_transformers(llama_dir):
    model = CausalLM.from_llama(str(llama_dir))
    assert (model.config.n_heads, model.config.n_kv_heads, model.config.rope_base) == (6, 2, 500.0)
    assert model.lm_head.weight is model.tok_emb.weight
    assert_equal_to_transformers(llama_dir, model)
    # built on the meta device and given the checkpoint's tensors: nothing is left on it, nothing random was made
    assert not any(t.is_meta for t in [*model.parameters(), *model.buffers()])
    torch.testing.assert_close(model.rotary.inv_freq, model.rotary.frequencies())


def test_untied_output_layer(tmp_path):
    folder = tiny_llama(tmp_path, tie=False, seed=3)
    model = CausalLM.from_llama(str(folder))
    assert model.lm_head.weight is not model.tok_emb.weight
    assert_equal_to_transformers(folder, model)


def test_a_transformers_4_config_with_top_level_rope_theta(llama_dir, tmp_path):
    """Most configs on the Hub were written by transformers 4: rope_theta at the top, no rope_parameters."""
    hf = json.loads((llama_dir / "config.json").read_text())
    hf.pop("rope_parameters", None)
    hf["rope_theta"] = 500.0
    assert llama_module.llama_config(hf).rope_base == 500.0


def test_rotary_halves_paired_the_wrong_way_are_caught(llama_dir, monkeypatch):
    """Rotating neighbouring dims (GPT-NeoX's interleaved pairs) instead of the two halves changes every score."""

    def interleaved(x, cos, sin):
        x1, x2 = x[..., 0::2], x[..., 1::2]
        c, s = cos[..., 0::2], sin[..., 0::2]
        return torch.stack([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).flatten(-2)

    monkeypatch.setattr(Rotary, "rotate", staticmethod(interleaved))
    model = CausalLM.from_llama(str(llama_dir))
    ref, out = reference(llama_dir, IDS), ours(model, IDS)
    assert (out.attentions[0] - ref.attentions[0]).abs().max() > 1e-3
    assert (out.logits - ref.logits).abs().max() > 1e-3


def test_key_value_heads_shared_the_wrong_way_are_caught(llama_dir, monkeypatch):
    """Query head h reads key/value head h // (H / Hkv) (repeat_interleave), not h % Hkv (repeat)."""
    model = CausalLM.from_llama(str(llama_dir))
    monkeypatch.setattr(torch.Tensor, "repeat_interleave", lambda t, n, dim: t.repeat(1, n, 1, 1))
    ref, out = reference(llama_dir, IDS), ours(model, IDS)
    assert (out.attentions[0] - ref.attentions[0]).abs().max() > 1e-3


def test_a_misplaced_tensor_is_caught(llama_dir):
    """Gate and up projections swapped: the mapping loads, and the equality test would fail."""
    hf, state = llama_module.read_checkpoint(str(llama_dir))
    gate, up = "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"
    state[gate], state[up] = state[up], state[gate]
    model = llama_module.from_state(CausalLM, hf, state)
    assert (ours(model, IDS).logits - reference(llama_dir, IDS).logits).abs().max() > 1e-3


def test_unknown_tensor_and_wrong_shape_are_errors(llama_dir):
    hf, state = llama_module.read_checkpoint(str(llama_dir))
    with pytest.raises(CheckpointError, match="unknown Llama tensor"):
        llama_module.from_state(CausalLM, hf, {**state, "model.layers.0.self_attn.q_norm.weight": torch.ones(8)})
    bad = dict(state)
    bad["model.norm.weight"] = torch.ones(47)
    with pytest.raises(CheckpointError, match="does not fit"):
        llama_module.from_state(CausalLM, hf, bad)
    missing = {k: v for k, v in state.items() if k != "model.norm.weight"}
    with pytest.raises(CheckpointError, match="no weights for"):
        llama_module.from_state(CausalLM, hf, missing)


def test_other_architectures_and_rope_scaling_are_refused(llama_dir):
    hf = json.loads((llama_dir / "config.json").read_text())
    with pytest.raises(CheckpointError, match="not a Llama"):
        llama_module.llama_config({**hf, "model_type": "mistral"})
    with pytest.raises(CheckpointError, match="RoPE scaling"):
        llama_module.llama_config({**hf, "rope_scaling": {"rope_type": "linear", "factor": 2.0}})
    with pytest.raises(CheckpointError, match="biases"):
        llama_module.llama_config({**hf, "attention_bias": True})


def test_sha256_is_checked_before_loading(llama_dir):
    good = file_sha256(llama_dir / "model.safetensors")
    assert CausalLM.from_llama(str(llama_dir), sha256=good.upper()) is not None
    with pytest.raises(CheckpointError, match="expected 0000"):
        CausalLM.from_llama(str(llama_dir), sha256="0" * 64)


def test_an_unreachable_repo_id_is_a_clear_error():
    with pytest.raises(CheckpointError, match="cannot reach the Hugging Face Hub"):
        CausalLM.from_llama("HuggingFaceTB/SmolLM2-135M-Instruct")
