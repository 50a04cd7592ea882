"""Constructions a sentiment model is measured to misread, found in a text.

`python -m training.contrast` scores a model on minimal pairs of several kinds ("good" / "not good", which
clause of a "but" decides, ...), and metrics.json records, per kind, how many pairs the model gets right on
both sides. A text that holds a construction of a kind the model gets right on fewer than `WEAK_BELOW` of its
pairs has a WeakSpot: the words that hold it and that measured score, so that an answer that turns on a
negation can say how often this model reads negation right. Only kinds with a plain surface cue are looked
for (negation, "but", "yet"); sarcasm, hedges and intensifiers are not. A model without contrast scores
(say, a transformers model as downloaded) has none. Only short texts are looked at (`SHORT_WORDS`): the pairs
are single sentences, and in a long review, which nearly always holds a "not" or a "but", one such word rarely
decides (there the test-set accuracy is the measure).
"""

import re
from dataclasses import dataclass

WEAK_BELOW = 0.8  # a kind is weak when fewer than this share of its pairs flip with their label
SHORT_WORDS = 40  # texts of at most this many words are looked at


@dataclass(frozen=True)
class Construction:
    kind: str  # the contrast set's kind (viz/data/contrast_pairs.jsonl)
    name: str  # in plain words, for a notice
    cue: re.Pattern  # the words that hold it


def _words(*words: str) -> re.Pattern:
    return re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)


CONSTRUCTIONS = (
    Construction(
        "negation",
        "negation",
        # "n't" as in "didn't", "isn't", "can't", with a straight or a curly apostrophe
        re.compile(
            r"\b(?:not|no|never|nothing|none|nobody|nowhere|neither|nor|without|hardly|barely|cannot)\b"
            r"|\b\w+n[’']t\b",
            re.IGNORECASE,
        ),
    ),
    Construction("but", 'contrast with "but"', _words("but", "however", "although", "though")),
    Construction("yet", 'contrast with "yet"', _words("yet")),
)


@dataclass(frozen=True)
class WeakSpot:
    kind: str
    name: str  # the construction in plain words
    words: tuple[str, ...]  # the words of the text that hold it, lowercased, each once, in order
    flipped: int  # contrast pairs of this kind the model gets right on both sides
    pairs: int  # contrast pairs of this kind


def contrast_scores(metrics: dict) -> dict[str, tuple[int, int]]:
    """{kind: (pairs flipped, pairs)} from a metrics.json dict (its "contrast" entry, as training.ship writes
    it); {} when it has none or it is not in that shape."""
    by_kind = metrics.get("contrast", {}).get("by_kind", {}) if isinstance(metrics, dict) else {}
    scores = {}
    for kind, entry in by_kind.items() if isinstance(by_kind, dict) else ():
        try:
            flipped, pairs = int(entry["flipped"]), int(entry["pairs"])
        except (KeyError, TypeError, ValueError):
            continue
        if 0 <= flipped <= pairs and pairs > 0:
            scores[kind] = (flipped, pairs)
    return scores


def find_weak_spots(
    text: str, scores: dict[str, tuple[int, int]], below: float = WEAK_BELOW, max_words: int = SHORT_WORDS
) -> list[WeakSpot]:
    """The constructions in a text of at most `max_words` words whose kind the model flips on fewer than `below`
    of its pairs."""
    spots = []
    if len(text.split()) > max_words:
        return spots
    for c in CONSTRUCTIONS:
        if c.kind not in scores:
            continue
        flipped, pairs = scores[c.kind]
        if flipped >= below * pairs:
            continue
        words = tuple(dict.fromkeys(m.group(0).lower().replace("’", "'") for m in c.cue.finditer(text)))
        if words:
            spots.append(WeakSpot(c.kind, c.name, words, flipped, pairs))
    return spots
