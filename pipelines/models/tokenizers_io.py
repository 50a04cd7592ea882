"""Training and loading the subword tokenizers saved next to each model."""

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

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
