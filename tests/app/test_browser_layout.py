"""The page's layout in headless chromium (viz.page.layout, issue 57).

On the bundled models, as `python app.py` serves them (each tab lands on its worked example): at 1440x900 each tab's
page is at most 2,700 px tall, its main heatmap starts within the first 1,800 px and at most 24 checkboxes are in
sight; at 390x844 no page scrolls sideways (benchmarks/page_layout.py prints the same figures). The tiny models' pages
are shorter than the real ones, so these figures are measured on the bundled models.

On the tiny models: a plot redrawn while its section is hidden fits the section's width when it is opened."""

from pathlib import Path

import browser
import pytest

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]
ASSETS = Path(__file__).resolve().parents[2] / "assets"
BUNDLED = ("sentiment", "sentiment-scratch", "translation", "lm")
TABS = (("sentiment", "Sentiment"), ("translation", "Translation (German → English)"), ("lm", "Next word"))
SLOW_MS = 240_000  # the bundled models' examples, explanations and head tables on a shared CPU


@pytest.fixture(scope="module")
def bundled_url():
    if not all((ASSETS / name / "config.json").exists() for name in BUNDLED):
        pytest.skip("the bundled models are not in assets/")
    from app import build_demo
    from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline

    demo = build_demo(
        SentimentPipeline.from_pretrained(str(ASSETS / "sentiment")),
        TranslationPipeline.from_pretrained(str(ASSETS / "translation")),
        LanguageModelPipeline.from_pretrained(str(ASSETS / "lm")),
        sentiment_models=(str(ASSETS / "sentiment-scratch"),),
        landing=True,
    )
    try:
        yield browser.serve(demo)
    finally:
        demo.close()


def landed_figures(page, url: str, size: tuple[int, int]) -> dict:
    """Each tab's page figures (browser.page_figures) once its worked example is drawn and explained."""
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(url)
    figures = {}
    for task, title in TABS:
        page.get_by_role("tab", name=title).click()
        browser.wait_drawn(page, f"{task}-attention")
        page.wait_for_selector(f"#{task}-explain .attr-legend, #{task}-explain .js-plotly-plot", timeout=SLOW_MS)
        page.wait_for_timeout(1_000)  # the explanation's last redraw laid out
        page.evaluate("() => window.scrollTo(0, 0)")
        figures[task] = browser.page_figures(page, task)
    return figures


def test_each_tab_opens_on_a_page_of_three_screens_at_most(page, bundled_url):
    figures = landed_figures(page, bundled_url, (1440, 900))
    print(f"\n1440x900: {figures}")
    for task, shown in figures.items():
        assert shown["height"] <= 2_700, (task, shown)
        assert shown["heatmap_top"] <= 1_800, (task, shown)
        assert shown["checkboxes"] <= 24, (task, shown)
        assert not shown["sideways"], (task, shown)


def test_on_a_phone_no_tab_scrolls_sideways(page, bundled_url):
    try:
        figures = landed_figures(page, bundled_url, (390, 844))
        print(f"\n390x844: {figures}")
        assert [task for task, shown in figures.items() if shown["sideways"]] == []
        for task, _ in TABS:  # every section's button on the screen, none cut or folded into a menu
            buttons = page.locator(f"#{task}-sections [role=tablist] button").filter(visible=True)
            if page.locator(f"#{task}-sections").is_visible():
                names = [b.strip() for b in buttons.all_text_contents()]
                assert "Compare" in names and "All heads" in names, names
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})


WIDTHS_JS = """id => { const plot = document.querySelector('#' + id + ' .js-plotly-plot');
  return [Math.round(plot.querySelector('.main-svg').getBoundingClientRect().width),
          Math.round(plot.getBoundingClientRect().width)]; }"""


def test_a_plot_redrawn_in_a_hidden_section_fits_it_when_opened(page, app_url):
    """gradio draws a plot that comes while its section is hidden at plotly's default width; opening the section
    fits it to the section (viz/page/js/resize_plots.js)."""
    browser.open_tab(page, app_url, "Sentiment")
    browser.analyze_review(page, "A warm and funny film.")
    browser.wait_drawn(page, "sentiment-overview")  # opens "All heads"
    svg, box = page.evaluate(WIDTHS_JS, "sentiment-overview")
    assert abs(svg - box) <= 2 and box > 900
    browser.open_section(page, "sentiment", "Compare")
    browser.mark_plot(page, "sentiment-attention")
    page.evaluate(browser._MARK_JS, "sentiment-overview")  # noted without opening its section
    page.locator("#sentiment-layer").get_by_label("2", exact=True).check()  # the small multiples redrawn, hidden
    browser.wait_redrawn(page, "sentiment-attention")
    page.wait_for_function(
        "id => { const gd = document.querySelector('#' + id + ' .js-plotly-plot');"
        " return gd && gd.data !== (window.__plotMarks || {})[id]; }",
        arg="sentiment-overview",
    )
    browser.open_section(page, "sentiment", "All heads")
    page.wait_for_function(f"id => {{ const [s, b] = ({WIDTHS_JS})(id); return Math.abs(s - b) <= 2; }}",
                           arg="sentiment-overview")  # fmt: skip
    svg, box = page.evaluate(WIDTHS_JS, "sentiment-overview")
    assert abs(svg - box) <= 2 and box > 900, (svg, box)
