"""The Next word tab in a real headless chromium, on the tiny models: an example generated, the continuation and
the causal heatmap drawn, the step slider moved."""

import browser
import pytest

from viz.examples import LM_EXAMPLES

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]


@pytest.fixture(scope="module")
def lm_url(sentiment_dir, translation_dir, lm_dir):
    from app import build_demo
    from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline

    demo = build_demo(
        SentimentPipeline.from_pretrained(str(sentiment_dir)),
        TranslationPipeline.from_pretrained(str(translation_dir)),
        LanguageModelPipeline.from_pretrained(str(lm_dir)),
    )
    try:
        yield browser.serve(demo)
    finally:
        demo.close()


def test_next_word_tab_generates_an_example_and_steps_through_it(page, lm_url):
    page.goto(lm_url)
    page.get_by_role("tab", name="Next word").click()
    page.wait_for_selector("#lm-input textarea", state="visible")
    page.locator("#lm-examples").get_by_text(
        LM_EXAMPLES[2][0]
    ).click()  # an example fills the box and generates (the tiny model reads 64 tokens)
    page.wait_for_function(
        "() => (document.querySelector('#lm-status') || {}).textContent.includes('new token')", timeout=60_000
    )
    assert page.locator("#lm-input textarea").input_value() == LM_EXAMPLES[2][1]
    assert page.locator("#lm-output textarea").input_value() != ""
    browser.wait_drawn(page, "lm-attention")
    assert "(causal)" in browser.plot_title(page, "lm-attention")
    tip = browser.hover_heatmap(page, "lm-attention", 0.1, 0.9)  # below the diagonal: a weight
    assert "weight 0." in tip
    browser.wait_drawn(page, "lm-next", ".barlayer")
    last = browser.plot_title(page, "lm-next")
    assert "Step 20 of 20" in last

    page.wait_for_function(
        "() => { const s = document.querySelector('#lm-step input[type=range]'); return s && !s.disabled; }"
    )
    slider = page.locator("#lm-step input[type=range]")
    browser.mark_plot(page, "lm-next")
    slider.press("Home")
    browser.wait_redrawn(page, "lm-next")
    assert "Step 1 of" in browser.plot_title(page, "lm-next")
    browser.mark_plot(page, "lm-next")
    slider.press("ArrowRight")
    browser.wait_redrawn(page, "lm-next")
    assert "Step 2 of" in browser.plot_title(page, "lm-next")


def test_the_explanation_is_drawn_and_a_share_link_restores_the_prompt(page, lm_url):
    """The prompt is shaded by what drives the first new token, with its faithfulness; the tab's link, opened in the
    page, fills the prompt and the decoding options and generates the same continuation."""
    from urllib.parse import urlencode

    prompt = "This movie was <b>fun</b> &"
    query = urlencode({"tab": "lm", "text": prompt, "decoding": "sampled", "seed": 5, "max_new": 6, "step": 2})
    page.goto(f"{lm_url}?{query}")
    page.wait_for_function(
        "() => (document.querySelector('#lm-status') || {textContent: ''}).textContent.includes('seed 5')",
        timeout=60_000,
    )
    assert page.locator("#lm-input textarea").input_value() == prompt
    assert page.locator("#lm-decoding input[value=sampled]").is_checked()
    page.wait_for_selector("#lm-explanation .attr-legend", timeout=60_000)
    shaded = page.locator("#lm-explanation .token-text").text_content()
    assert " ".join(shaded.split()) == " ".join(prompt.split())  # the prompt's own words, shown as text
    assert page.locator("#lm-explanation b", has_text="fun").count() == 0  # markup never runs
    page.wait_for_function(
        "() => (document.querySelector('#lm-explanation-faithfulness') || {textContent: ''})"
        ".textContent.includes('random')",
        timeout=60_000,
    )
    browser.wait_drawn(page, "lm-explanation-curve", ".scatterlayer")
    page.wait_for_function(
        "() => (document.querySelector('#lm-next .gtitle') || {textContent: ''}).textContent.startsWith('Step 2 of')",
        timeout=60_000,
    )  # the link's step, applied once the run is drawn
    continuation = page.locator("#lm-output textarea").input_value()

    page.locator("#lm-share").click()
    page.wait_for_function(
        "() => (document.querySelector('#lm-share-link textarea') || {value: ''}).value.startsWith('http')"
    )
    link = page.locator("#lm-share-link textarea").input_value()
    assert "tab=lm" in link and "seed=5" in link and "max_new=6" in link and "step=2" in link
    page.goto(link)
    page.wait_for_function(
        "() => (document.querySelector('#lm-status') || {textContent: ''}).textContent.includes('seed 5')",
        timeout=60_000,
    )
    assert page.locator("#lm-input textarea").input_value() == prompt
    assert page.locator("#lm-output textarea").input_value() == continuation  # the same seed, the same text
