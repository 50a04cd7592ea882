"""The page itself in headless chromium, on the tiny models: the plotting library comes with the page, bold text
is drawn in the body's font, Analyse leaves the second review alone (issue 25, items 5, 6 and 10), and the plots
below the first heatmap are drawn only near the screen.
Times are printed, never asserted: the CPU here is shared."""

import browser
import pytest

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


# Text in the body's font at a weight, measured with two different fallbacks: equal widths when the body's font has
# a face with every glyph of it, different ones when some glyphs fall back.
FALLS_BACK_JS = """async ([weight, text]) => {
  const family = getComputedStyle(document.querySelector('#sentiment-status strong')).fontFamily.split(',')[0];
  await document.fonts.load(`${weight} 14px ${family}`, text);
  const ctx = document.createElement('canvas').getContext('2d');
  const width = fallback => { ctx.font = `${weight} 14px ${family}, ${fallback}`; return ctx.measureText(text).width; };
  return [family, width('serif') !== width('monospace')];
}"""


def test_bold_text_is_drawn_in_the_bodys_font(page, app_url):
    """gradio's default theme declares Source Sans Pro's semibold face, whose file holds 55 glyphs: a bold word was
    drawn in another font but for its capitals A and B ("A" + "ttention"). Bold and semibold text now have every
    letter in the body's font (viz.page.html_head.theme)."""
    browser.open_tab(page, app_url, "Sentiment")
    browser.analyze_review(page, "A warm and funny film.")
    page.wait_for_selector("#sentiment-status strong")
    text = "Attention norm (weight × what the value carries), Bold labels 0123456789"
    for weight in (600, 700):  # the theme's semibold (labels, Markdown's bold) and bold
        family, falls_back = page.evaluate(FALLS_BACK_JS, [weight, text])
        assert "Source Sans Pro" in family and not falls_back, weight
    assert page.evaluate(FALLS_BACK_JS, [400, text]) == [family, False]  # regular text, as before


def test_analyse_leaves_the_second_review_empty(page, app_url):
    browser.open_tab(page, app_url, "Sentiment")
    browser.analyze_review(page, "A warm and funny film.")
    browser.open_section(page, "sentiment", "Compare")
    assert page.locator("#sentiment-compare-input textarea").input_value() == ""
    page.locator("#sentiment-compare-input textarea").focus()  # asking for the copy still gives it
    page.wait_for_function(
        "() => document.querySelector('#sentiment-compare-input textarea').value === 'A warm and funny film.'"
    )


def test_a_review_pasted_into_the_second_box_replaces_the_copy(page, app_url):
    """The copy of the first review comes selected: a visitor who clicks the second box and pastes a review of their
    own gets that review, not the copy with it appended; a second click edits the copy."""
    browser.open_tab(page, app_url, "Sentiment")
    page.locator("#sentiment-input textarea").fill("A warm and funny film.")
    browser.open_section(page, "sentiment", "Compare")
    second = page.locator("#sentiment-compare-input textarea")
    second.click()
    page.wait_for_function(
        "() => { const t = document.querySelector('#sentiment-compare-input textarea');"
        " return t.value === 'A warm and funny film.' && t.selectionEnd - t.selectionStart === t.value.length; }"
    )
    page.keyboard.insert_text("A dull film.")  # as a paste does
    assert second.input_value() == "A dull film."

    second.fill("")
    page.locator("#sentiment-input textarea").click()
    second.click()
    page.wait_for_function("() => document.querySelector('#sentiment-compare-input textarea').value.length > 0")
    second.click()  # the second click places the caret
    page.keyboard.press("End")
    page.keyboard.type(" Really.")
    assert second.input_value() == "A warm and funny film. Really."


def test_a_view_that_waits_for_the_visitor_is_no_blank_box(page, app_url):
    """viz.page.theme.waiting_plot: token focus, the clicked head's map and the comparison's diff are left out of
    the page until they have a figure (a first visit showed five blank boxes), and show once it comes."""
    browser.open_tab(page, app_url, "Sentiment")
    browser.analyze_review(page, "A warm and funny film.")
    browser.wait_drawn(page, "sentiment-overview")
    for waiting in ("sentiment-token-focus", "sentiment-heads-heatmap", "sentiment-compare-diff"):
        browser.reveal(page, waiting)  # its section open: on the page, and still out of sight
        assert page.locator(f"#{waiting}").count() == 1 and not page.locator(f"#{waiting}").is_visible(), waiting
    assert page.locator("#sentiment-attention").is_visible()  # the first heatmap is never left out
    browser.click_plot(page, "sentiment-attention", 0.5, 0.5)
    browser.wait_drawn(page, "sentiment-token-focus", ".barlayer .point")
    assert page.locator("#sentiment-token-focus").is_visible()


def test_the_heads_to_switch_off_are_one_multi_select_not_a_box_per_head(page, app_url):
    """72 heads' checkboxes took three phone screens (1,196 px at 390 px wide); then they scrolled in a box of 21rem.
    The heads to switch off are one multi-select now (issue 57): no checkbox, every head of the model an option, and
    on a phone one line, without sideways scrolling."""
    browser.open_tab(page, app_url, "Sentiment")
    browser.open_section(page, "sentiment", "What each head does")
    off = page.locator("#sentiment-heads-off")
    size = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        assert off.locator("input[type=checkbox]").count() == 0
        assert off.bounding_box()["height"] <= 130  # 123 px measured: its label, a line of help, the input
        off.locator("input[role=combobox]").click()
        assert off.get_by_role("option").count() == 8  # every head still there (the tiny model's 2 x 4)
        assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    finally:
        page.set_viewport_size(size)


GALLERY_JS = """id => { const g = document.querySelector('#' + id + ' .gallery');
  const tops = new Set(Array.from(g.querySelectorAll('.gallery-item')).map(b => Math.round(b.offsetTop)));
  return [tops.size, g.scrollWidth > g.clientWidth]; }"""


def test_on_a_phone_the_examples_are_one_row_that_scrolls_sideways(page, app_url):
    """The examples stood between each tab's button and its result (the seven German captions took 280 px): on a
    phone they are one row that scrolls sideways, so the result of a click comes on the screen of its button."""
    browser.open_tab(page, app_url, "Sentiment")
    rows, _ = page.evaluate(GALLERY_JS, "sentiment-examples")
    assert rows > 1  # a wide screen: as before, they wrap
    size = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.wait_for_function(f"id => ({GALLERY_JS})(id)[0] === 1", arg="sentiment-examples")
        assert page.evaluate(GALLERY_JS, "sentiment-examples") == [1, True]
        for name in ("Sentiment", "Translation (German → English)", "Next word"):  # one row, none in the '...' menu
            assert page.get_by_role("tab", name=name).is_visible(), name
        page.get_by_role("tab", name="Translation (German → English)").click()
        page.wait_for_selector("#translation-examples .gallery-item")
        assert page.evaluate(GALLERY_JS, "translation-examples") == [1, True]
    finally:
        page.set_viewport_size(size)


PLOT = "#sentiment-overview .js-plotly-plot"
SKIPPED_JS = f"selector => !({browser.SHOWN_JS})(selector)"


def test_a_plot_far_below_is_skipped_until_it_is_scrolled_to(page, app_url):
    """viz.page.theme.skip_off_screen: the small multiples are drawn by plotly at once, but the browser lays them out
    and paints them only once they come near the screen; scrolled to, they show."""
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": 500})  # the tiny model's page is short: keep it far
    try:
        browser.open_tab(page, app_url, "Sentiment")
        browser.analyze_review(page, "A warm and funny film.")
        browser.reveal(page, "sentiment-overview")  # the "All heads" section
        page.wait_for_selector("#sentiment-overview .heatmaplayer image", state="attached")
        page.evaluate("() => window.scrollTo(0, 0)")
        page.wait_for_function(SKIPPED_JS, arg=PLOT, polling="raf")
        browser.wait_drawn(page, "sentiment-overview")
        assert not page.evaluate(SKIPPED_JS, PLOT)
    finally:
        page.set_viewport_size(size)


def test_an_example_runs_as_a_click_does(page, app_url):
    """An example only filled the box: the last review's label and maps stayed beside another review's text."""
    from viz.examples import GERMAN, REVIEWS

    browser.open_tab(page, app_url, "Sentiment")
    browser.analyze_review(page, "A warm and funny film.")
    status = page.locator("#sentiment-status").inner_text()
    browser.mark_plot(page, "sentiment-attention")
    name, text = REVIEWS[1]
    page.locator("#sentiment-examples .gallery-item", has_text=name).first.click()
    page.wait_for_function("t => document.querySelector('#sentiment-input textarea').value === t", arg=text)
    browser.wait_redrawn(page, "sentiment-attention")
    page.wait_for_function("t => document.querySelector('#sentiment-status').innerText !== t", arg=status)

    page.get_by_role("tab", name="Translation (German → English)").click()
    page.locator("#translation-examples .gallery-item").first.click()
    page.wait_for_function("t => document.querySelector('#translation-input textarea').value === t", arg=GERMAN[0])
    page.wait_for_function("() => document.querySelector('#translation-output textarea').value.length > 0")
    browser.wait_drawn(page, "translation-attention")
