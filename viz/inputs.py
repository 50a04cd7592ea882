"""Checking what a user typed or pasted: length caps, empty input, control characters, markup, emoji."""

import re
import unicodedata
from dataclasses import dataclass, field

from pipelines.text import CONTROL_CHARS, clean_text

MAX_REVIEW_CHARS = 20_000
MAX_GERMAN_CHARS = 1_000

_TAG = re.compile(r"<\s*/?\s*[A-Za-z][^<>]*>")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)  # IMDB's line breaks: expected, not worth a notice


@dataclass
class CheckedText:
    """The text to run the model on (None when there is nothing to run), and what to tell the user."""

    text: str | None
    error: str | None = None
    notices: list[str] = field(default_factory=list)


def check_text(raw: object, max_chars: int, what: str) -> CheckedText:
    """Cut to max_chars, clean like the pipelines do, and explain anything unusual. Never raises."""
    text = raw if isinstance(raw, str) else ""
    notices = []
    if len(text) > max_chars:
        notices.append(
            f"Your {what} has {len(text):,} characters; only the first {max_chars:,} were used "
            f"(the app reads at most {max_chars:,})."
        )
        text = text[:max_chars]
    n_control = len(CONTROL_CHARS.findall(text))
    text = clean_text(text)
    if not text.strip():
        if not isinstance(raw, str) or not raw:
            return CheckedText(None, f"Please type or paste a {what} first, or pick one of the examples.")
        return CheckedText(
            None, f"The {what} is empty: it holds only spaces or invisible characters. Please type some words."
        )
    if n_control:
        notices.append(f"{n_control:,} control character{'s' if n_control > 1 else ''} replaced by spaces.")
    if _TAG.search(_BREAK.sub(" ", text)):
        notices.append("The text contains HTML-like tags: they are read as plain text and shown as text, never run.")
    if any(unicodedata.category(c) == "So" for c in text):
        notices.append("Emoji and symbols are read as several byte pieces each; the model saw few of them in training.")
    return CheckedText(text, None, notices)


def beam_width(decoding: object, beam_size: object, default: int = 4) -> int:
    """The beam size to decode with: 1 for greedy, else beam_size clamped to 1..10 (default when not a number)."""
    if decoding == "greedy":
        return 1
    try:
        return min(max(int(float(beam_size)), 1), 10)
    except (TypeError, ValueError, OverflowError):  # None, '', NaN, infinity
        return default
