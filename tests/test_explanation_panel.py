"""The explanation panel's handlers on the tiny model: diverging legend, words, escaping, faithfulness."""

import html
import re

import pytest

from pipelines import SentimentPipeline
from pipelines.explanations import names
from viz import attributions, explanation_panel, handlers
from viz.examples import LONG_REVIEW

REVIEW = "The acting was wooden, but the music was wonderful <script>alert(1)</script>."


@pytest.fixture(scope="module")
def pipe(sentiment_dir):
    return SentimentPipeline.from_pretrained(str(sentiment_dir))


def visible_text(out: str) -> str:
    body = re.search(r'<div class="token-text"[^>]*>(.*?)</div>', out, re.S).group(1)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


@pytest.mark.parametrize("method", names("sentiment"))
def test_highlight_shows_words_and_a_legend(pipe, method):
    view, _, _ = handlers.analyze_review(pipe, REVIEW)
    expl, out = explanation_panel.explain(pipe, view, method)
    assert expl.method == method and "attr-legend" in out
    assert "<script" not in out and " ".join(visible_text(out).split()) == " ".join(REVIEW.split())
    signed = method not in ("attention", "rollout")
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


def test_long_review_marks_the_skipped_middle(pipe):
    view, _, _ = handlers.analyze_review(pipe, LONG_REVIEW)
    _, out = explanation_panel.explain(pipe, view, "gradient_x_input")
    assert f"{view.n_skipped:,} tokens in the middle are not read" in out


def test_faithfulness_is_shown_beside_random(pipe):
    view, _, _ = handlers.analyze_review(pipe, REVIEW)
    expl, _ = explanation_panel.explain(pipe, view, "integrated_gradients")
    text, fig = explanation_panel.faithfulness(pipe, expl)
    assert "comprehensiveness" in text and "random" in text and "convergence delta" in text
    assert "Default method" in text
    assert [t.name for t in fig.data][1] == "random" and list(fig.data[0].x) == [0, 1, 5, 10, 20, 50]


def test_no_review_gives_empty_outputs(pipe):
    assert explanation_panel.explain(pipe, None, "occlusion") == (None, "")
    assert explanation_panel.faithfulness(pipe, None) == ("", None)


def test_a_failing_method_gives_a_message_not_a_traceback(pipe):
    view, _, _ = handlers.analyze_review(pipe, REVIEW)
    expl, out = explanation_panel.explain(pipe, view, "no-such-method")
    assert expl is None and "could not be computed" in out and "Traceback" not in out
