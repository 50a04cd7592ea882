"""The sentiment tab's model choice (#sentiment-model) in a real headless chromium: two models of different sizes
in one tab; choosing the other one reads the same review again, resizes the layer and head choices, and the
compare-models panel puts both side by side."""

import json

import browser
import pytest
import torch
from tiny_models import make_sentiment_dir

from pipelines.models.tokenizers_io import PAD
from transformer import ClassifierConfig, TransformerClassifier

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]
REVIEW = "A warm, funny and beautifully acted film about two brothers who finally talk."


def small_model_dir(folder, like):
    """A second model beside the tiny one: 1 layer x 2 heads, same tokenizer, a display name and note."""
    make_sentiment_dir(folder)
    vocab = json.loads((like / "config.json").read_text())["vocab_size"]
    torch.manual_seed(3)
    cfg = ClassifierConfig(vocab_size=vocab, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=64, pad_id=PAD)
    TransformerClassifier(cfg).save_pretrained(folder)
    note = "a one-layer model for this test"
    (folder / "metrics.json").write_text(json.dumps({"display_name": "small", "display_note": note}))
    return folder


@pytest.fixture(scope="module")
def two_model_url(sentiment_dir, translation_dir, tmp_path_factory):
    from app import build_demo
    from pipelines import SentimentPipeline

    small = small_model_dir(tmp_path_factory.mktemp("models") / "small", sentiment_dir)
    demo = build_demo(SentimentPipeline.from_pretrained(str(sentiment_dir)), None, sentiment_models=(str(small),))
    try:
        yield browser.serve(demo)
    finally:
        demo.close()


def radio_options(page, elem_id: str) -> list[str]:
    return page.locator(f"#{elem_id} label").evaluate_all("ls => ls.map(l => l.textContent.trim())")


def test_choosing_the_other_model_reads_the_same_review_again(page, two_model_url):
    browser.open_tab(page, two_model_url, "Sentiment")
    assert radio_options(page, "sentiment-model") == ["sentiment", "small"]
    browser.reveal(page, "sentiment-model-notes")  # "About these models", closed under the prediction
    assert "a one-layer model for this test" in page.locator("#sentiment-model-notes").inner_text()
    browser.analyze_review(page, REVIEW)
    assert radio_options(page, "sentiment-layer") == ["1", "2"] and len(radio_options(page, "sentiment-head")) == 4
    browser.mark_plot(page, "sentiment-attention")
    page.locator("#sentiment-model").get_by_label("small", exact=True).check()
    browser.wait_redrawn(page, "sentiment-attention")  # the same review, run again by the small model
    page.wait_for_function("() => document.querySelectorAll('#sentiment-layer label').length === 1")
    assert radio_options(page, "sentiment-head") == ["1", "2"]
    assert page.locator("#sentiment-input textarea").input_value() == REVIEW
    heads = ("sentiment-models-first", "sentiment-models-second")
    browser.open_section(page, "sentiment", "Compare")
    assert not any(page.locator(f"#{i}").is_visible() for i in heads)  # no blank boxes before they are asked for
    page.locator("#sentiment-models-submit").click()
    page.wait_for_function(
        "() => (document.querySelector('#sentiment-models-output') || {}).textContent?.includes('small')"
    )
    text = page.locator("#sentiment-models-output").inner_text()
    assert "sentiment" in text and "small" in text
    for elem_id in heads:
        browser.wait_drawn(page, elem_id)


def test_on_a_phone_the_prediction_comes_before_what_the_models_are(page, two_model_url):
    """The models' notes (a long paragraph) stood between the button and the prediction: on a phone the label came
    1.5 screens below the button. They now come after the prediction and the share buttons."""
    size = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        browser.open_tab(page, two_model_url, "Sentiment")
        browser.reveal(page, "sentiment-model-notes")  # "About these models", opened: in the page's flow
        ids = ("sentiment-model", "sentiment-label", "sentiment-model-notes")
        top = {i: page.locator(f"#{i}").evaluate("e => e.getBoundingClientRect().top + window.scrollY") for i in ids}
        top["notes"] = top.pop("sentiment-model-notes")
        assert top["sentiment-model"] < top["sentiment-label"] < top["notes"], top
    finally:
        page.set_viewport_size(size)


def test_a_link_opens_the_model_it_names(page, two_model_url):
    """A link copied while the other model was shown opened the default model's view: it did not name the model."""
    from urllib.parse import urlencode

    page.goto(f"{two_model_url}?{urlencode({'tab': 'sentiment', 'text': REVIEW, 'model': 'small'})}")
    page.wait_for_function("() => document.querySelectorAll('#sentiment-layer label').length === 1")  # 1 layer
    browser.wait_drawn(page, "sentiment-attention")
    assert page.locator("#sentiment-model input:checked").evaluate("e => e.value") == "small"
    assert page.locator("#sentiment-input textarea").input_value() == REVIEW
    page.locator("#sentiment-share").click()
    page.wait_for_function("() => (document.querySelector('#sentiment-share-link textarea') || {}).value")
    assert "model=small" in page.locator("#sentiment-share-link textarea").input_value()


@pytest.fixture(scope="module")
def translator_url(translation_dir, tmp_path_factory):
    """The translation tab with ours, a tiny Marian folder standing in for the Hub's and the Hub's repo id, which
    cannot load here (HF_HUB_OFFLINE)."""
    from tiny_hf_models import make_marian_dir

    from app import build_demo
    from pipelines import TranslationPipeline
    from viz.models.loading import PRETRAINED_TRANSLATOR

    marian = make_marian_dir(tmp_path_factory.mktemp("hub") / "opus-mt-de-en")
    ours = TranslationPipeline.from_pretrained(str(translation_dir))
    demo = build_demo(None, ours, translation_models=(str(marian), PRETRAINED_TRANSLATOR))
    try:
        yield browser.serve(demo)
    finally:
        demo.close()


def test_the_translators_choice_names_the_pre_trained_one_and_says_it_needs_the_hub(page, translator_url):
    from viz.models.loading import PRETRAINED_TRANSLATOR_NAME

    browser.open_tab(page, translator_url, "Translation")
    options = radio_options(page, "translation-model")
    assert options[1:] == ["opus-mt-de-en", PRETRAINED_TRANSLATOR_NAME]
    assert "needs the Hugging Face Hub" in page.locator("#translation-model").inner_text()  # one line, offline
    browser.translate(page, "Ein Mann fährt Fahrrad.")
    browser.mark_plot(page, "translation-attention")
    page.locator("#translation-model").get_by_label("opus-mt-de-en", exact=True).check()
    browser.wait_redrawn(page, "translation-attention")  # the same sentence, translated again by Marian
    page.wait_for_function("() => document.querySelectorAll('#translation-head label').length === 4")
    page.locator("#translation-model").get_by_label(PRETRAINED_TRANSLATOR_NAME, exact=True).check()
    page.wait_for_function("() => (document.querySelector('#translation-status') || {}).textContent?.includes('⚠️')")
    assert page.locator("#translation-input textarea").input_value() == "Ein Mann fährt Fahrrad."
