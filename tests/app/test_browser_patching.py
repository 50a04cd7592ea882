"""In chromium, each tab's Compare section draws the two patching grids once an example pair is clicked, and the
exact grids replace the estimate on the button's click, with their agreement printed."""

import pytest
from browser import analyze_review, open_section, open_tab, plot_title, reveal, step_forward, translate, wait_drawn

pytestmark = pytest.mark.browser


def patch_a_pair(page, task: str, pair_label: str) -> None:
    open_section(page, task, "Compare")
    page.locator(f"#{task}-compare-submit").locator("xpath=ancestor::*[contains(@class,'column')][1]").get_by_text(
        pair_label
    ).first.click()
    wait_drawn(page, f"{task}-patch-heads")  # heads need no alignment
    notes = page.locator(f"#{task}-patch-notes").inner_text()
    if "input at each position: not patched" not in notes:  # inputs of one length: by position too
        wait_drawn(page, f"{task}-patch-resid")
    else:
        assert "tokens" in notes  # it says why: the lengths
    assert "attribution patching" in plot_title(page, f"{task}-patch-heads")
    reveal(page, f"{task}-patch-exact")
    page.locator(f"#{task}-patch-exact").click()
    page.wait_for_function(
        f"() => (document.querySelector('#{task}-patch-notes') || {{}}).innerText.includes('Pearson')",
        timeout=60_000,
    )
    assert "(exact)" in plot_title(page, f"{task}-patch-heads")


def test_the_sentiment_compare_section_patches_an_example_pair(page, app_url):
    open_tab(page, app_url, "Sentiment")
    patch_a_pair(page, "sentiment", "negation: not bad → very bad")


def test_the_translation_compare_section_patches_an_example_pair(page, app_url):
    open_tab(page, app_url, "Translation")
    patch_a_pair(page, "translation", "Mann → Frau")


SIDEWAYS_JS = "() => document.documentElement.scrollWidth - window.innerWidth"


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)])
def test_layer_by_layer_and_patching_draw_without_sideways_scrolling(page, app_url, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    try:
        open_tab(page, app_url, "Sentiment")
        analyze_review(page, "Not bad at all, I actually enjoyed it.")
        open_section(page, "sentiment", "Layer by layer")
        page.locator("#sentiment-lens-submit").click()
        wait_drawn(page, "sentiment-lens")
        wait_drawn(page, "sentiment-dla")
        assert page.evaluate(SIDEWAYS_JS) <= 0
        patch_a_pair(page, "sentiment", "negation: not bad → very bad")
        assert page.evaluate(SIDEWAYS_JS) <= 0
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)])
def test_the_translation_layer_by_layer_follows_the_step_without_sideways_scrolling(page, app_url, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    try:
        open_tab(page, app_url, "Translation")
        translate(page, "Ein Mann fährt mit dem Fahrrad.", decoding="greedy")
        open_section(page, "translation", "Layer by layer")
        page.locator("#translation-lens-submit").click()
        wait_drawn(page, "translation-lens")
        wait_drawn(page, "translation-dla")
        notes = lambda: page.locator("#translation-lens-notes").inner_text()  # noqa: E731
        first = notes()
        assert "Attributed:" in first and page.evaluate(SIDEWAYS_JS) <= 0
        step_forward(page, 1)  # the step slider: the attribution is of the next English token
        page.wait_for_function(
            "t => (document.querySelector('#translation-lens-notes') || {}).innerText !== t", arg=first
        )
        assert "Attributed:" in notes() and page.evaluate(SIDEWAYS_JS) <= 0
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})
