"""The Learn tab in a real headless chromium, on the tiny models, at 1440 x 900 and 390 x 844: it is the tab open on
load; Next walks from step 1 to the last, drawing each step's title, text, figure, code and check; ?learn=5 opens step
5; a new sentence redraws the current step; the arrow keys move; the temperature slider redraws the next-token chart
without a model run; nothing scrolls sideways on the phone."""

import re

import browser
import pytest

from pipelines import learn as library

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]
SIZES = [(1440, 900), (390, 844)]
SIDEWAYS_JS = "() => document.documentElement.scrollWidth - window.innerWidth"
# The figure's data as plotly holds it now, to tell a redraw (gradio calls Plotly.react on the same div)
MARK_JS = "() => { window.__learnMark = (document.querySelector('#learn-figure .js-plotly-plot') || {}).data; }"
REDRAWN_JS = """() => { const gd = document.querySelector('#learn-figure .js-plotly-plot');
  return !!gd && !!gd.data && gd.data !== window.__learnMark && !!gd._fullLayout; }"""
WALKED_JS = "() => !((document.querySelector('#learn-status') || {}).textContent || '').includes('being walked')"
PROGRESS_JS = "text => ((document.querySelector('#learn-progress') || {}).textContent || '').includes(text)"


@pytest.fixture(scope="module")
def walks():
    """The library's walks the served app makes (each runs a model once): counted."""
    calls, walk = [], library.walk

    def counted(pipe, text, name=None):
        calls.append(name)
        return walk(pipe, text, name)

    mp = pytest.MonkeyPatch()
    mp.setattr(library, "walk", counted)
    yield calls
    mp.undo()


@pytest.fixture(scope="module")
def learn_url(sentiment, translation, lm, walks):
    from app import build_demo

    demo = build_demo(sentiment, translation, lm, cache=False)
    try:
        yield browser.serve(demo)
    finally:
        demo.close()


def _at(page, k: int) -> int:
    """Wait until the page shows step k (1-based) drawn, every model walked; the number of steps."""
    page.wait_for_function(PROGRESS_JS, arg=f"Step {k} of ")
    page.wait_for_function(WALKED_JS)
    page.wait_for_selector("#learn-figure .js-plotly-plot .main-svg", state="attached")
    text = page.locator("#learn-progress").text_content()
    return int(re.search(r"Step \d+ of (\d+)", text).group(1))


def _step_is_drawn(page) -> None:
    assert page.locator("#learn-title h2").text_content().strip()
    assert len(page.locator("#learn-text").text_content().split()) > 3
    code = page.locator("#learn-code").text_content()
    assert re.search(r"transformer/\S+\.py, lines? \d+", code) or "no lines of its own" in code
    check = page.locator("#learn-check").text_content()
    assert re.search(r"max \|difference\| = \S+", check) or "computes nothing to check" in check


@pytest.mark.parametrize("size", SIZES, ids=["desktop", "phone"])
def test_the_learn_tab_opens_first_and_next_draws_every_step(page, learn_url, size):
    page.set_viewport_size(dict(zip(("width", "height"), size, strict=True)))
    page.goto(learn_url)
    assert page.get_by_role("tab", name="Learn").get_attribute("aria-selected") == "true"
    n = _at(page, 1)
    assert n >= 5
    for k in range(1, n + 1):
        _at(page, k)
        _step_is_drawn(page)
        assert page.locator("#learn-map .learn-part.is-current").count() == 1
        assert page.evaluate(SIDEWAYS_JS) <= 0, f"step {k} scrolls sideways at {size}"
        if k < n:
            page.locator("#learn-next").click()
    page.locator("#learn-back").click()
    _at(page, n - 1)


def test_a_link_opens_its_step_and_the_arrow_keys_move(page, learn_url):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{learn_url}?learn=5")
    _at(page, 5)
    _step_is_drawn(page)
    page.locator("#learn-title").click()  # the page, not a text box, has the keys
    page.keyboard.press("ArrowRight")
    _at(page, 6)
    page.keyboard.press("ArrowLeft")
    _at(page, 5)
    page.locator("#learn-input textarea").press("ArrowLeft")  # typing: the key is the text box's
    page.wait_for_timeout(500)
    assert "Step 5 of" in page.locator("#learn-progress").text_content()
    page.locator("#learn-map button[data-step='0']").first.click()  # a part of the map: its step
    _at(page, 1)


def test_a_new_sentence_redraws_the_current_step(page, learn_url, walks):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{learn_url}?learn=2")
    _at(page, 2)
    before = page.locator("#learn-figure").inner_html()
    called = len(walks)
    page.evaluate(MARK_JS)
    page.locator("#learn-input textarea").fill("Dull, dull, dull.")
    page.locator("#learn-submit").click()
    page.wait_for_function(REDRAWN_JS)
    _at(page, 2)
    assert len(walks) > called and page.locator("#learn-figure").inner_html() != before


def test_the_temperature_slider_redraws_the_next_token_chart_without_a_model_run(page, learn_url, walks):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(learn_url)
    n = _at(page, 1)
    page.goto(f"{learn_url}?learn={n}")
    _at(page, n)
    while page.locator("#learn-temperature").is_hidden():  # back from the last step to the next token's
        page.locator("#learn-back").click()
        page.wait_for_timeout(300)
        if "Step 1 of" in page.locator("#learn-progress").text_content():
            pytest.skip("the library's walk has no next-token step yet")
    called = len(walks)
    page.evaluate(MARK_JS)
    browser.click_slider(page, "learn-temperature", 0.1)
    page.wait_for_function(REDRAWN_JS)
    assert len(walks) == called


def test_the_dark_theme_draws_the_learn_tab(page, learn_url):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{learn_url}?__theme=dark")
    _at(page, 1)
    assert page.evaluate("() => document.body.classList.contains('dark')")
    assert page.evaluate(SIDEWAYS_JS) <= 0
