"""Text handling shared by training, evaluation and the app, so all three see the same tokens: cleaning, cutting, and
tokens with their place in the text (TokenSpan), special tokens around them included."""

import re
import unicodedata
from dataclasses import dataclass

HTML_BREAK = r"<br\s*/?>"  # IMDB's line breaks: layout, not words (the tokenizers read them as spaces)
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # what clean_text replaces by spaces


def clean_text(text: str) -> str:
    """Unicode NFC, control characters removed. Markup like IMDB's <br /> is handled by the tokenizer."""
    return CONTROL_CHARS.sub(" ", unicodedata.normalize("NFC", text))


def is_punctuation(token: str) -> bool:
    """True for a token made only of punctuation and symbols (Unicode categories P* and S*: ".", "«", "$", "+"),
    spaces aside: what the attention views hide and the head table counts as punctuation, one definition for both."""
    t = token.strip()
    return bool(t) and all(unicodedata.category(ch)[0] in "PS" for ch in t)


def head_tail(ids: list[int], max_len: int, head: int) -> list[int]:
    """Keep the first `head` and the last max_len - head ids of a long sequence.

    Reviews state their verdict at the start and, more often, at the end; the middle is plot.
    """
    if len(ids) <= max_len:
        return ids
    return ids[:head] + ids[len(ids) - (max_len - head) :]


def kept_positions(n: int, max_len: int, head: int) -> list[int]:
    """Which of n token positions head_tail keeps (to map attention back to character offsets)."""
    return head_tail(list(range(n)), max_len, head)


@dataclass
class TokenSpan:
    """One subword token and the characters of the input it covers (input[start:end])."""

    id: int
    text: str  # what the user typed for this token ('' for special tokens)
    start: int
    end: int
    special: str = ""  # a special token's name ("[CLS]", "[SEP]", "</s>"): what the views label it with


def wrap_spans(prefix: list[int], toks: list[TokenSpan], suffix: list[int], end: int, name) -> list[TokenSpan]:
    """Special tokens (ids) around a text's TokenSpans, as spans that cover no characters at its start and end;
    name(id) gives each its name ("[CLS]")."""
    before = [TokenSpan(i, "", 0, 0, name(i)) for i in prefix]
    return before + list(toks) + [TokenSpan(i, "", end, end, name(i)) for i in suffix]


class SpecialTokensAround:
    """An adapter whose tokenizer puts special tokens around a text's own: `prefix` and `suffix` ids, and
    `special_name(id)` for their names ("[CLS]")."""

    prefix: list[int]
    suffix: list[int]

    def special_name(self, token_id: int) -> str:
        raise NotImplementedError

    def wrap(self, ids: list[int]) -> list[int]:
        """The ids the model reads for the text's own ids: the special tokens around them, if any."""
        return [*self.prefix, *ids, *self.suffix]

    def wrap_spans(self, toks: list[TokenSpan], text: str) -> list[TokenSpan]:
        """The special tokens as spans that cover no characters, at the start and the end of the text."""
        return wrap_spans(self.prefix, toks, self.suffix, len(text), self.special_name)


def spans(encoding, text: str) -> list[TokenSpan]:
    """TokenSpans of a tokenizers Encoding over `text`."""
    return [TokenSpan(i, text[a:b], a, b) for i, (a, b) in zip(encoding.ids, encoding.offsets)]
