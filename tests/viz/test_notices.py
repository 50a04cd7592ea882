"""The app's status lines: confidence in words, and the out-of-domain notice exactly when the pipeline flags."""

import numpy as np
import pytest

from pipelines import SentimentPipeline, TranslationPipeline
from pipelines.trust.domain import DomainModel, piece_letters, quantiles
from viz import notices
from viz.sentiment.handlers import analyze_review
from viz.translation.handlers import translate


def with_domain(pipe, threshold: float, signals=("words",)):
    """The pipeline with neutral domain statistics; threshold > 1 flags every input, < 0 none."""
    V = pipe.model.config.vocab_size
    refs = {k: quantiles(np.linspace(-1, 1, 50)) for k in signals}
    pipe.domain = DomainModel(np.zeros(V, dtype=np.float32), piece_letters(pipe.tokenizer, V), refs, threshold, {})
    return pipe


@pytest.mark.parametrize("threshold, shown", [(1.01, True), (-1.0, False)])
def test_sentiment_status_shows_the_notice_only_when_flagged(sentiment_dir, threshold, shown):
    pipe = with_domain(SentimentPipeline.from_pretrained(str(sentiment_dir)), threshold)
    view, probs, status = analyze_review(pipe, "Ich habe keine Ahnung, was du meinst.")
    assert view is not None and probs  # the prediction is still shown
    assert (notices.SENTIMENT_OUT_OF_DOMAIN in status) is shown
    best = max(probs, key=probs.get)
    assert f"**{best}** ({probs[best]:.1%})" in status
    assert any(words in status for words in ("very sure", "fairly sure", "not sure", "coin toss"))


@pytest.mark.parametrize("threshold, shown", [(1.01, True), (-1.0, False)])
def test_translation_status_shows_the_notice_and_confidence_in_words(translation_dir, threshold, shown):
    pipe = TranslationPipeline.from_pretrained(str(translation_dir))
    with_domain(pipe, threshold, ("words", "output_logprob"))
    view, english, status = translate(pipe, "Ich habe keine Ahnung, was du meinst.", "greedy")
    assert view is not None
    assert (notices.TRANSLATION_OUT_OF_DOMAIN in status) is shown
    # confidence in its words, in words (the tiny untrained model may write none: then none is claimed)
    assert ("confidence " in status) is bool(english) and "log-probability" not in status


def test_models_without_domain_statistics_never_show_the_notice(sentiment_dir):
    pipe = SentimentPipeline.from_pretrained(str(sentiment_dir))
    _, _, status = analyze_review(pipe, "SELECT * FROM users;")
    assert notices.SENTIMENT_OUT_OF_DOMAIN not in status


@pytest.mark.parametrize(
    "p, words", [(0.99, "very sure"), (0.85, "fairly sure"), (0.7, "not sure"), (0.55, "coin toss")]
)
def test_confidence_words(p, words):
    assert words in notices.sentiment_summary("positive", p, 12)


@pytest.mark.parametrize("p, words", [(0.8, "high"), (0.5, "medium"), (0.2, "low")])
def test_translation_confidence_words(p, words):
    text = notices.translation_confidence(float(np.log(p)))
    assert f"confidence {words}" in text and f"{p:.0%}" in text


@pytest.mark.parametrize("threshold", [1.01, -1.0])
def test_english_in_the_translation_tab_is_called_english(translation_dir, threshold):
    """Issue 25 item 6: English typed into the German tab was called "unlike the image captions"."""
    pipe = with_domain(
        TranslationPipeline.from_pretrained(str(translation_dir)), threshold, ("words", "output_logprob")
    )
    _, _, status = translate(pipe, "A man in a blue shirt is riding his bike down the street.", "greedy")
    assert notices.LOOKS_ENGLISH in status and notices.TRANSLATION_OUT_OF_DOMAIN not in status
    _, _, german = translate(pipe, "Ein Mann in einem blauen Hemd fährt mit dem Fahrrad.", "greedy")
    assert notices.LOOKS_ENGLISH not in german


@pytest.mark.parametrize(
    "text, english",
    [("A dog is running in the snow.", True), ("I love this.", True), ("Zwei Hunde spielen im Schnee.", False),
     ("Ein Mann fährt mit dem Fahrrad die Straße entlang.", False), ("Hallo", False), ("", False)],
)  # fmt: skip
def test_looks_english(text, english):
    from pipelines.trust.domain import looks_english

    assert looks_english(text) is english


def test_a_word_piece_model_says_which_pieces_it_reads_as_unknown(sentiment_dir):
    """The symbol notice said "read as several byte pieces" for every model; the pre-trained model's WordPiece
    vocabulary reads emoji as one [UNK] token, the same for all of them."""
    from pathlib import Path

    shipped = SentimentPipeline.from_pretrained(str(Path(__file__).resolve().parents[2] / "assets" / "sentiment"))
    status = analyze_review(shipped, "Loved it 😍🔥, a joy ✨.", False)[2]
    assert "lacks 2 pieces of the text (😍🔥, ✨): it reads each as its unknown token `[UNK]`" in status
    assert "byte pieces" not in status and "Emoji and symbols" not in status
    known = analyze_review(shipped, "Five stars ★★★★★.", False)[2]  # ★ is in its vocabulary
    assert "Emoji and symbols are split into pieces" in known and "unknown token" not in known
    assert "Emoji" not in analyze_review(shipped, "A plain review.", False)[2]

    byte_level = SentimentPipeline.from_pretrained(str(sentiment_dir))  # every byte is in its vocabulary
    status = analyze_review(byte_level, "Loved it 😍🔥, a joy ✨.", False)[2]
    assert "Emoji and symbols are split into pieces" in status and "unknown token" not in status


def test_a_translator_that_reads_emoji_as_unknown_says_so(tmp_path):
    """The translation tab compared its source tokens (TokenSpans) with the unknown token's text, never equal: a
    Marian translator that reads "😍" as <unk> was said to split it into pieces."""
    from tiny_hf_models import make_marian_dir

    pipe = TranslationPipeline.from_pretrained(str(make_marian_dir(tmp_path / "marian")))
    status = translate(pipe, "Ein Hund 😍 läuft.", "greedy")[2]
    assert "lacks 1 piece of the text (😍): it reads it as its unknown token `<unk>`" in status
    assert "Emoji and symbols are split into pieces" not in status


def test_unknown_token_of_each_kind_of_tokenizer(sentiment, translation):
    from tokenizers import Tokenizer, models

    from pipelines.models.tokenizers_io import unknown_token

    word_piece = Tokenizer(models.WordPiece({"[UNK]": 0, "film": 1}, unk_token="[UNK]"))
    assert unknown_token(word_piece) == (0, "[UNK]")
    assert unknown_token(sentiment.tokenizer) == (3, "<unk>")  # ours: there, never needed
    assert unknown_token(None) == (None, None) == unknown_token(Tokenizer(models.WordLevel({"a": 0})))

    class Wrapped:  # transformers' tokenizer inside the any-model adapter
        tokenizer = type("HF", (), {"unk_token_id": 100, "unk_token": "[UNK]"})()

    assert unknown_token(Wrapped()) == (100, "[UNK]")
    assert notices.vocabulary_notice("x", ["<unk>"], "<unk>") == (  # the token itself is not named again
        "This model's vocabulary lacks 1 piece of the text: it reads it as its unknown token `<unk>`, the same for "
        "everything it does not know."
    )


def test_the_out_of_domain_notice_says_why_and_how_unusual(sentiment_dir):
    """The notice said only "This does not look like an English review": now also which signal made the input
    least typical, in words, and the share of held-out reviews and sentences that looked as unusual."""
    from types import SimpleNamespace

    pipe = with_domain(SentimentPipeline.from_pretrained(str(sentiment_dir)), 1.01)  # every input flagged
    text = "Ich habe keine Ahnung, was du meinst."
    _, _, status = analyze_review(pipe, text)
    reason = pipe(text).domain_reason  # the check says why, with the score
    assert reason in notices.DOMAIN_REASONS and notices.DOMAIN_REASONS[reason][1:] in status
    assert "of the held-out reviews and sentences looked as unusual" in status
    assert pipe("film " * 30).domain_reason == "repeats"  # one word piece over and over
    flagged = SimpleNamespace(out_of_domain=True, domain_score=0.0, domain_reason="repeats")
    assert "One word piece makes up most of it; none of the held-out" in notices.sentiment_notice(flagged)
    assert notices.sentiment_notice(SimpleNamespace(out_of_domain=False, domain_reason="words")) is None
    plain = notices.sentiment_notice(SimpleNamespace(out_of_domain=True, domain_score=None, domain_reason=None))
    assert plain.startswith(f"⚠️ **{notices.SENTIMENT_OUT_OF_DOMAIN}** The model only knows")  # no reason known


def test_the_translation_notice_says_why_and_how_unusual(translation_dir):
    pipe = TranslationPipeline.from_pretrained(str(translation_dir))
    with_domain(pipe, 1.01, ("words", "output_logprob"))  # every input flagged
    text = "Die Zentralbank hat die Zinsen erhöht."
    view, _, status = translate(pipe, text, "greedy")
    reason = view.result.domain_reason
    assert reason in notices.TRANSLATION_REASONS and notices.TRANSLATION_REASONS[reason][1:] in status
    assert "of the held-out captions looked as unusual" in status
