"""Short crops of the long training reviews (`--review-crops N`), labelled as the review they come from.

A review's verdict often sits in a sentence or two at its end ("The best part was the popcorn. Truly
unforgettable, and I mean that as a warning."), and in a 300-word review the other sentences decide the label
anyway, so a model trained on whole reviews and SST-2's mostly plain phrases never has to read such a verdict on
its own. A crop is 1 to `max_sentences` consecutive sentences from the review's end (`from_end` of the time) or
its start, at most `max_words` words: the label of the whole review is noisy for a crop (label smoothing helps),
and the held-out reviews stay whole, so validation still measures whole reviews.
"""

import random
import re

from pipelines.text import HTML_BREAK

# a sentence ends at . ! or ? (with closing quotes or brackets) before a space, or at IMDB's <br /> line breaks
SENTENCE_BREAK = re.compile(rf"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+|\s*(?:{HTML_BREAK}\s*)+")


def sentences(text: str) -> list[str]:
    """The text's sentences, in order, without empty ones."""
    return [s.strip() for s in SENTENCE_BREAK.split(text) if s and s.strip()]


def review_crop(
    text: str, rng: random.Random, max_sentences: int = 3, max_words: int = 80, from_end: float = 0.7
) -> str | None:
    """One crop of `text`, or None where the crop would be the whole text (a review of one or two sentences)."""
    parts = sentences(text)
    k = rng.randint(1, max_sentences)
    end = rng.random() < from_end
    picked = parts[-k:] if end else parts[:k]
    while len(picked) > 1 and sum(len(s.split()) for s in picked) > max_words:
        picked = picked[1:] if end else picked[:-1]  # drop the sentence farthest from the review's edge
    words = " ".join(picked).split()
    words = words[-max_words:] if end else words[:max_words]
    crop = " ".join(words)
    return None if not crop or crop == " ".join(" ".join(parts).split()) else crop  # (line breaks aside)


def review_crops(texts: list[str], labels: list[int], n: int, seed: int) -> tuple[list[str], list[int]]:
    """Up to `n` crops of each review (a seeded draw, the same for every run with this seed), each with its review's
    label; a crop drawn twice from one review is kept once."""
    rng = random.Random(seed)
    out_texts, out_labels = [], []
    for text, label in zip(texts, labels):
        seen = set()
        for _ in range(n):
            crop = review_crop(text, rng)
            if crop is not None and crop not in seen:
                seen.add(crop)
                out_texts.append(crop)
                out_labels.append(label)
    return out_texts, out_labels
