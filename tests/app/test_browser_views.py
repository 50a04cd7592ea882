"""The attention views in a real headless chromium, on the tiny models: the model view (every layer x head; a click
opens that head), token focus (a click on the large map), hidden tokens renormalised as the pipeline computes
them, and a phone-sized dark page where no two plots draw over each other."""

import json

import browser
import numpy as np
import pytest
import torch
from page_probes import PLOT_JS, TRACE_JS
from tiny_models import make_sentiment_dir

from pipelines.attention import attention_views as av
from pipelines.models.tokenizers_io import PAD
from transformer import ClassifierConfig, TransformerClassifier
from viz.attention import task_views
from viz.examples import BENCH_GERMAN, LONG_REVIEW
from viz.sentiment.handlers import analyze_review

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]
SHORT_REVIEW = "A warm, funny and beautifully acted film about two brothers who finally talk."
PUNCTUATED = "Wow. A dull, slow film; far too long! Still, the music... is lovely?"
SHAPES_JS = f"""([id, name]) => {{ const gd = ({PLOT_JS})(id);
  const s = ((gd && gd.layout.shapes) || []).find(s => s.name === name);
  return s ? [s.x0, s.x1, s.y0, s.y1] : null; }}"""


def open_model_view(page, task: str) -> int:
    """Open the model view's accordion; the number of thumbnails drawn."""
    browser.open_model_view(page, task)
    return page.evaluate(f"id => ({PLOT_JS})(id).data.length", f"{task}-model-view")


@pytest.mark.parametrize(
    "task,large,title",
    [
        ("sentiment", "sentiment-attention", "Layer 2, head 3"),
        ("translation", "translation-attention", "layer 2, head 3"),
    ],
)
def test_model_view_shows_every_layer_and_head_and_a_click_opens_one(page, app_url, task, large, title):
    browser.open_tab(page, app_url, task.title())
    if task == "sentiment":
        browser.analyze_review(page, LONG_REVIEW)
    else:
        browser.translate(page, BENCH_GERMAN, decoding="greedy")
    assert open_model_view(page, task) == 2 * 4  # the tiny models: 2 layers x 4 heads (of each kind)
    colorbars = page.evaluate(f"id => ({PLOT_JS})(id).layout.coloraxis.colorbar !== undefined", f"{task}-model-view")
    assert colorbars  # one shared colour scale, with its bar
    browser.mark_plot(page, large)
    browser.click_plot(page, f"{task}-model-view", subplot="x7y7")  # layer 2 (second row), head 3 (third column)
    page.wait_for_function(
        "([id, t]) => ((document.querySelector('#' + id + ' .gtitle') || {}).textContent || '').includes(t)",
        arg=[large, title],
    )
    checked = page.locator(f"#{task}-head input:checked").evaluate("e => e.closest('label').textContent.trim()")
    assert checked == "3"


def test_an_encoder_thumbnail_opens_the_section_of_its_large_plot(page, app_url):
    """The translator's encoder plot sits in "Inside one head" (viz.page.layout): a click on an encoder thumbnail of
    the model view opens that section and brings the plot, redrawn at the head clicked, into view."""
    browser.open_tab(page, app_url, "Translation")
    browser.translate(page, BENCH_GERMAN, decoding="greedy")
    open_model_view(page, "translation")
    page.locator("#translation-view-kind label", has_text="ncoder").first.click()
    page.wait_for_timeout(1500)  # the thumbnails of the encoder are drawn
    browser.click_plot(page, "translation-model-view", subplot="x7y7")  # layer 2, head 3
    page.wait_for_selector("#translation-section-inside-one-head", state="visible", timeout=30_000)
    page.wait_for_function(
        "t => ((document.querySelector('#translation-encoder .gtitle') || {}).textContent || '').includes(t)",
        arg="head 3",
        timeout=30_000,
    )
    top = page.locator("#translation-encoder").evaluate("e => e.getBoundingClientRect().top")
    assert 0 <= top < page.viewport_size["height"]  # scrolled to


def test_a_token_click_updates_token_focus_and_the_large_maps_highlight(page, app_url):
    browser.open_tab(page, app_url, "Sentiment")
    browser.analyze_review(page, LONG_REVIEW)
    browser.reveal(page, "sentiment-token")  # token focus is in the "All heads" section
    page.wait_for_function("() => document.querySelector('#sentiment-token input') !== null")
    browser.mark_plot(page, "sentiment-attention")
    browser.click_plot(page, "sentiment-attention", 0.5, 0.25)
    browser.wait_redrawn(page, "sentiment-attention")
    token = page.locator("#sentiment-token input").input_value()
    row = int(token.split(":")[0])
    assert page.evaluate(SHAPES_JS, ["sentiment-attention", "focus-row"])[2:] == [row - 0.5, row + 0.5]
    assert page.evaluate(SHAPES_JS, ["sentiment-attention", "focus-col"])[:2] == [row - 0.5, row + 0.5]
    browser.wait_drawn(page, "sentiment-token-focus", ".barlayer .point")
    titles = page.locator("#sentiment-token-focus .annotation-text").all_text_contents()
    assert f"head 1: where {token} looks" in titles and f"head 4: what looks at {token}" in titles
    cut = page.evaluate(SHAPES_JS, ["sentiment-attention", "cut"])
    assert cut[:2] == [15.5, 15.5]  # the tiny model keeps 16 tokens from the start of a long review

    browser.open_tab(page, app_url, "Translation")  # cross-attention: a row is an English step
    browser.translate(page, BENCH_GERMAN, decoding="greedy")
    browser.wait_drawn(page, "translation-encoder")
    browser.mark_plot(page, "translation-attention")
    browser.click_plot(page, "translation-attention", 0.5, 0.1)
    browser.wait_redrawn(page, "translation-attention")
    browser.reveal(page, "translation-token")
    token = page.locator("#translation-token input").input_value()
    assert token.endswith("(English)")
    browser.wait_drawn(page, "translation-token-focus", ".barlayer .point")
    titles = page.locator("#translation-token-focus .annotation-text").all_text_contents()
    assert any("where" in t for t in titles) and not any("what looks at" in t for t in titles)  # German looks at none
    step = int(token.split(":")[0])
    assert page.evaluate(SHAPES_JS, ["translation-attention", "focus-row"])[2:] == [step - 0.5, step + 0.5]
    page.locator("#translation-view-kind label", has_text="encoder self-attention").click()  # German only
    page.wait_for_function(
        "() => [...document.querySelectorAll('#translation-token-focus .annotation-text')]"
        ".some(e => e.textContent.includes('has no English tokens'))"
    )


def test_hiding_tokens_shows_the_rows_the_pipeline_renormalised(page, app_url, sentiment):
    browser.open_tab(page, app_url, "Sentiment")
    browser.analyze_review(page, PUNCTUATED)
    browser.mark_plot(page, "sentiment-attention")
    page.locator("#sentiment-hide-tokens input").check()
    browser.wait_redrawn(page, "sentiment-attention")
    shown = page.evaluate(TRACE_JS, "sentiment-attention")
    view, _, _ = analyze_review(sentiment, PUNCTUATED)  # the same weights, outside the app
    labels = task_views.kinds(view)["self"].q_labels
    hidden = av.hidden_positions([label.split(":", 1)[1] for label in labels])
    expected, kept, _ = av.hide_tokens(view.maps.layer("self", 0).astype(np.float32), hidden, hidden)
    assert shown[0] == [labels[i] for i in kept] and hidden.sum() >= 6
    np.testing.assert_allclose(np.asarray(shown[1]) / 1000, np.minimum(expected[0], 0.999), atol=1.5e-3)
    assert "rows renormalised" in page.locator("#sentiment-attention .g-gtitle").text_content()
    page.locator("#sentiment-hide-tokens input").uncheck()


# Per plot on the page: its box, its title's boxes, the tool bar's box, and each tick label's box with its subplot,
# and each subplot's plot area ([left, top, right, bottom] in pixels).
BOXES_JS = """() => {
  const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
  return plots.filter(p => p.getBoundingClientRect().width > 0).map(p => ({
    id: (p.closest('[id]') || {}).id,
    plot: box(p),
    titles: Array.from(p.querySelectorAll('.gtitle, .gtitle-subtitle')).map(box).filter(b => b[2] > b[0]),
    modebar: p.querySelector('.modebar') ? box(p.querySelector('.modebar')) : null,
    ticks: Array.from(p.querySelectorAll('.xtick text, .ytick text')).map(t => [
      (t.closest('.subplot') || {classList: ['?']}).classList[1], box(t)]).filter(t => t[1][2] > t[1][0]),
    areas: Array.from(p.querySelectorAll('.nsewdrag')).map(a => [a.dataset.subplot, box(a)]),
  }));
}"""


def overlap(a, b, by: float = 1) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > by and min(a[3], b[3]) - max(a[1], b[1]) > by


def collisions(plots: list[dict]) -> list:
    """Titles or tick labels of different plots that overlap; a tick label over another subplot's map; a title
    under the tool bar or cut at the plot's right edge."""
    found = []
    labels = [[*p["titles"], *(b for _, b in p["ticks"])] for p in plots]
    for i, a_boxes in enumerate(labels):
        found += [
            (plots[i]["id"], a, b) for b_boxes in labels[i + 1 :] for a in a_boxes for b in b_boxes if overlap(a, b)
        ]
    for p in plots:
        found += [
            (p["id"], "tick over map", t)
            for s, t in p["ticks"]
            for s2, area in p["areas"]
            if s != s2 and overlap(t, area, 2)
        ]
        found += [
            (p["id"], "title under tool bar", t) for t in p["titles"] if p["modebar"] and overlap(t, p["modebar"])
        ]
        found += [(p["id"], "title cut", t) for t in p["titles"] if t[2] > p["plot"][2] + 1]
    return found


def test_on_a_phone_in_the_dark_no_plot_draws_over_another(page, app_url):
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        for task in ("Sentiment", "Translation"):
            page.goto(app_url + "?__theme=dark")
            page.get_by_role("tab", name=task, exact=False).first.click()
            if task == "Sentiment":
                browser.analyze_review(page, SHORT_REVIEW)  # every token labelled in the small multiples too
                browser.wait_drawn(page, "sentiment-overview")
            else:
                browser.translate(page, BENCH_GERMAN, decoding="greedy")
                browser.wait_drawn(page, "translation-encoder")
            key = task.lower()
            open_model_view(page, key)
            browser.click_plot(page, f"{key}-attention", 0.5, 0.3)
            browser.wait_drawn(page, f"{key}-token-focus", ".barlayer .point")
            if task == "Sentiment":  # the explanation's deletion curve, beside them in the main view
                browser.wait_drawn(page, "sentiment-deletion-curve", ".scatterlayer .trace")
            plots = page.evaluate(BOXES_JS)  # the main view's and the open section's ("All heads")
            assert sum(len(p["ticks"]) for p in plots) > 50 and collisions(plots) == []
            assert max(p["plot"][2] for p in plots) <= 391  # nothing reaches past the screen's edge
            if task == "Sentiment":  # nor the explanation's deletion curve's titles and legend
                page.locator("#sentiment-deletion-curve").scroll_into_view_if_needed()
                assert browser.text_past_right_edge(page, "sentiment-deletion-curve") == []
            ramp = page.evaluate(f"id => ({PLOT_JS})(id)._fullData[0].colorscale[0][1]", f"{key}-attention")
            assert ramp == "#0f172a"  # the dark theme's colour ramp starts dark
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})


COLUMN_TITLES_JS = """id => Array.from(document.querySelectorAll('#' + id + ' .annotation-text'))
  .filter(e => !e.textContent.startsWith('layer'))
  .map(e => { const b = e.getBoundingClientRect(); return [e.textContent, b.left, b.right]; })"""


HEAD_TITLES_JS = """id => Array.from(document.querySelectorAll('#' + id + ' .annotation-text'))
  .filter(e => e.textContent.startsWith('head'))
  .map(e => { const b = e.getBoundingClientRect(); return [e.textContent, b.left, b.right]; })"""


@pytest.fixture(scope="module")
def twelve_heads_url(tmp_path_factory):
    """The app on a tiny classifier of 2 layers x 12 heads, as many heads a layer as the pre-trained model has."""
    from pipelines import SentimentPipeline

    folder = make_sentiment_dir(tmp_path_factory.mktemp("models") / "twelve")
    vocab = json.loads((folder / "config.json").read_text())["vocab_size"]
    torch.manual_seed(4)
    cfg = ClassifierConfig(vocab_size=vocab, d_model=48, n_heads=12, n_layers=2, d_ff=64, max_len=64, pad_id=PAD)
    TransformerClassifier(cfg).save_pretrained(folder)
    with browser.serve_app(SentimentPipeline.from_pretrained(str(folder)), None) as url:
        yield url


def test_twelve_heads_column_titles_stay_apart_on_a_phone(page, twelve_heads_url):
    """The model view's 12 columns on a 390-px screen: their titles ("h10h11h12" ran together) stay apart."""
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        browser.open_tab(page, twelve_heads_url, "Sentiment")
        browser.analyze_review(page, SHORT_REVIEW)
        assert open_model_view(page, "sentiment") == 2 * 12
        titles = page.evaluate(COLUMN_TITLES_JS, "sentiment-model-view")
        assert len(titles) == 12 and [(a[0], b[0]) for a, b in zip(titles, titles[1:]) if a[2] > b[1]] == []
        assert [t for t, _, _ in titles] == [str(h) for h in range(1, 13)]  # the subtitle says they are heads
        # the layer's small multiples, three a row: "head 10head 11head 12" ran together
        page.locator("#sentiment-overview").scroll_into_view_if_needed()
        browser.wait_drawn(page, "sentiment-overview")
        heads = page.evaluate(HEAD_TITLES_JS, "sentiment-overview")
        assert len(heads) == 12
        rows = [heads[i : i + 3] for i in range(0, 12, 3)]
        # at least 10 px apart here: with the real model's longer labels the columns are narrower, and they touched
        assert [(a[0], b[0]) for row in rows for a, b in zip(row, row[1:]) if a[2] > b[1] - 10] == []
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})
