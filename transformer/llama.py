"""Llama-architecture weights in our CausalLM, as nanoGPT's `GPT.from_pretrained` maps GPT-2's onto its modules.

A Llama layer is our pre-norm block with RMSNorm, grouped key/value heads, rotary positions over the two halves of each
head (`rotate_half`) and a SwiGLU feed-forward, no biases. The names are `transformers`' (LlamaForCausalLM); a GGUF file
is read into the same names outside this package (pipelines/models/gguf.py). tests/transformer/test_llama.py checks
logits, hidden states and every head's attention against `transformers`.
"""

import torch

from .config import CausalLMConfig
from .hub import CheckpointError, read_checkpoint, rename_tensors

# transformers' names for one layer's tensors -> ours (model.layers.N. / blocks.N. prefixed)
LAYER_NAMES = {
    "self_attn.q_proj": "attn.q_proj",
    "self_attn.k_proj": "attn.k_proj",
    "self_attn.v_proj": "attn.v_proj",
    "self_attn.o_proj": "attn.o_proj",
    "mlp.gate_proj": "mlp.gate",
    "mlp.up_proj": "mlp.up",
    "mlp.down_proj": "mlp.down",
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "mlp_norm",
}
TOP_NAMES = {"model.embed_tokens": "tok_emb", "model.norm": "final_norm", "lm_head": "lm_head"}
IGNORED = ("rotary_emb.inv_freq",)  # a buffer some checkpoints save


def rope_base(hf: dict) -> float:
    """RoPE's base: top-level `rope_theta` (configs written by transformers 4) or `rope_parameters` (5)."""
    params = hf.get("rope_parameters") or {}
    scaling = hf.get("rope_scaling") or ({} if params.get("rope_type", "default") == "default" else params)
    if scaling and scaling.get("rope_type", scaling.get("type", "default")) != "default":
        raise CheckpointError(f"unsupported RoPE scaling {scaling!r} (plain rotary positions only)")
    return float(params.get("rope_theta", hf.get("rope_theta", 10000.0)))


def llama_config(hf: dict, **overrides) -> CausalLMConfig:
    """Our CausalLMConfig for a Llama config.json (a dict)."""
    if hf.get("model_type") not in ("llama", None):
        raise CheckpointError(f"not a Llama checkpoint: model_type {hf.get('model_type')!r}")
    if hf.get("hidden_act", "silu") != "silu" or hf.get("attention_bias") or hf.get("mlp_bias"):
        raise CheckpointError("unsupported Llama variant (silu, no biases only)")
    n_heads = hf["num_attention_heads"]
    fields = dict(
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        n_heads=n_heads,
        n_kv_heads=hf.get("num_key_value_heads") or n_heads,
        head_dim=hf.get("head_dim") or hf["hidden_size"] // n_heads,
        d_ff=hf["intermediate_size"],
        n_layers=hf["num_hidden_layers"],
        max_len=hf.get("max_position_embeddings", 2048),
        layer_norm_eps=hf.get("rms_norm_eps", 1e-6),
        rope_base=rope_base(hf),
        tie_embeddings=bool(hf.get("tie_word_embeddings", False)),
        bos_id=hf.get("bos_token_id") if hf.get("bos_token_id") is not None else 1,
        eos_id=_first(hf.get("eos_token_id"), 2),
        pad_id=_first(hf.get("pad_token_id"), 0),
        dropout=0.0,
        attn_dropout=0.0,
    )
    return CausalLMConfig(**(fields | overrides))


def _first(value, default: int) -> int:
    """A token id that config.json may give as a list (several end tokens): the first."""
    if value is None:
        return default
    return int(value[0] if isinstance(value, list) else value)


def map_state_dict(llama: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A LlamaForCausalLM state dict -> ours."""
    kept = {k: v for k, v in llama.items() if not k.endswith(IGNORED)}
    return rename_tensors(kept, ("model.layers.", "blocks."), LAYER_NAMES, TOP_NAMES, "Llama")


def from_state(cls, hf: dict, llama: dict[str, torch.Tensor], source: str = "checkpoint"):
    """cls (CausalLM) built from a Llama config dict and a state dict with `transformers`' names, in eval mode."""
    with torch.device("meta"):  # no random weights made only to be replaced (1.6 s of SmolLM2's load)
        model = cls(llama_config(hf))
    state = map_state_dict(llama)
    own = model.state_dict()
    for key, tensor in state.items():
        if key not in own or own[key].shape != tensor.shape:
            raise CheckpointError(f"{source}: {key} {tuple(tensor.shape)} does not fit the model")
    if model.config.tie_embeddings:
        state.pop("lm_head.weight", None)  # one matrix: the embeddings
    missing, _ = model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False, assign=True)
    missing = [k for k in missing if not (k == "lm_head.weight" and model.config.tie_embeddings)]
    if missing:
        raise CheckpointError(f"{source}: no weights for {missing[:5]}")
    if model.config.tie_embeddings:
        model.lm_head.weight = model.tok_emb.weight  # assigning the embeddings untied them
    return model.eval()


def from_llama(cls, folder_or_repo_id: str, sha256: str | None = None):
    """cls (CausalLM) holding a Llama-architecture checkpoint (a folder or a Hub repo id)."""
    hf, state = read_checkpoint(folder_or_repo_id, sha256)
    return from_state(cls, hf, state, folder_or_repo_id)
