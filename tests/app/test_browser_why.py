"""Why a head looks there, in a real headless chromium on the tiny models of the three tabs (one app for the module):
a click on a cell of a large heatmap draws the cell's score taken apart (`<task>-score-parts`) in every tab, its
terms adding up to the model's score; the composition view draws `<task>-composition` and a click on a head lists
what it composes with; "over the set" fills the head table with mean ± sd; at 1440 x 900 and on a phone (390 x 844),
where the page does not scroll sideways."""

import re

import browser
import pytest

from viz.examples import BENCH_GERMAN

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]
REVIEW = "A warm, funny and beautifully acted film about two brothers who finally talk."
PROMPT = "the film was good and the acting was"
SCREENS = {"desktop": (1440, 900), "phone": (390, 844)}
SIDEWAYS_JS = "() => document.documentElement.scrollWidth > document.documentElement.clientWidth"


@pytest.fixture(scope="module")
def why_url(sentiment_dir, translation_dir, lm_dir):
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


@pytest.fixture(params=list(SCREENS))
def screen(request, page):
    page.set_viewport_size(dict(zip(("width", "height"), SCREENS[request.param])))
    try:
        yield request.param
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})


def run(page, url: str, task: str) -> None:
    """Load the tab and run its input; wait for its large heatmap."""
    tab = {"sentiment": "Sentiment", "translation": "Translation", "lm": "Next word"}[task]
    page.goto(url)
    page.get_by_role("tab", name=re.compile(f"^{tab}")).click()
    page.wait_for_selector(f"#{task}-input textarea", state="visible")
    page.wait_for_function("() => document.readyState === 'complete'")
    if task == "sentiment":
        browser.analyze_review(page, REVIEW)
    elif task == "translation":
        browser.translate(page, BENCH_GERMAN, decoding="greedy")
    else:
        page.locator("#lm-input textarea").fill(PROMPT)
        browser.mark_plot(page, "lm-attention")
        page.locator("#lm-submit").click()
        browser.wait_redrawn(page, "lm-attention")
    browser.wait_drawn(page, f"{task}-attention")


@pytest.mark.parametrize("task", ["sentiment", "translation", "lm"])
def test_a_cell_clicked_is_taken_apart(page, why_url, screen, task):
    run(page, why_url, task)
    browser.open_section(page, task, "Inside one head")
    browser.click_plot(page, f"{task}-attention", 0.3, 0.8)  # below the diagonal: a key a causal head reads
    browser.wait_drawn(page, f"{task}-score-parts", ".barlayer .point")
    note = page.locator(f"#{task}-score-parts-note").inner_text()
    assert "add up to the model's own score" in note
    assert abs(float(note.split("difference ")[1].split()[0].rstrip("."))) < 1e-3
    assert not page.evaluate(SIDEWAYS_JS)


def test_the_composition_view_and_a_head_listed(page, why_url, screen):
    run(page, why_url, "sentiment")
    browser.open_section(page, "sentiment", "What each head does")
    page.locator("#sentiment-composition-submit").click()
    browser.wait_drawn(page, "sentiment-composition")
    browser.click_plot(page, "sentiment-composition", 0.5, 0.9)  # a head of the last layer
    page.wait_for_function(
        "() => (document.querySelector('#sentiment-composition-head') || {}).innerText?.includes('Earlier heads')"
    )
    assert not page.evaluate(SIDEWAYS_JS)


def test_over_the_set_fills_the_head_table_with_mean_and_sd(page, why_url, screen):
    run(page, why_url, "sentiment")
    browser.wait_heads_measured(page, "sentiment")
    browser.choose(page, "sentiment-heads-over", "over the set")
    page.wait_for_function(
        "() => (document.querySelector('#sentiment-heads-over-status') || {}).innerText?.includes('n = ')",
        timeout=120_000,
    )
    cells = page.locator("#sentiment-heads-table td").all_inner_texts()
    assert any("±" in c for c in cells)
    status = page.locator("#sentiment-heads-over-status").inner_text()
    assert "Effect is left out" in status and "inputs ×" in status  # the effects' cost, stated before they run
    assert not page.evaluate(SIDEWAYS_JS)


def test_the_next_word_tab_measures_the_heads_over_random_tokens_written_twice(page, why_url):
    page.set_viewport_size({"width": 1440, "height": 900})
    run(page, why_url, "lm")
    browser.wait_heads_measured(page, "lm")
    browser.choose(page, "lm-heads-over", "over random tokens written twice")
    page.wait_for_function(
        "() => (document.querySelector('#lm-heads-over-status') || {}).innerText?.includes('sequences')",
        timeout=120_000,
    )
    assert "random tokens written twice" in page.locator("#lm-heads-over-status").inner_text()
    assert any("±" in c for c in page.locator("#lm-heads-table td").all_inner_texts())


def test_the_induction_circuit_is_one_click_away_on_the_next_word_tab(page, why_url):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(why_url)
    page.get_by_role("tab", name="Next word").click()
    page.wait_for_selector("#lm-input textarea", state="visible")
    browser.open_section(page, "lm", "What each head does")
    page.locator("#lm-induction").click()
    browser.wait_drawn(page, "lm-composition")
    browser.wait_drawn(page, "lm-induction-parts", ".barlayer .point")
    note = page.locator("#lm-composition-note").inner_text()
    assert "Strongest induction head" in note and "Confirmed by switching heads off" in note
    words = page.locator("#lm-input textarea").input_value().split()  # the words read, in the prompt box
    assert words and words[: len(words) // 2] == words[len(words) // 2 :]
    assert "Earlier heads feeding its keys most" in page.locator("#lm-composition-head").inner_text()
