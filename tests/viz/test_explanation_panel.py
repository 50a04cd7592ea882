"""The explanation panel's handlers on the tiny model: diverging legend, words, escaping, faithfulness."""

import html
import re

import pytest

from pipelines.explanations import is_signed, names
from viz.examples import LONG_REVIEW
from viz.explanations import attributions, explanation_panel
from viz.sentiment.handlers import analyze_review

REVIEW = "The acting was wooden, but the music was wonderful <script>alert(1)</script>."


def visible_text(out: str) -> str:
    body = re.search(r'<div class="token-text"[^>]*>(.*?)</div>', out, re.S).group(1)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


@pytest.mark.parametrize("method", names("sentiment"))
def test_highlight_shows_words_and_a_legend(sentiment, method):
    view, _, _ = analyze_review(sentiment, REVIEW)
    expl, out = explanation_panel.explain(sentiment, view, method)
    assert expl.method == method and "attr-legend" in out
    assert "<script" not in out and " ".join(visible_text(out).split()) == " ".join(REVIEW.split())
    signed = is_signed(method)
    assert ("against" in out) == signed  # the diverging legend names both directions
    n_words = len({int(w) for w, t in zip(expl.words, expl.tokens) if t.end > t.start})
    assert out.count('class="tok"') == n_words < len(expl.tokens)  # subword pieces are merged into words


def test_diverging_colours_follow_the_sign():
    spans = [(0, 4), (5, 9), (10, 14)]
    out = attributions.attribution_html(
        "good evil meh",
        spans,
        __import__("numpy").array([0, 1, 2]),
        __import__("numpy").array([1.0, -1.0, 0.0]),
        "positive",
        "occlusion",
    )
    blue, red = "rgba({},{},{},".format(*attributions.SUPPORT), "rgba({},{},{},".format(*attributions.AGAINST)
    tokens = re.findall(r'<span class="tok" title="([^"]+)" style="background:(rgba\([^)]*\))', out)
    assert [t for t, _ in tokens] == ["+1.000", "-1.000", "+0.000"]
    assert tokens[0][1].startswith(blue) and tokens[1][1].startswith(red) and tokens[2][1].endswith(",0.000)")
    assert "supports “positive”" in out and "against “positive”" in out


def test_long_review_marks_the_skipped_middle(sentiment):
    view, _, _ = analyze_review(sentiment, LONG_REVIEW)
    _, out = explanation_panel.explain(sentiment, view, "gradient_x_input")
    assert f"{view.n_skipped:,} tokens in the middle are not read" in out


def test_faithfulness_is_shown_beside_random(sentiment):
    view, _, _ = analyze_review(sentiment, REVIEW)
    expl, _ = explanation_panel.explain(sentiment, view, "integrated_gradients")
    text, fig = explanation_panel.faithfulness(sentiment, expl)
    assert "comprehensiveness" in text and "random" in text and "convergence delta" in text
    assert "Default method" in text
    assert [t.name for t in fig.data][1] == "random" and list(fig.data[0].x) == [0, 1, 5, 10, 20, 50]


def test_faithfulness_never_shows_minus_zero(sentiment):
    """The pre-trained model's view of 'Not my cup of tea, but the acting was superb and I laughed a lot.' read
    'sufficiency -0.000': a score that rounds to zero is written 0.000, as in the head table."""
    view, _, _ = analyze_review(sentiment, REVIEW)
    expl, _ = explanation_panel.explain(sentiment, view, "attention_norm")
    report = sentiment.faithfulness(expl)
    report.method.sufficiency, report.random.comprehensiveness = -0.0002, -0.01
    text = attributions.faithfulness_markdown(report, expl)
    assert "| this method |" in text and "-0.000" not in text and "| 0.000 |" in text and "| -0.010 |" in text


def test_the_verdict_against_random_reads_the_numbers_as_shown():
    """A 25,000-character review: "beats random on both" beside comprehensiveness 0.000 and random 0.000."""
    assert attributions.against_random(0.2, 0.1) == "beats random on both"
    assert attributions.against_random(0.0002, 0.1) == "beats random on one of the two and ties on the other"
    assert attributions.against_random(-0.2, 0.1) == "beats random on one of the two"
    assert attributions.against_random(0.0004, -0.0001) == "ties with random on both"
    assert attributions.against_random(0.0, -0.3) == "does not beat random (it ties on one)"
    assert attributions.against_random(0.1, float("nan")) == "beats random on one of the two"
    assert attributions.against_random(-0.1, -0.3) == "does not beat random"


def test_the_verdict_compares_the_numbers_the_table_shows(sentiment):
    """0.0004 against 0.0006 reads 0.000 against 0.001: random is ahead as shown, not tied."""
    view, _, _ = analyze_review(sentiment, REVIEW)
    expl, _ = explanation_panel.explain(sentiment, view, "attention_norm")
    report = sentiment.faithfulness(expl)
    report.method.comprehensiveness, report.random.comprehensiveness = 0.0004, 0.0006
    report.method.sufficiency, report.random.sufficiency = 0.1, 0.3
    text = attributions.faithfulness_markdown(report, expl)
    assert "beats random on one of the two." in text and "| 0.000 |" in text and "| 0.001 |" in text


def test_no_review_gives_empty_outputs(sentiment):
    assert explanation_panel.explain(sentiment, None, "occlusion") == (None, "")
    assert explanation_panel.faithfulness(sentiment, None) == ("", None)


def test_a_failing_method_gives_a_message_not_a_traceback(sentiment):
    view, _, _ = analyze_review(sentiment, REVIEW)
    expl, out = explanation_panel.explain(sentiment, view, "no-such-method")
    assert expl is None and "could not be computed" in out and "Traceback" not in out


def _listed(out: str, heading: str) -> list[str]:
    """The words listed after a bold heading under the highlight."""
    line = re.search(rf"<b>{heading}</b>(.*?)</p>", out, re.S).group(1)
    return re.findall(r"“([^”]*)”", html.unescape(line))


def test_supports_lists_only_words_that_support_and_against_only_words_against():
    """Issue 25 item 2: with fewer supporting words than places, words against filled 'Supports' (🎬 -0.11 and
    👍 -0.13 in both lists) and a ',' at -0.00 showed in both."""
    import numpy as np

    text = "😍 😍 😍 🎬 👍 ,"
    spans = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11)]
    scores = np.array([0.9, 0.5, 0.3, -0.11, -0.13, -0.001], dtype=np.float32)
    out = attributions.attribution_html(text, spans, np.arange(6), scores, "negative", "integrated_gradients")
    supports = _listed(out, "Supports “negative” most:")
    against = _listed(out, "Speaks against it most:")
    assert supports == ["😍", "😍", "😍"]
    assert against == ["👍", "🎬"]  # most against first; the ',' at -0.001 shows as -0.00 and is left out
    assert "-0.00" not in out.split("</div>", 2)[-1]  # nothing listed rounds to zero


def test_small_scores_are_listed_to_two_significant_digits():
    """Gradient x input on the pre-trained model: every score a thousandth or two, drawn blue, yet listed as
    "Supports 'positive' most: nothing" because two decimals rounded them all to +0.00."""
    import numpy as np

    text = "Not bad at all"
    spans = [(0, 3), (4, 7), (8, 10), (11, 14)]
    scores = np.array([0.0021, 0.0012, -0.0004, -0.00001], dtype=np.float32)
    out = attributions.attribution_html(text, spans, np.arange(4), scores, "positive", "gradient_x_input")
    assert _listed(out, "Supports “positive” most:") == ["Not", "bad"] and "+0.0021" in out and "+0.0012" in out
    assert _listed(out, "Speaks against it most:") == ["at"] and "-0.0004" in out  # "all" rounds to zero: left out


def test_a_model_that_reads_every_token_alike_is_not_ranked():
    """The pre-trained model pools by the mean: its pooling weights are 1/12 on each of 12 tokens, and the page
    ranked them ("Where the model looks most: 'Not' 8.3% · 'bad' 8.3% · 'at' 8.3%")."""
    import numpy as np

    text, spans = "Not bad at all", [(0, 0), (0, 3), (4, 7), (8, 10), (11, 14), (14, 14)]
    alike = np.array([0, 0.25, 0.25, 0.25, 0.25, 0], dtype=np.float32)  # [CLS] and [SEP] read nothing
    out = attributions.attribution_html(text, spans, np.arange(6), alike, "positive", "attention")
    assert "nowhere in particular" in out and "25.0% each" in out and not _listed(out, "Where the model looks most:")
    varied = np.array([0, 0.4, 0.3, 0.2, 0.1, 0], dtype=np.float32)
    out = attributions.attribution_html(text, spans, np.arange(6), varied, "positive", "attention")
    assert _listed(out, "Where the model looks most:") == ["Not", "bad", "at", "all"]


def test_only_against_says_nothing_supports():
    import numpy as np

    out = attributions.attribution_html("bad film", [(0, 3), (4, 8)], np.arange(2), np.array([-0.4, -0.2]),
                                        "positive", "occlusion")  # fmt: skip
    assert _listed(out, "Supports “positive” most:") == [] and "most:</b> nothing" in out
    assert _listed(out, "Speaks against it most:") == ["bad", "film"]


@pytest.mark.parametrize("method", ["attention", "rollout"])
def test_unsigned_methods_are_worded_without_a_direction(sentiment, method):
    """Issue 25 item 3: attention has no sign, yet it read "each word's score toward 'negative'" and
    "Supports 'negative' most: 'Meadowvale' 1.2%"."""
    view, _, _ = analyze_review(sentiment, REVIEW)
    _, out = explanation_panel.explain(sentiment, view, method)
    text = html.unescape(re.sub(r"<[^>]+>", " ", out))
    assert "Supports" not in text and "toward" not in text and "against" not in text
    assert "no sign" in text and len(_listed(out, "Where the model looks most:")) > 0


def test_faithfulness_text_has_no_command_line(sentiment):
    """Issue 25 item 5: the default method's reason showed the benchmark's command line (broken over two lines)."""
    view, _, _ = analyze_review(sentiment, REVIEW)
    expl, _ = explanation_panel.explain(sentiment, view, "integrated_gradients")
    text, _ = explanation_panel.faithfulness(sentiment, expl)
    assert "Default method" in text and "python " not in text and "`" not in text and "--task" not in text


def test_a_slow_method_moves_a_progress_bar_with_an_estimate(sentiment, monkeypatch):
    """Issue 25 item 11: occlusion on a long review ran 16-18 s with no sign of how long; it reports its words
    done and an estimate of the time left."""
    from pipelines.explanations import methods
    from viz.page.progress import reporter

    monkeypatch.setattr(methods, "OCCLUSION_BATCH", 8)  # the tiny model reads few words: several batches
    calls = []
    report = reporter(lambda value, desc, unit: calls.append((value, desc)), "Occlusion", "words")
    view, _, _ = analyze_review(sentiment, LONG_REVIEW)
    expl, out = explanation_panel.explain(sentiment, view, "occlusion", report)
    assert expl is not None and "Occlusion" in out
    n_words = int(expl.words.max()) + 1
    assert len(calls) > 1 and calls[-1][0] == (n_words, n_words)
    assert "s left" in calls[0][1] and calls[0][1].startswith("Occlusion: ") and f"of {n_words:,} words" in calls[0][1]
