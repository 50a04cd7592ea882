"""What the tests of the app as served share: the app on the tiny models on a free port, and a headless chromium
page."""

import pytest


@pytest.fixture(scope="module")
def app(sentiment_dir, translation_dir):
    """(the app on the two tiny models, its URL), served on a free port for the module's tests."""
    from browser import serve

    from app import build_demo
    from pipelines import SentimentPipeline, TranslationPipeline

    demo = build_demo(
        SentimentPipeline.from_pretrained(str(sentiment_dir)), TranslationPipeline.from_pretrained(str(translation_dir))
    )
    url = serve(demo)
    try:
        yield demo, url
    finally:
        demo.close()


@pytest.fixture(scope="module")
def app_url(sentiment_dir, translation_dir):
    """The app on the tiny models, served on a free port, for the browser tests."""
    import browser

    from pipelines import SentimentPipeline, TranslationPipeline

    sentiment = SentimentPipeline.from_pretrained(str(sentiment_dir))
    with browser.serve_app(sentiment, TranslationPipeline.from_pretrained(str(translation_dir))) as url:
        yield url


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """One headless chromium page per test module."""
    import browser

    with browser.chromium_page(tmp_path_factory.mktemp("chromium-profile")) as page:
        yield page
