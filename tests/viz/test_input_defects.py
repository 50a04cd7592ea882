"""Input the app must survive: invisible-only text, NaN and junk numbers, lone surrogates; no server paths
in messages; counts in words ('1 token')."""

import logging
import math

import pytest

from viz.attention import task_views
from viz.explanations import explanation_panel
from viz.inputs import MAX_BEAM, check_text, fix_surrogates, plural
from viz.sentiment.handlers import analyze_review
from viz.translation.handlers import translate, translation_step

INVISIBLE = ["\u200b", "\ufeff", "\u2060", "\u00ad", "\u3164", "\u200b\ufeff\u2060\u00ad\u3164 \u2800\u115f"]


@pytest.mark.parametrize("text", INVISIBLE)
def test_invisible_only_text_is_empty_for_both_tasks(sentiment, translation, text):
    view, probs, status = analyze_review(sentiment, text)
    assert view is None and probs is None and "empty" in status and "invisible" in status
    view, english, status = translate(translation, text, "greedy", 2)
    assert view is None and english == "" and "empty" in status


def test_invisible_characters_inside_words_still_run(sentiment):
    view, probs, _ = analyze_review(sentiment, "A good\u200b film\u00ad.")
    assert view is not None and probs is not None


@pytest.mark.parametrize("beam", [None, 1, 3.0, "4", MAX_BEAM])
def test_beam_sizes_the_app_takes_give_a_translation(translation, beam):
    view, english, status = translate(translation, "Ein Hund läuft.", "beam search", beam)
    assert view is not None and isinstance(english, str) and "⚠️" not in status
    beams = 1 if "greedy" in status else int(status.split("beam search, ")[1].split(" beams")[0])
    assert 1 <= beams <= MAX_BEAM


@pytest.mark.parametrize("beam", [math.nan, math.inf, -math.inf, "NaN", "four", [3], 1e300, -5, 99])
def test_any_other_beam_size_gets_a_message_not_a_silent_default(translation, beam):
    """Issue 22: an API client's junk beam size is answered with the app's message (it was silently replaced)."""
    view, english, status = translate(translation, "Ein Hund läuft.", "beam search", beam)
    assert view is None and english == "" and f"⚠️ The beam size must be a whole number from 1 to {MAX_BEAM}" in status


@pytest.mark.parametrize("value", [math.nan, "x", None, 1e300, -3, "2"])
def test_redraws_take_any_layer_head_and_step(sentiment, translation, value):
    view, _, _ = analyze_review(sentiment, "A fine film.")
    assert all(fig is not None for fig in task_views.task_figures("sentiment", view, value, value))
    tview, _, _ = translate(translation, "Ein Hund läuft.", "greedy", 2)
    assert all(fig is not None for fig in task_views.task_figures("translation", tview, value, value))
    assert all(fig is not None for fig in translation_step(tview, value, value))


def test_lone_surrogates_are_replaced_with_a_notice_and_nothing_logged(sentiment, translation, caplog):
    assert fix_surrogates("a\ud800b") == ("a\ufffdb", 1)
    assert fix_surrogates("\ud83d\ude00") == ("😀", 0)  # a pair sent as two code units is one character
    with caplog.at_level(logging.WARNING):
        view, probs, status = analyze_review(sentiment, "A great \ud800 film \udfff.")
        assert probs is not None and "2 broken characters" in status
        assert "\ud800" not in view.text and "\ufffd" in view.text
        explanation_panel.explain(sentiment, view, "attention")[1].encode("utf-8")  # valid text all the way to the page
        view, english, status = translate(translation, "Ein \udc00 Hund.", "greedy", 2)
        assert view is not None and "1 broken character " in status
        status.encode("utf-8")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_one_token_and_one_step_are_singular(sentiment):
    assert plural(1, "token") == "1 token" and plural(2_000, "token") == "2,000 tokens"
    assert check_text("\x00x", 100, "review").notices == ["1 control character replaced by spaces."]
    view, _, status = analyze_review(sentiment, "a")
    n = len(view.spans)
    assert f"{plural(n, 'token')} read" in status and "1 tokens" not in status


def test_unavailable_model_message_shows_no_server_paths():
    from app import build_demo
    from viz.models.loading import ROOT

    errors = [f"{ROOT}/assets/sentiment: no config.json", "/srv/private/models/translation: Errno 2: '/srv/x/y.json'"]
    demo = build_demo(None, None, sentiment_error=errors[0], translation_error=errors[1])
    texts = " ".join(b.value for b in demo.blocks.values() if type(b).__name__ == "Markdown")
    assert "assets/sentiment: no config.json" in texts and "…/translation" in texts and "…/y.json" in texts
    assert str(ROOT) not in texts and "/srv/" not in texts


def test_the_pages_step_count_meets_the_librarys_in_one_place():
    """The step slider counts from 1, the library from 0: junk and out-of-range values land on a real step."""
    from viz.inputs import step_chosen, step_shown

    assert [step_chosen(v, 4) for v in (1, "3", 4.0, 9, 0, -2, None, "junk", math.nan)] == [0, 2, 3, 3, 0, 0, 0, 0, 0]
    assert step_chosen(None, 4, default=3) == 2 and step_chosen(7) == 6  # no count of steps: no upper bound
    assert all(step_shown(step_chosen(v, 5)) == v for v in range(1, 6))
