"""Checking what a user typed or pasted: length caps, empty input, invisible and control characters,
lone surrogates, markup, emoji, and numbers sent by API clients."""

import math
import re
import unicodedata
from dataclasses import dataclass, field

from pipelines.text import CONTROL_CHARS, HTML_BREAK, clean_text

MAX_REVIEW_CHARS = 20_000
MAX_GERMAN_CHARS = 1_000
MAX_PROMPT_CHARS = 2_000  # a prompt: the models read at most a few hundred tokens (ours 256, with the new ones)

_SURROGATE = re.compile(r"[\ud800-\udfff]")
_TAG = re.compile(r"<\s*/?\s*[A-Za-z][^<>]*>")
_BREAK = re.compile(HTML_BREAK, re.IGNORECASE)  # IMDB's line breaks: expected, not worth a notice
# Characters that draw nothing although Unicode calls them letters or symbols (fillers, a blank pattern).
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5")
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})


@dataclass
class CheckedText:
    """The text to run the model on (None when there is nothing to run), and what to tell the user."""

    text: str | None
    error: str | None = None
    notices: list[str] = field(default_factory=list)


def plural(n: int, word: str) -> str:
    """'1 token', '2 tokens', '1,234 tokens'."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def is_visible(c: str) -> bool:
    """False for whitespace, control and format characters (zero-width space, BOM, soft hyphen...) and fillers."""
    return not c.isspace() and c not in _BLANK_LETTERS and unicodedata.category(c) not in _INVISIBLE_CATEGORIES


def fix_surrogates(text: str) -> tuple[str, int]:
    """Join surrogate pairs into their character and replace lone surrogates (not valid text) by U+FFFD."""
    n_surrogates = len(_SURROGATE.findall(text))
    if not n_surrogates:
        return text, 0
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    n_pairs = len(text) - len(fixed)  # each joined pair is one character shorter
    return fixed, n_surrogates - 2 * n_pairs


def kind_of(value: object) -> str:
    """What an API client sent, in words (never a Python repr)."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "nothing" if value is None else "a value of another kind"


def _word_end(text: str, limit: int, look_back: int = 200) -> int:
    """Where to cut `text` at most `limit` characters in: at the last space within `look_back` of the limit, so that
    no word is cut in two (a review cut mid-word gave 'Th' as the word the model looked at most); at the limit when
    there is none, as in a text without spaces."""
    if text[limit].isspace() or text[limit - 1].isspace():
        return limit
    space = max(text.rfind(c, max(0, limit - look_back), limit) for c in (" ", "\n", "\t"))
    return space if space > 0 else limit


def check_text(raw: object, max_chars: int, what: str) -> CheckedText:
    """Cut to max_chars, clean like the pipelines do, and explain anything unusual. Never raises.
    Anything but a string (an API client's number, list or object) is refused with a message."""
    if raw is not None and not isinstance(raw, str):
        return CheckedText(None, f"The {what} must be text (a string); this request sent {kind_of(raw)}.")
    text = raw if isinstance(raw, str) else ""
    notices = []
    if len(text) > max_chars:
        kept = _word_end(text, max_chars)
        notices.append(
            f"Your {what} has {len(text):,} characters; only the first {kept:,} were used "
            f"(the app reads at most {max_chars:,}, cut at the end of a word)."
        )
        text = text[:kept]
    text, n_lone = fix_surrogates(text)
    n_control = len(CONTROL_CHARS.findall(text))
    text = clean_text(text)
    if not any(is_visible(c) for c in text):
        if not isinstance(raw, str) or not raw:
            return CheckedText(None, f"Please type or paste a {what} first, or pick one of the examples.")
        return CheckedText(
            None, f"The {what} is empty: it holds only spaces or invisible characters. Please type some words."
        )
    if n_lone:
        notices.append(f"{plural(n_lone, 'broken character')} (not valid Unicode) replaced by �.")
    if n_control:
        notices.append(f"{plural(n_control, 'control character')} replaced by spaces.")
    if _TAG.search(_BREAK.sub(" ", text)):
        notices.append("The text contains HTML-like tags: they are read as plain text and shown as text, never run.")
    return CheckedText(text, None, notices)  # what the model's vocabulary makes of symbols: notices.vocabulary_notice


def to_int(value: object, default: int) -> int:
    """An int from whatever an API client sent (int, float, numeric string); default for NaN, inf or junk."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return int(number) if math.isfinite(number) else default


def clamp(value: object, low: int, high: int, default: int) -> int:
    return min(max(to_int(value, default), low), high)


def step_chosen(value: object, n_steps: int | None = None, default: object = None) -> int:
    """The library's step (from 0) of a step slider's value: the page counts steps from 1, and this is where the two
    counts meet (step_shown the other way). Out of range: the nearest of the n_steps; not a number: `default` (a
    slider value), else the first."""
    high = max(n_steps, 1) if n_steps is not None else to_int(value, 1)  # no number of steps: no upper bound
    return clamp(value, 1, max(high, 1), to_int(default, 1)) - 1


def step_shown(step: int) -> int:
    """A library step (from 0) as the page labels it (from 1)."""
    return step + 1


def layer_head(n_layers: int, n_heads: int, layer, head) -> tuple[int, int]:
    """Clamp layer and head choices (ints, or strings from an API client) into range."""
    return clamp(layer, 0, n_layers - 1, 0), clamp(head, 0, n_heads - 1, 0)


def clamp_layer_head(pipe, layer, head) -> tuple[int, int]:
    """Layer and head choices clamped into this model's range (another model may have fewer)."""
    return layer_head(pipe.n_layers, pipe.n_heads, layer, head)


MAX_BEAM = 8  # the slider's maximum; API clients are held to it too
# Each tab's decoding choices (the radio, the API's and a link's), the default first where the tab has a fixed one:
# the translator starts on what its model was evaluated with (viz.translation.handlers.default_decoding).
TRANSLATION_DECODINGS = ("beam search", "greedy")
LM_DECODINGS = ("greedy", "sampled")
MAX_TEMPERATURE = 5.0  # the most a client may ask for (the Next word tab's slider may offer less)
MAX_SEED = 2**31 - 1


def whole_number(value: object) -> int | None:
    """An int from an int, a whole float or a numeric string; None for anything else (NaN, infinity, 2.5, true,
    lists...)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def decoding_options(decoding: object, beam_size: object, default_beam: int) -> tuple[int | None, str | None]:
    """(beam size to decode with, None) from what an API client sent, or (None, the message) for values the app
    does not take. null (or a value left out) means the default: beam search with default_beam beams (greedy
    when that is 1)."""
    if isinstance(decoding, str):
        decoding = decoding.strip().lower()
    if decoding is not None and decoding not in TRANSLATION_DECODINGS:
        sent = kind_of(decoding)
        return None, f"Decoding must be “beam search” or “greedy”; this request sent {sent} that is neither."
    if decoding == "greedy":
        return 1, None
    if beam_size is None:
        return max(1, min(default_beam, MAX_BEAM)), None
    beam = whole_number(beam_size)
    if beam is None or not 1 <= beam <= MAX_BEAM:
        what = kind_of(beam_size) if beam is None else "a number out of range"
        return None, f"The beam size must be a whole number from 1 to {MAX_BEAM}; this request sent {what}."
    return beam, None


def beam_width(decoding: object, beam_size: object, default: int = 4) -> int:
    """The beam size to decode with: 1 for greedy, else beam_size clamped to 1..MAX_BEAM (default when not a
    number: NaN, infinity, None, junk from an API client)."""
    if decoding == "greedy":
        return 1
    return clamp(beam_size, 1, MAX_BEAM, default)
