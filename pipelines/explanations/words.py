"""Grouping subword tokens into words, for word-level occlusion and for showing scores on words."""

import numpy as np

from pipelines.text import TokenSpan


def _joins(prev: TokenSpan, tok: TokenSpan) -> bool:
    """A piece continues the previous word when it overlaps it (byte-level pieces of one character, like an
    emoji, share that character's span), or when nothing lies between them and both sides are letters,
    digits or an apostrophe ("wasn" + "'" + "t", "recog" + "nises")."""
    if tok.end > tok.start and tok.start < prev.end:
        return True
    word_char = lambda c: c.isalnum() or c in "'’"  # noqa: E731
    return tok.start == prev.end and tok.end > tok.start and word_char(prev.text[-1:]) and word_char(tok.text[:1])


def word_ids(tokens: list[TokenSpan]) -> np.ndarray:
    """(T,) int: the index of the word each token belongs to (0, 0, 1, 2, 2, ...)."""
    out = np.zeros(len(tokens), dtype=np.int64)
    for i in range(1, len(tokens)):
        out[i] = out[i - 1] + (0 if tokens[i - 1].text and _joins(tokens[i - 1], tokens[i]) else 1)
    return out


def word_scores(scores: np.ndarray, words: np.ndarray) -> np.ndarray:
    """(T,) token scores -> (W,) word scores: the sum over a word's pieces (attributions add up)."""
    return np.bincount(words, weights=scores, minlength=int(words.max()) + 1 if len(words) else 0)
