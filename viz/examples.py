"""Example inputs: movie reviews (short and long, clear and mixed), Multi30k-style German captions, and
contrast pairs for the comparison."""

import json
from pathlib import Path

from pipelines.tasks import LM, SENTIMENT, TRANSLATION

LONG_REVIEW = """\
I went into this film knowing almost nothing about it except that it was a small, slow science-fiction \
drama about a lighthouse keeper, and I came out genuinely moved. The premise is simple: after a storm cuts \
off a remote island, the keeper starts receiving radio messages that seem to come from a ship that sank \
forty years earlier. What could have been a cheap ghost story turns into a patient, thoughtful meditation \
on grief and memory.

The lead performance is extraordinary. With very little dialogue, she carries almost every scene, and the \
way her face changes when she finally recognises one of the voices on the radio is one of the best moments \
I have seen in a cinema this year. The supporting cast is smaller but solid, especially the old fisherman \
who brings supplies and gossip once a week.

Visually the film is gorgeous. The grey sea, the rain on the windows and the constant turning of the lamp \
create an atmosphere that is both beautiful and oppressive. The sound design deserves special praise: the \
crackle of the radio becomes almost a character of its own.

That said, the film is not without problems. The second act drags, with too many scenes of the keeper \
walking along the cliffs that add nothing to the story. A subplot about a visiting inspector is introduced \
and then simply forgotten. Some viewers will also find the ending frustratingly open, since the script \
refuses to explain what really happened.

Still, these are small complaints about a film that trusts its audience and takes real risks. It is not \
for everyone, and if you want action or clear answers you should look elsewhere. But if you are willing to \
slow down and listen, this is a haunting, intelligent and deeply human piece of work. I will be thinking \
about it for weeks."""

# (label shown on the example button, review)
REVIEWS: list[tuple[str, str]] = [
    (
        "Short, positive",
        "A warm, funny and beautifully acted film. The two leads have real chemistry, the script never talks "
        "down to its audience, and the final scene left the whole theatre smiling. I would happily watch it again.",
    ),
    (
        "Short, negative",
        "Two hours of my life I will never get back. The plot makes no sense, the dialogue is wooden and the "
        "jokes fall flat. Even the usually reliable lead looks bored throughout. Avoid.",
    ),
    (
        "Mixed",
        "The cinematography is stunning and the score is lovely, but the story drags badly in the middle and "
        "the ending feels rushed. Worth seeing once for the visuals, not for the script.",
    ),
    (
        "Negation",
        "I fully expected to hate this sequel, but it was not bad at all. It is no masterpiece, yet it is far "
        "funnier and smarter than the first one, and the villain is not boring for once.",
    ),
    (
        "Sarcastic",
        "What a treat: a thriller with no thrills, a romance with no chemistry and a twist you can see coming "
        "from the opening credits. The best part was the popcorn. Truly unforgettable, and I mean that as a warning.",
    ),
    ("Sentence, positive", "A quiet, beautifully acted film that stays with you."),
    ("Sentence, negation", "The movie was not good at all."),
    ("Sentence, contrast", "Great cast, but a hollow story."),
    ("Sentence, 'yet'", "It is long, yet never boring."),
    ("Long (about 300 words)", LONG_REVIEW),
]

# What a reader calls each example review (the "but" clause decides "Mixed"). The app says so when the model
# disagrees on one of them, and `python -m training.contrast` counts how many a model gets right.
REVIEW_LABELS: dict[str, str] = {
    "Short, positive": "positive",
    "Short, negative": "negative",
    "Mixed": "negative",
    "Negation": "positive",
    "Sarcastic": "negative",
    "Sentence, positive": "positive",
    "Sentence, negation": "negative",
    "Sentence, contrast": "negative",
    "Sentence, 'yet'": "positive",
    "Long (about 300 words)": "positive",
}


def built_in_example(text: str) -> tuple[str, str] | None:
    """(name, the label a reader gives it) when `text` is one of the example reviews (spacing aside), else None."""
    wanted = " ".join(text.split())
    for name, review in REVIEWS:
        if " ".join(review.split()) == wanted:
            return name, REVIEW_LABELS[name]
    return None


GERMAN: list[str] = [
    "Ein Mann in einem blauen Hemd fährt mit dem Fahrrad die Straße entlang.",
    "Zwei kleine Kinder spielen am Strand im Sand.",
    "Eine Frau mit einem roten Hut verkauft Obst auf einem Markt.",
    "Ein brauner Hund rennt mit einem Stock im Maul über die Wiese.",
    "Eine Gruppe von Menschen steht vor einem großen Gebäude und wartet.",
    "Ein junger Mann in einer schwarzen Jacke spielt auf einer Bühne Gitarre.",
    "Ein Mädchen in einem rosa Kleid springt in einen Pool.",
]

# What each tab opens on when the address is not a link (app.build_demo(landing=True)): the sentence whose misreading
# by the first model started the pre-trained one (issue 32), and the first German example.
# The next-word tab's examples: (button label, prompt, through the chat template). The random words written twice
# show induction heads at work: the second time, each word is read off the token after its first copy.
LM_EXAMPLES: list[tuple[str, str, bool]] = [
    ("A repeated name", "Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say that they were "
     "perfectly normal, thank you very much. Mr. Dursley was the director of a firm. Mr.", False),
    ("Random words, twice (induction)", "lamp violet seven harbor quietly mango ribbon planet cold dancer. "
     "lamp violet seven harbor quietly mango ribbon", False),
    ("A review opening", "This movie was", False),
    ("A question (chat template, instruct model)", "What is the capital of France?", True),
]  # fmt: skip
# The Next word tab's compare pairs (first prompt, second, button label): one word changed, the continuations and the
# attention over the words both share compared.
_WORDS = "dog tree car book lamp door cup hat", "sun box pen key bed map egg fan"  # one token each, for induction
PATCHING_PAIRS: dict[str, tuple[str, str]] = {
    "ioi": (  # the indirect object (Wang et al. 2022): who receives the drink
        "When Mary and John went to the store, John gave a drink to",
        "When Mary and John went to the store, Mary gave a drink to",
    ),
    "fact": ("The Eiffel Tower is in the city of", "The Colosseum is in the city of"),  # a recalled fact
    "induction": (  # a repeated sequence continued (Olsson et al. 2022), against the same words after other ones
        f"{_WORDS[0]} {' '.join(_WORDS[0].split()[:4])}",
        f"{_WORDS[1]} {' '.join(_WORDS[0].split()[:4])}",
    ),
}
LM_PAIRS: list[tuple[str, str, str]] = [
    (*PATCHING_PAIRS["ioi"], "indirect object: John → Mary gave"),
    (*PATCHING_PAIRS["fact"], "fact: Eiffel Tower → Colosseum"),
    (*PATCHING_PAIRS["induction"], "induction: a repeat → none"),
    ("This movie was great, and", "This movie was terrible, and", "great → terrible"),
    ("The capital of France is", "The capital of Germany is", "France → Germany"),
    ("lamp violet seven harbor. lamp violet", "lamp violet seven harbor. lamp", "a shorter repeat"),
]
LANDING: dict[str, str] = {  # task name (pipelines.tasks) -> the input its tab opens on
    SENTIMENT.name: "Not bad at all, I actually enjoyed it.",
    TRANSLATION.name: GERMAN[0],
    LM.name: LM_EXAMPLES[0][1],
}

# Fixed inputs for the latency benchmark: a ~300-word review and a 15-word German sentence.
BENCH_REVIEW = LONG_REVIEW
BENCH_SENTENCE = LANDING[SENTIMENT.name]  # the one-sentence review of the latency budget
BENCH_GERMAN = "Ein älterer Mann mit grauem Bart sitzt auf einer Bank und liest eine alte Zeitung."

# One-click contrast pairs for the comparison (first, second, what changed): the hand-made contrast set, which also
# measures the sentiment models (training.contrast). It lives with the app, so the Space carries it.
CONTRAST_FILE = Path(__file__).resolve().parent / "data" / "contrast_pairs.jsonl"


class ContrastSetError(ValueError):
    """The contrast set could not be read; the message names the file and why (the app says so, no stand-in)."""


def shorten(text: str, limit: int = 40) -> str:
    """The text cut to at most `limit` characters at a word boundary, with '…' when anything was cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] if " " in text[: limit - 1] else text[: limit - 1]
    return cut.rstrip(" ,;:.-") + "…"


def contrast_pairs(path: Path = CONTRAST_FILE, limit: int = 12) -> list[tuple[str, str, str]]:
    """(first review, second review, button label) pairs of the hand-made contrast set: one of each kind first, then
    the rest, up to `limit`. ContrastSetError when the file is missing, unreadable or holds no pair."""
    try:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        pairs = [(r["a"], r["b"], str(r.get("kind") or "pair")) for r in rows if r.get("a") and r.get("b")]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ContrastSetError(f"the contrast set {path.name} could not be read ({type(e).__name__}: {e})") from e
    if not pairs:
        raise ContrastSetError(f"the contrast set {path.name} holds no pair")
    first_of_kind: dict[str, tuple[str, str, str]] = {}
    for pair in pairs:
        first_of_kind.setdefault(pair[2], pair)
    firsts = list(first_of_kind.values())
    return (firsts + [p for p in pairs if p not in firsts])[:limit]
