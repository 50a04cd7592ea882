"""The page itself in headless chromium, on the tiny models: the plotting library comes with the page, bold text
stays in the body's font, Analyse leaves the second review alone (issue 25, items 5, 6 and 10), and the plots
below the first heatmap are drawn only near the screen.
Times are printed, never asserted: the CPU here is shared."""

import pytest

from benchmarks import browser

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]

PLOTLY_FETCHES = (
    "t0 => performance.getEntriesByType('resource').filter(e => e.startTime >= t0 && /PlotlyPlot-/.test(e.name)).length"
)


def test_plotly_loads_with_the_page_not_on_the_first_click(page, app_url):
    """The first figure of a fresh page used to fetch and compile plotly (4.6 MB) after the click: 2.2-2.7 s."""
    ready = browser.open_tab(page, app_url, "Sentiment")
    assert page.evaluate("() => window.__plotlyPreload") == "loaded"
    assert page.evaluate(PLOTLY_FETCHES, 0) == 1  # fetched with the page
    clicked = page.evaluate("() => performance.now()")
    seconds = browser.analyze_review(page, "A warm and funny film.")
    assert page.evaluate(PLOTLY_FETCHES, clicked) == 0  # nothing to fetch on the first click
    print(f"\npage ready in {ready:.2f} s; first click to drawn heatmap {seconds:.2f} s")


def test_bold_text_uses_the_bodys_font_face(page, app_url):
    """Bold (700) had no face in the theme's font, so bold words fell back to another, larger-looking font."""
    browser.open_tab(page, app_url, "Sentiment")
    browser.analyze_review(page, "A warm and funny film.")
    page.wait_for_selector("#sentiment-status strong")
    weight = page.evaluate(
        """() => {
      const b = document.querySelector('#sentiment-status strong');
      const style = getComputedStyle(b);
      return style.fontWeight;
    }"""
    )
    assert weight == "600"  # the theme's semibold face (the font ships 400 and 600)


def test_analyse_leaves_the_second_review_empty(page, app_url):
    browser.open_tab(page, app_url, "Sentiment")
    browser.analyze_review(page, "A warm and funny film.")
    assert page.locator("#sentiment-compare-input textarea").input_value() == ""
    page.locator("#sentiment-compare-input textarea").focus()  # asking for the copy still gives it
    page.wait_for_function(
        "() => document.querySelector('#sentiment-compare-input textarea').value === 'A warm and funny film.'"
    )


PLOT = "#sentiment-overview .js-plotly-plot"
SKIPPED_JS = f"selector => !({browser.SHOWN_JS})(selector)"


def test_a_plot_far_below_is_skipped_until_it_is_scrolled_to(page, app_url):
    """viz.page.theme.skip_off_screen: the small multiples are drawn by plotly at once, but the browser lays them out
    and paints them only once they come near the screen; scrolled to, they show."""
    browser.open_tab(page, app_url, "Sentiment")
    browser.analyze_review(page, "A warm and funny film.")
    page.wait_for_selector("#sentiment-overview .heatmaplayer image", state="attached")
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_function(SKIPPED_JS, arg=PLOT, polling="raf")
    browser.wait_drawn(page, "sentiment-overview")
    assert not page.evaluate(SKIPPED_JS, PLOT)
