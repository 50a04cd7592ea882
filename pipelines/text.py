"""Text handling shared by training, evaluation and the app, so all three see the same tokens."""

import re
import unicodedata

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
