"""What a first visit shows (app.build_demo(landing=True), as `python app.py` serves it): the Learn tab, open on load
and walked through its preloaded sentence; each task tab opens on a worked example when first shown, run as a click
runs it, instead of a page of empty plots; a link's own text always wins."""

from urllib.parse import urlencode

import browser
import pytest

from viz.examples import LANDING

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]
LEARN_AT_JS = "text => ((document.querySelector('#learn-progress') || {}).textContent || '').includes(text)"
BOX_IS_JS = "([id, text]) => { const t = document.querySelector(`#${id} textarea`); return t && t.value === text; }"


@pytest.fixture(scope="module")
def landing_url(sentiment, translation):
    from app import build_demo

    demo = build_demo(sentiment, translation, landing=True)
    try:
        yield browser.serve(demo)
    finally:
        demo.close()


def test_each_tab_opens_on_its_example_run(page, landing_url):
    page.goto(landing_url)
    page.wait_for_function(LEARN_AT_JS, arg="Step 1 of")  # the Learn tab is the one open on load
    assert page.get_by_role("tab", name="Learn").get_attribute("aria-selected") == "true"
    assert page.locator("#sentiment-attention .main-svg").count() == 0  # a task tab runs when it is opened
    page.get_by_role("tab", name="Sentiment").click()
    page.wait_for_function(BOX_IS_JS, arg=["sentiment-input", LANDING["sentiment"]])
    browser.wait_drawn(page, "sentiment-attention")
    page.wait_for_selector("#sentiment-status strong")  # the label and how sure, as after a click
    assert "tokens read" in page.locator("#sentiment-status").text_content()
    assert page.locator("#translation-attention .main-svg").count() == 0  # the other tab runs when it is opened

    page.get_by_role("tab", name="Translation (German → English)").click()
    page.wait_for_function(BOX_IS_JS, arg=["translation-input", LANDING["translation"]])
    browser.wait_drawn(page, "translation-attention")
    page.wait_for_function("() => document.querySelector('#translation-output textarea').value.length > 0")


def test_a_link_opens_its_own_text_not_the_example(page, landing_url):
    page.goto(f"{landing_url}?{urlencode({'text': 'A dull film.'})}")
    page.wait_for_function(BOX_IS_JS, arg=["sentiment-input", "A dull film."])
    browser.wait_drawn(page, "sentiment-attention")
    page.wait_for_selector("#sentiment-status strong")
    assert page.locator("#sentiment-input textarea").input_value() == "A dull film."
    page.get_by_role("tab", name="Translation (German → English)").click()
    page.wait_for_selector("#translation-input textarea", state="visible")
    page.wait_for_timeout(1_000)  # time enough for a landing to fill the box, had it started
    assert page.locator("#translation-input textarea").input_value() == ""


def test_a_tab_lands_once_and_then_keeps_the_visitors_text(page, landing_url):
    page.goto(landing_url)
    page.get_by_role("tab", name="Sentiment").click()
    browser.wait_drawn(page, "sentiment-attention")
    page.get_by_role("tab", name="Translation (German → English)").click()
    page.wait_for_function(BOX_IS_JS, arg=["translation-input", LANDING["translation"]])
    browser.wait_drawn(page, "translation-attention")
    browser.translate(page, "Zwei Hunde spielen.")
    page.get_by_role("tab", name="Sentiment").click()
    page.get_by_role("tab", name="Translation (German → English)").click()
    page.wait_for_timeout(1_000)  # time enough for a second landing to fill the box, had it started
    assert page.locator("#translation-input textarea").input_value() == "Zwei Hunde spielen."


def test_an_address_that_names_only_a_tab_opens_it_on_its_example(page, landing_url):
    """`?tab=translation`, typed by hand: the translation tab opens and lands; the sentiment tab, not shown, does
    not run its example meanwhile, and lands when it is first opened (it stayed empty before)."""
    page.goto(f"{landing_url}?tab=translation")
    page.wait_for_function(BOX_IS_JS, arg=["translation-input", LANDING["translation"]])
    browser.wait_drawn(page, "translation-attention")
    assert page.locator("#sentiment-attention .main-svg").count() == 0
    assert page.evaluate("() => (document.querySelector('#sentiment-input textarea') || {value: ''}).value") == ""
    page.get_by_role("tab", name="Sentiment").click()
    page.wait_for_function(BOX_IS_JS, arg=["sentiment-input", LANDING["sentiment"]])
    browser.wait_drawn(page, "sentiment-attention")
    page.wait_for_selector("#sentiment-status strong")
    page.locator("#sentiment-input textarea").fill("A dull film.")
    page.get_by_role("tab", name="Translation (German → English)").click()
    page.get_by_role("tab", name="Sentiment").click()
    page.wait_for_timeout(1_000)  # time enough for a second landing to fill the box, had it started
    assert page.locator("#sentiment-input textarea").input_value() == "A dull film."
