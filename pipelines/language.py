"""Which language a short text looks like, English or German, from the function words it uses.

Used to tell someone who typed English into the German -> English tab what happened, rather than only that the
sentence is unusual. Function words are frequent, short and differ between the two languages, so a handful of
them settles a sentence; a text with too few says nothing.
"""

import re

ENGLISH = frozenset(
    "the a an and is are was were be been of to with on at by for from this that these those it its he she they we "
    "you i my his her their our not but or as has have had do does did there what which who will would can could "
    "into over under while".split()
)
GERMAN = frozenset(
    "der die das den dem des ein eine einen einem einer und ist sind war waren mit auf bei für von zu zum zur "
    "nicht aber oder als hat haben hatte es er sie wir ihr ich du sein seine ihre im vom am ins über unter "
    "während wird werden kann".split()
)
WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def function_words(text: str) -> tuple[int, int]:
    """(English function words, German function words) in the text; words both languages share count for none."""
    words = [w.lower() for w in WORD.findall(text)]
    return sum(w in ENGLISH and w not in GERMAN for w in words), sum(w in GERMAN and w not in ENGLISH for w in words)


def looks_english(text: str, at_least: int = 2) -> bool:
    """True when the text uses at least `at_least` English function words and more than twice as many English
    as German ones ("A man rides a bike." yes; "Ein Mann fährt Fahrrad." no; "Hallo" no)."""
    english, german = function_words(text)
    return english >= at_least and english > 2 * german
