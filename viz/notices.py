"""Plain-words confidence and out-of-domain notices for the status lines (the numbers come from pipelines/)."""

import math
import unicodedata

from pipelines.models.snapshots import is_snapshot
from pipelines.models.tokenizers_io import unknown_token
from pipelines.trust.calibration import confidence_words
from pipelines.trust.domain import looks_english

from .examples import built_in_example

NO_WORDS = "The model found no words to read in this text."
SENTIMENT_OUT_OF_DOMAIN = "This does not look like an English review."
LOOKS_ENGLISH = "This looks like English: the model translates German into English. Try a German sentence."
TRANSLATION_OUT_OF_DOMAIN = (
    "This sentence is unlike the image captions this model learned from; expect a poor translation."
)


DOMAIN_OFF = (
    "The out-of-domain check is off for this model: it has no out-of-domain statistics "
    "(`python -m training.calibrate` fits them on held-out in-domain data)."
)


def status(lines: list[str], error: str | None = None) -> str:
    """Markdown for a run's status line: the error or the first line, then one bullet per further line."""
    first, rest = (f"⚠️ {error}", lines) if error else (lines[0], lines[1:])
    return "\n".join([first, *(f"- {line}" for line in rest)])


def domain_note(pipe) -> str | None:
    """A note that the out-of-domain notice cannot show, for a model without fitted statistics (a transformers
    model as downloaded); None when the check is on, and for a training snapshot (the registry's `snapshot`), whose
    status says the check is the trained model's (viz.models.training_step.noted)."""
    if is_snapshot(getattr(pipe, "revision", None)):
        return None
    return DOMAIN_OFF if getattr(pipe, "domain", False) is None else None


def sentiment_summary(label: str, confidence: float, n_tokens: int) -> str:
    """'**positive** (83.4%) · fairly sure · 40 tokens read': the calibrated probability, also in words."""
    from .inputs import plural

    return f"**{label}** ({confidence:.1%}) · {confidence_words(confidence)} · {plural(n_tokens, 'token')} read"


# Why an input looked unlike the training data, by the signal that made it least typical (pipelines.trust.domain)
DOMAIN_REASONS = {
    "words": "its words are ones movie reviews use rarely",
    "piece_length": "it falls apart into short word pieces, as another language or code does",
    "repeats": "one word piece makes up most of it",
}
TRANSLATION_REASONS = {
    "words": "its words are ones the captions use rarely",
    "output_logprob": "the model was unsure of its own English words",
    "repeats": "one word piece makes up most of it",
}


def _result_why(reasons: dict, result, held_out: str) -> str:
    """Why a flagged result looked unusual, by its least typical signal and its domain score: ' Its words are ...;
    only 0.1% of the held-out ... looked as unusual.' ('' for no known reason)."""
    why = reasons.get(getattr(result, "domain_reason", None) or "")
    if not why:
        return ""
    score = getattr(result, "domain_score", None)
    if score is None:
        how = ""
    elif score <= 0:
        how = f"; none of the held-out {held_out} looked as unusual"
    else:
        how = f"; only {score:.1%} of the held-out {held_out} looked as unusual"
    return f" {why[0].upper()}{why[1:]}{how}."


def sentiment_notice(result) -> str | None:
    """The out-of-domain notice: why (the result's least typical signal) and how unusual, by the measured share
    of held-out reviews and sentences that looked at most as typical (the domain score)."""
    if not getattr(result, "out_of_domain", False):
        return None
    detail = _result_why(DOMAIN_REASONS, result, "reviews and sentences")
    return (
        f"⚠️ **{SENTIMENT_OUT_OF_DOMAIN}**{detail} The model only knows English movie reviews, so its answer here "
        "means little, however sure it sounds."
    )


def example_notice(text: str, label: str) -> str | None:
    """For a built-in example the model gets wrong: what a reader would say, so that nobody takes the views
    below for an explanation of a right answer. None for any other text, or when the model agrees."""
    example = built_in_example(text)
    if example is None or example[1] == label:
        return None
    name, expected = example
    return (
        f'⚠️ **The model gets this example wrong**: a reader calls "{name}" **{expected}**. The views below '
        "show how it reached its wrong answer."
    )


def weak_spot_notice(spots) -> str | None:
    """For a review that holds a construction the model is measured to misread (pipelines/trust/weak_spots.py): which,
    the words, and how often the model reads minimal pairs of that kind right. None when there is none."""
    if not spots:
        return None
    quoted = [", ".join(f'"{w}"' for w in s.words) for s in spots]
    what = " and ".join(f"{s.name} ({words})" for s, words in zip(spots, quoted))
    scores = " and ".join(f"{s.flipped} of {s.pairs}" for s in spots)
    kinds = "that kind" if len(spots) == 1 else "those kinds"
    return (
        f"⚠️ **This model often misreads {what}**: on minimal pairs of {kinds} (the contrast set) it gets both "
        f"sides right in only {scores}. **Compare two reviews** below shows what such a word changes."
    )


def translation_confidence(mean_logprob: float) -> str:
    """The model's confidence in its own translation, in words, from its mean log-probability per token.

    exp(mean log-probability) is the geometric mean of the probabilities it gave its own tokens: about 0.7
    on a typical Multi30k test caption, under 0.4 on the hardest 3%, about 0.3 on sentences it was not made for.
    """
    p = math.exp(mean_logprob)
    if p >= 0.6:
        words = "high"
    elif p >= 0.4:
        words = "medium: some words may be wrong"
    else:
        words = "low: expect mistakes"
    return f"confidence {words} (it gave its own words {p:.0%} probability on average)"


def translation_notice(result, text: str = "") -> str | None:
    """English typed into the German tab is named as such; any other unusual input gets the general notice, with
    why (the result's least typical signal) and how unusual (the domain score), as the sentiment notice."""
    if looks_english(text):
        return f"⚠️ **{LOOKS_ENGLISH}**"
    if not getattr(result, "out_of_domain", False):
        return None
    return f"⚠️ **{TRANSLATION_OUT_OF_DOMAIN}**" + _result_why(TRANSLATION_REASONS, result, "captions")


def vocabulary_notice(text: str, unknown: list[str], unk: str | None) -> str | None:
    """What the model's vocabulary made of the input: `unknown`, the input's pieces it read as its unknown token
    `unk` (BERT's [UNK]: one vector for everything its vocabulary lacks; each piece's own text where the tokens
    keep it, else `unk` itself), else emoji and symbols, which our byte-level tokenizers split into pieces seen
    rarely in training. The token is written as code: gradio's Markdown drops "<unk>" as an unknown HTML tag, and the
    rest of its line with it ("its unknown token" and nothing after)."""
    from .inputs import plural

    if unknown:
        shown = ", ".join(dict.fromkeys(u for u in unknown if u.strip() and u != unk))
        shown = f" ({shown[:60]}{'…' if len(shown) > 60 else ''})" if shown else ""
        each = "it" if len(unknown) == 1 else "each"
        return (
            f"This model's vocabulary lacks {plural(len(unknown), 'piece')} of the text{shown}: it reads {each} as "
            f"its unknown token `{unk}`, the same for everything it does not know."  # code: <unk> is no tag
        )
    if any(unicodedata.category(c) == "So" for c in text):
        return "Emoji and symbols are split into pieces; the model saw few of them in training."
    return None


def tokens_notice(pipe, text: str, tokens) -> str | None:
    """vocabulary_notice for the tokens (TokenSpans) `pipe` read of `text`: those read as its tokenizer's unknown
    token, by id, named by the text they cover; the sentiment and translation tabs."""
    unk_id, unk = unknown_token(getattr(pipe, "tokenizer", None))
    unknown = [t.text for t in tokens if unk_id is not None and t.id == unk_id]
    return vocabulary_notice(text, unknown, unk)
