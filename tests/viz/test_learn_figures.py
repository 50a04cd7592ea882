"""The Learn tab's figures (viz/learn/figures.py): one for every step of every family, each under 200 KB of JSON,
with unique escaped axis labels; the next token's redrawn from its options without the model."""

from pathlib import Path

import pytest

from pipelines.learn import ORDER, walk
from viz.learn.figures import FIGURES, draw

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 200 * 1024
TEXTS = {
    "sentiment": "The film was not good at all, but the actors were great.",
    "translation": "Ein Mann fährt mit dem Fahrrad durch die Stadt.",
    "lm": "Once upon a time there was a",
}


@pytest.fixture(scope="module")
def bundled_walks():
    from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline

    return [
        walk(SentimentPipeline.from_pretrained(str(ROOT / "assets" / "sentiment-scratch")), TEXTS["sentiment"]),
        walk(TranslationPipeline.from_pretrained(str(ROOT / "assets" / "translation")), TEXTS["translation"]),
        walk(LanguageModelPipeline.from_pretrained(str(ROOT / "assets" / "lm")), TEXTS["lm"]),
    ]


def assert_drawn(step, fig):
    size = len(fig.to_json().encode())
    assert size < LIMIT, (step.key, size)
    assert fig.layout.paper_bgcolor == "rgba(0,0,0,0)"  # the page's own background, light or dark
    for trace in fig.data:
        for axis in ("x", "y"):
            labels = getattr(trace, axis, None)
            if trace.type == "heatmap" and labels is not None:
                assert len(set(labels)) == len(labels), (step.key, axis)
                assert not any("<" in str(label) for label in labels), (step.key, axis)  # escaped


def test_every_step_key_has_a_figure():
    assert set(FIGURES) == set(ORDER)


def test_every_figure_of_the_bundled_models_draws_under_200_kb(bundled_walks):
    for w in bundled_walks:
        for step in w.steps:
            assert_drawn(step, draw(step))


@pytest.mark.parametrize("fixture", ["sentiment", "translation", "lm"])
def test_every_figure_of_the_tiny_models_draws(request, fixture):
    for step in walk(request.getfixturevalue(fixture), TEXTS[fixture]).steps:
        assert_drawn(step, draw(step))


def test_the_next_token_redraws_from_its_options(bundled_walks):
    step = next(s for s in bundled_walks[2].steps if s.key == "next_token")
    cool = draw(step, {"temperature": 0.3, "top_p": 0.5, "seed": 1})
    warm = draw(step, {"temperature": 2.0, "top_p": 1.0, "seed": 1})
    assert list(cool.data[0].x) == list(warm.data[0].x)  # the temperature-1 bars stay
    assert list(cool.data[1].x) != list(warm.data[1].x)
    assert "temperature 0.3" in cool.data[1].name and "keeps" in cool.layout.title.subtitle.text


def test_the_start_and_end_tokens_are_labelled_not_swallowed_as_tags(bundled_walks):
    step = next(s for s in bundled_walks[1].steps if s.key == "cross_attention")
    fig = draw(step)
    assert any("&lt;/s&gt;" in label for label in fig.data[0].x)


def test_the_largest_figures_stay_under_200_kb_on_a_long_text():
    """MiniLM's 12 heads on the most tokens a walk reads: the heaviest multi-head figure."""
    from pipelines import SentimentPipeline

    pipe = SentimentPipeline.from_pretrained(str(ROOT / "assets" / "sentiment"))
    for step in walk(pipe, " ".join([TEXTS["sentiment"]] * 10)).steps:
        assert_drawn(step, draw(step))
