"""Share, download and compare in a real headless chromium, on the tiny models: a link opens a view without
typing, "Download data" saves JSON that agrees with the API, plots save PNG and SVG, a comparison shows two
labels (or two translations)."""

import json
from pathlib import Path
from urllib.parse import urlencode

import browser
import pytest
from gradio_client import Client

from viz.examples import contrast_pairs

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]
REVIEW = "A warm, funny film – „wunderbar“ <b>really</b> 🎬"


def open_review_link(page, app_url: str, **view) -> str:
    """Open a link to REVIEW (and the given view) unless the page shows it already; returns the query."""
    query = urlencode({"tab": "sentiment", "text": REVIEW, **view})
    if page.url != f"{app_url}?{query}":
        page.goto(f"{app_url}?{query}")
    browser.wait_drawn(page, "sentiment-attention")
    return query


def download(page, click_selector: str) -> Path:
    with page.expect_download(timeout=browser.TIMEOUT_MS) as info:
        page.locator(click_selector).click()
    return Path(info.value.path()), info.value.suggested_filename


def test_a_link_opens_the_review_and_its_view_without_typing(page, app_url):
    query = open_review_link(page, app_url, layer=2, head=3, method="rollout", hide=1)
    assert page.locator("#sentiment-input textarea").input_value() == REVIEW
    assert page.locator("#sentiment-hide-tokens input").is_checked()  # it came back unticked
    label = page.locator("#sentiment-label [data-testid=label-output-value]").text_content().strip()
    assert label in ("positive", "negative") and label in page.locator("#sentiment-status").text_content()
    assert "Layer 2, head 3" in browser.plot_title(page, "sentiment-attention")
    assert page.locator("#sentiment-highlight-mode input[value=rollout]").is_checked()

    assert not page.locator("#sentiment-share-link").is_visible()  # no empty box before there is a link
    page.locator("#sentiment-share").click()
    page.wait_for_function(
        "() => (document.querySelector('#sentiment-share-link textarea') || {value: ''}).value.startsWith('http')"
    )
    assert page.locator("#sentiment-share-link textarea").input_value() == f"{app_url}?{query}".replace("%20", "+")


def test_a_link_with_layers_reads_the_review_layer_by_layer(page, app_url):
    """`layers=1` opens the Layer by layer section and draws it for the review the link runs, with no click; the copy
    link of that view keeps it."""
    open_review_link(page, app_url, layers=1)
    browser.wait_drawn(page, "sentiment-lens")
    browser.wait_drawn(page, "sentiment-dla")
    assert "Attributed:" in page.locator("#sentiment-lens-notes").inner_text()
    browser.reveal(page, "sentiment-share")
    page.locator("#sentiment-share").click()
    page.wait_for_function(
        "() => ((document.querySelector('#sentiment-share-link textarea') || {}).value || '').includes('layers=1')"
    )
    # a new review shown is read layer by layer too, with no click: the section follows the result
    before = page.locator("#sentiment-lens-notes").inner_text()
    browser.analyze_review(page, "Dull, slow and far too long.")
    page.wait_for_function(
        "t => (document.querySelector('#sentiment-lens-notes') || {}).innerText !== t", arg=before, timeout=60_000
    )
    assert "Attributed:" in page.locator("#sentiment-lens-notes").inner_text()


def test_download_data_agrees_with_the_api(page, app_url):
    open_review_link(page, app_url, layer=2, head=3, method="rollout")
    path, name = download(page, "#sentiment-download")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert name.startswith("attention-sentiment-") and name.endswith(".json")
    label, _ = Client(app_url, verbose=False, analytics_enabled=False).predict(REVIEW, api_name="/sentiment")
    assert data["input"]["text"] == REVIEW and data["prediction"]["label"] == label["label"]
    for c in label["confidences"]:
        assert data["prediction"]["probabilities"][c["label"]] == pytest.approx(c["confidence"], abs=1e-5)
    n = len(data["tokens"])
    assert len(data["attentions"]["self"]) == 2 and len(data["attentions"]["self"][0]) == 4
    assert len(data["attentions"]["self"][1][3]) == n and len(data["attentions"]["self"][1][3][0]) == n


@pytest.mark.parametrize("title,suffix", [("Download plot as a PNG", ".png"), ("Download plot as SVG", ".svg")])
def test_every_plot_saves_png_and_svg(page, app_url, title, suffix):
    open_review_link(page, app_url, layer=2, head=3, method="rollout")
    page.locator("#sentiment-attention .nsewdrag").first.hover()
    path, name = download(page, f'#sentiment-attention .modebar-btn[data-title="{title}"]')
    assert name == f"sentiment-attention{suffix}"
    head = path.read_bytes()[:200]
    assert head.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in head


def test_a_comparison_shows_two_labels_and_the_aligned_diff(page, app_url):
    open_review_link(page, app_url, layer=2, head=3, method="rollout")
    browser.open_section(page, "sentiment", "Compare")
    second = page.locator("#sentiment-compare-input textarea")
    second.fill("")
    page.locator("#sentiment-input textarea").focus()  # focus elsewhere, then come back as a user would
    second.click()  # an empty second box takes a copy of the first, to edit
    page.wait_for_function("() => document.querySelector('#sentiment-compare-input textarea').value.length > 0")
    assert second.input_value() == REVIEW
    second.fill("A dull, clumsy film – „langweilig“ <b>really</b> 🎬")
    page.locator("#sentiment-compare-submit").click()
    page.wait_for_selector("#sentiment-compare-output .compare-label")
    labels = page.locator("#sentiment-compare-output .compare-label").all_text_contents()
    assert len(labels) == 2 and set(labels) <= {"positive", "negative"}
    browser.wait_drawn(page, "sentiment-compare-diff")
    assert "layer 2, head 3" in browser.plot_title(page, "sentiment-compare-diff")
    assert page.locator("#sentiment-compare-output ins").count() > 0  # inserted tokens are marked
    assert page.locator("#sentiment-compare-output b").count() == 0  # the markup is shown, never run

    # A contrast pair: one click fills both reviews and compares them.
    first, second_text, kind = contrast_pairs()[0]
    before = page.locator("#sentiment-compare-output").inner_html()
    status = page.locator("#sentiment-status").inner_text()
    browser.mark_plot(page, "sentiment-attention")
    page.get_by_role("button", name=f"{kind}: {first[:40]}").click()
    page.wait_for_function(
        "t => document.querySelector('#sentiment-compare-input textarea').value === t", arg=second_text
    )
    page.wait_for_function("html => document.querySelector('#sentiment-compare-output').innerHTML !== html", arg=before)
    assert page.locator("#sentiment-input textarea").input_value() == first
    assert page.locator("#sentiment-compare-output .compare-label").count() == 2
    # The first review went into the tab's own box, and the tab's result is now its (it stayed the last review's)
    browser.wait_redrawn(page, "sentiment-attention")
    page.wait_for_function("t => document.querySelector('#sentiment-status').innerText !== t", arg=status)


def test_a_translation_link_and_comparison(page, app_url):
    query = urlencode({"tab": "translation", "text": "Zwei Hunde spielen.", "decoding": "greedy", "step": 2})
    page.goto(f"{app_url}?{query}")
    browser.wait_drawn(page, "translation-step-heads")
    assert page.locator("#translation-input textarea").input_value() == "Zwei Hunde spielen."
    assert "greedy decoding" in page.locator("#translation-status").text_content()
    assert "Step 2 of" in browser.plot_title(page, "translation-step-heads")

    browser.open_section(page, "translation", "Compare")
    page.locator("#translation-compare-input textarea").fill("Drei Hunde spielen.")
    page.locator("#translation-compare-submit").click()
    page.wait_for_selector("#translation-compare-output .compare-label")
    assert page.locator("#translation-compare-output .compare-label").count() == 2
    browser.wait_drawn(page, "translation-compare-diff")
    assert "Cross-attention" in browser.plot_title(page, "translation-compare-diff")
