"""The app in a real headless chromium, on the tiny models: submit, heatmap, hover, layer, step slider.

Times from click to drawn heatmap are measured and reported (record_property, and printed with -s),
never asserted: the CPU here is shared.
"""

import browser
import pytest

from viz.examples import BENCH_GERMAN, LONG_REVIEW, REVIEW_LABELS, REVIEWS

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]


@pytest.fixture
def dialogs(page):
    """Messages of any alert() a page runs (there must be none)."""
    seen = []
    handler = lambda d: (seen.append(d.message), d.dismiss())  # noqa: E731
    page.on("dialog", handler)
    yield seen
    page.remove_listener("dialog", handler)


def assert_png(path) -> None:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_sentiment_tab(page, app_url, tmp_path, record_property, dialogs):
    browser.open_tab(page, app_url, "Sentiment")
    seconds = browser.analyze_review(page, LONG_REVIEW)
    record_property("sentiment_click_to_heatmap_s", round(seconds, 3))
    print(f"\nsentiment: {seconds:.2f} s from click to heatmap")

    status = page.locator("#sentiment-status").text_content()
    predicted = status.split()[0]
    assert predicted in ("positive", "negative") and "tokens read" in status
    assert page.locator("#sentiment-label [data-testid=label-output-value]").text_content().strip() == predicted
    assert "Layer 1, head 1" in browser.plot_title(page, "sentiment-attention")
    tip = browser.hover_heatmap(page, "sentiment-attention", 0.3, 0.4)
    assert "query" in tip and "key" in tip and "weight 0." in tip
    assert ":" in tip.split("query", 1)[1]  # 'query 12:token'

    browser.choose(page, "sentiment-layer", "2", redraws=("sentiment-attention", "sentiment-overview"))
    assert "Layer 2, head 1" in browser.plot_title(page, "sentiment-attention")
    browser.choose(page, "sentiment-head", "3", redraws=("sentiment-attention",))
    assert "Layer 2, head 3" in browser.plot_title(page, "sentiment-attention")
    assert page.locator("#sentiment-highlight .tok").count() > 20
    # Explanations: a diverging legend, faithfulness beside it, and switching methods redraws both.
    page.wait_for_selector("#sentiment-highlight .attr-legend-bar")
    browser.wait_drawn(page, "sentiment-deletion-curve", ".scatterlayer .trace")
    y_title = page.locator("#sentiment-deletion-curve .ytitle").bounding_box()
    plot_area = page.locator("#sentiment-deletion-curve .nsewdrag").bounding_box()
    assert y_title["height"] <= plot_area["height"], "the y-axis title runs past the plot into the figure's title"
    assert browser.text_past_right_edge(page, "sentiment-deletion-curve") == []  # the title ran past it
    assert "random" in page.locator("#sentiment-faithfulness").text_content()
    page.locator("#sentiment-highlight-mode").get_by_label("Occlusion (leave one word out)").check()
    page.wait_for_function(
        """() => ['sentiment-highlight', 'sentiment-faithfulness'].every(id =>
             (document.querySelector('#' + id) || {}).textContent.includes('Occlusion'))"""
    )
    assert "against" in page.locator("#sentiment-highlight .attr-legend").text_content()
    shot = browser.screenshot(page, tmp_path / "screenshot-sentiment.png")
    assert_png(shot)

    # Markup in a review is shown as text and never runs.
    browser.analyze_review(page, "A fine film <script>alert(1)</script> <img src=x onerror=alert(2)>")
    page.wait_for_function(  # the explanation follows the heatmaps
        "() => (document.querySelector('#sentiment-highlight .token-text') || {}).textContent.includes('A fine film')"
    )
    assert page.locator("#sentiment-highlight script, #sentiment-highlight img").count() == 0
    assert "<script>alert(1)</script>" in page.locator("#sentiment-highlight .token-text").text_content()
    assert dialogs == []


def test_an_example_the_model_gets_wrong_is_flagged(page, app_url):
    """Clicking an example review fills the box and analyses it, as a click on the button does; the status then says
    when the model disagrees with what a reader calls that example, and only then (one example of each reader's
    label). The plot is marked before the example's click: its own run may draw before a mark placed after it (at
    once, where the result was kept from an earlier run), and a second press would draw the same figure again,
    which gradio does not redraw."""
    browser.open_tab(page, app_url, "Sentiment")
    for name in ("Sentence, negation", "Sentence, 'yet'"):
        text = dict(REVIEWS)[name]
        browser.mark_plot(page, "sentiment-attention")
        page.get_by_role("button", name=name, exact=True).click()
        page.wait_for_function(
            "t => document.querySelector('#sentiment-input textarea').value === t", arg=text, timeout=15_000
        )
        browser.wait_redrawn(page, "sentiment-attention")
        status = page.locator("#sentiment-status").text_content()
        wrong = status.split()[0] != REVIEW_LABELS[name]
        assert ("The model gets this example wrong" in status) == wrong, (name, status)
        if wrong:
            assert f'"{name}"' in status and REVIEW_LABELS[name] in status


def test_translation_tab(page, app_url, tmp_path, record_property):
    browser.open_tab(page, app_url, "Translation")
    seconds = browser.translate(page, BENCH_GERMAN, decoding="greedy")
    record_property("translation_click_to_heatmap_s", round(seconds, 3))
    print(f"\ntranslation: {seconds:.2f} s from click to heatmap")

    assert "greedy decoding" in page.locator("#translation-status").text_content()
    assert "Cross-attention, layer 1, head 1" in browser.plot_title(page, "translation-attention")
    tip = browser.hover_heatmap(page, "translation-attention", 0.5, 0.3)
    assert "English" in tip and "German" in tip and "weight 0." in tip

    assert "Step 1 of" in browser.plot_title(page, "translation-step-heads")
    browser.step_forward(page, 2)
    assert "Step 3 of" in browser.plot_title(page, "translation-step-heads")
    assert "Step 3:" in browser.plot_title(page, "translation-step-topk")

    browser.choose(page, "translation-layer", "2", redraws=("translation-attention", "translation-step-heads"))
    assert "layer 2" in browser.plot_title(page, "translation-attention")
    assert "Step 3 of" in browser.plot_title(page, "translation-step-heads")  # the step is kept
    # Attribution over the source with every head's agreement, and its faithfulness, follow the translation.
    browser.wait_drawn(page, "translation-attribution")
    browser.wait_drawn(page, "translation-head-agreement")
    browser.reveal(page, "translation-faithfulness")  # its accordion, under the explanation
    page.wait_for_function("() => document.querySelector('#translation-faithfulness').textContent.includes('random')")
    assert "English step × German token" in browser.plot_title(page, "translation-attribution")
    assert_png(browser.screenshot(page, tmp_path / "screenshot-translation.png"))


def test_changing_layer_without_a_result_says_why_nothing_is_drawn(page, app_url):
    """A fresh session (or one whose result expired) has nothing to redraw: a toast says so and how to fix it."""
    browser.open_tab(page, app_url, "Sentiment")
    browser.choose(page, "sentiment-layer", "2")
    toast = page.get_by_text("There is no result to redraw", exact=False)
    toast.first.wait_for(timeout=15_000)
    assert "15 minutes" in toast.first.text_content()


def test_a_new_figure_is_drawn_once(page, app_url):
    """Gradio shows each new figure in a new plotly div; the div it replaces must not be drawn with the new
    figure first (that doubled the time from click to drawn heatmap: viz/page/js/plotly_wrapper.js)."""
    browser.open_tab(page, app_url, "Sentiment")
    browser.analyze_review(page, "A warm and funny film.")
    rows = "() => window.__oldDiv.data[0].y.join(' ')"
    page.evaluate("() => { window.__oldDiv = document.querySelector('#sentiment-attention .js-plotly-plot'); }")
    before = page.evaluate(rows)
    browser.analyze_review(page, "A dull, lifeless and far too long film.")
    assert page.evaluate("() => window.__oldDiv.isConnected") is False  # replaced by a new div...
    assert page.evaluate(rows) == before  # ...that was never drawn with the new review
    now = page.evaluate("() => document.querySelector('#sentiment-attention .js-plotly-plot').data[0].y.join(' ')")
    assert now.count(":") > before.count(":")  # the longer review's tokens


# Every value the aria-busy attribute of an element takes, in order (null: removed).
_WATCH_BUSY_JS = """id => {
  const element = document.getElementById(id);
  window.__busy = [];
  new MutationObserver(() => window.__busy.push(element.getAttribute('aria-busy')))
    .observe(element, {attributes: true, attributeFilter: ['aria-busy']});
}"""


@pytest.mark.parametrize(
    "tab, busy, run",
    [
        ("Sentiment", "sentiment-label", lambda page: browser.analyze_review(page, "A warm and funny film.")),
        ("Translation", "translation-output", lambda page: browser.translate(page, BENCH_GERMAN)),
    ],
)
def test_a_running_model_dims_the_result_it_replaces(page, app_url, tab, busy, run):
    """The button's event shows no gradio progress (viz.server.hosting.first_view): the output the new result
    replaces is marked aria-busy, and so dimmed, from the click until the new result is shown."""
    browser.open_tab(page, app_url, tab)
    page.evaluate(_WATCH_BUSY_JS, busy)
    run(page)
    page.wait_for_function("() => window.__busy.length >= 2")
    assert page.evaluate("() => window.__busy") == ["true", None]  # marked once, then cleared
    opacity = "id => getComputedStyle(document.getElementById(id)).opacity"
    assert page.evaluate(opacity, busy) == "1"
    page.evaluate("id => document.getElementById(id).setAttribute('aria-busy', 'true')", busy)
    assert page.evaluate(opacity, busy) == "0.55"


def test_a_failed_run_clears_the_busy_mark(page):
    """Gradio's page chains no .then step after a failed event: hosting.after_paint's failure step clears the mark
    (a small app whose button always fails, wired as the tabs' buttons are)."""
    import gradio as gr

    from viz.server import hosting

    with gr.Blocks() as demo:
        box = gr.Textbox(elem_id="box")
        out = gr.Textbox(elem_id="out")
        button = gr.Button(elem_id="go")

        def fail(text):
            raise gr.Error("always")

        hosting.after_paint(button.click(fail, [box], [out], **hosting.first_view(out)), out)
    url = browser.launch_local(demo)
    try:
        page.goto(url)
        page.wait_for_selector("#go")
        page.evaluate(_WATCH_BUSY_JS, "out")
        page.locator("#go").click()
        page.wait_for_function("() => window.__busy.length >= 2")
        assert page.evaluate("() => window.__busy") == ["true", None]
    finally:
        demo.close()
