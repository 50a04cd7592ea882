"""Training and loading the subword tokenizers saved next to each model."""

from collections.abc import Iterable
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from pipelines.text import HTML_BREAK

SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]  # ids 0, 1, 2, 3 = pad, bos, eos, unk
PAD, BOS, EOS, UNK = range(4)


def train_bpe(texts: Iterable[str], vocab_size: int, lowercase: bool, strip_html_breaks: bool) -> Tokenizer:
    """A byte-level BPE tokenizer (no unknown characters; decodes back to normal text)."""
    norm = [normalizers.NFC()]
    if strip_html_breaks:
        # IMDB reviews carry <br /> tags: they are layout, not words. Replaced in the normalizer so the
        # character offsets still point into the raw text the user typed.
        norm.append(normalizers.Replace(Regex(HTML_BREAK), " "))
    norm.append(normalizers.Replace(Regex(r"\s+"), " "))  # runs of spaces would each become a token
    if lowercase:
        norm.append(normalizers.Lowercase())
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence(norm)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


# The special tokens' names by role, for our BPE vocabularies and for BERT's WordPiece (a model started from BERT
# weights keeps BERT's vocabulary): save_tokenizer names the set the vocabulary holds.
SPECIAL_NAMES = (
    {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
    {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]"},
)


def unknown_token(tokenizer) -> tuple[int | None, str | None]:
    """(id, text) of the token a tokenizer reads what its vocabulary lacks as (BERT's [UNK]); (None, None) when it
    has none. A `tokenizers.Tokenizer`, a transformers tokenizer, or a wrapper holding one as `.tokenizer`. Our
    byte-level BPE has one (<unk>) but never needs it: every byte is in its vocabulary."""
    inner = getattr(tokenizer, "tokenizer", None)
    if inner is not None and inner is not tokenizer:
        return unknown_token(inner)
    if isinstance(getattr(tokenizer, "unk_token_id", None), int):  # transformers
        return tokenizer.unk_token_id, tokenizer.unk_token
    text = getattr(getattr(tokenizer, "model", None), "unk_token", None)
    token_id = tokenizer.token_to_id(text) if text and hasattr(tokenizer, "token_to_id") else None
    return (token_id, text) if token_id is not None else (None, None)  # not in the vocabulary: never produced


def special_ids(tok: Tokenizer) -> tuple[list[int], list[int]]:
    """(ids before, ids after) a text's own that the tokenizer's post-processor adds: BERT's [CLS] ... [SEP], none
    for our byte-level BPE."""
    bare, full = tok.encode("a", add_special_tokens=False).ids, tok.encode("a").ids
    for i in range(len(full) - len(bare) + 1):
        if full[i : i + len(bare)] == bare:
            return list(full[:i]), list(full[i + len(bare) :])
    return [], []


def save_tokenizer(tok: Tokenizer, folder: str | Path, model_max_length: int) -> None:
    """Save as a transformers fast tokenizer (tokenizer.json + tokenizer_config.json)."""
    from transformers import PreTrainedTokenizerFast

    vocab = tok.get_vocab()
    names = next((n for n in SPECIAL_NAMES if all(t in vocab for t in n.values())), SPECIAL_NAMES[0])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=model_max_length, **names)
    fast.save_pretrained(str(folder))


def byte_alphabet() -> dict[int, str]:
    """GPT-2's byte -> character table of byte-level BPE: the printable bytes stand for themselves, the others
    (control characters, space, ...) for the characters from U+0100 on, in byte order."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in kept]
    return {b: chr(b) for b in kept} | {b: chr(256 + i) for i, b in enumerate(moved)}


def byte_level_bpe(
    tokens: list[str],
    merges: list[str],
    token_types: list[int] | None = None,
    add_bos: str | None = None,
    split_numerals: bool = False,
) -> Tokenizer:
    """A byte-level BPE tokenizer (GPT-2's; SmolLM2's) from a vocabulary in id order and its merges ("a b", best
    first), as a GGUF file stores them and as `transformers`' GGUF conversion builds it: a token spelled outside the
    byte alphabet is spelled in it; token_types (llama.cpp's: 3 control, 4 user-defined) make the control tokens
    special added tokens and the user-defined ones plain added tokens (matched whole in a text); add_bos: a start
    token the post-processor puts before every text; split_numerals: every numeral (Unicode's N categories, "٣", "½"
    too) a piece of its own before the byte-level split, as SmolLM2's own tokenizer does (and llama.cpp for its
    "smollm" pre-tokenizer; `transformers`' GGUF conversion does not)."""
    spelling = byte_alphabet()
    alphabet = set(spelling.values())
    respell = lambda t: t if set(t) <= alphabet else "".join(spelling[b] for b in t.encode("utf-8"))  # noqa: E731
    vocab = {respell(t): i for i, t in enumerate(tokens)}
    pairs = [tuple(m.split(" ")) for m in merges]
    tok = Tokenizer(models.BPE(vocab, pairs, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    numerals = [pre_tokenizers.Digits(individual_digits=True)] if split_numerals else []
    tok.pre_tokenizer = pre_tokenizers.Sequence([*numerals, byte_level]) if numerals else byte_level
    tok.decoder = decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    bos = (f"{add_bos}:0 ", f"{add_bos}:1 ") if add_bos else ("", "")
    specials = [(add_bos, vocab[add_bos])] if add_bos else []
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos[0]}$A:0", pair=f"{bos[0]}$A:0 {bos[1]}$B:1", special_tokens=specials
    )
    typed = list(zip(tokens, token_types or []))
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t, k in typed if k == 3 and t in vocab])
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t, k in typed if k == 4 and t in vocab])
    return tok
