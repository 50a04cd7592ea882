"""A Translate click decodes once: the explanation, its faithfulness and the head table reuse the translation kept
in the tab's state; and every call that runs a model goes through the served path (the batcher and the model's
one runner), none around it. (Before: three decodes per click, and explain / head_table / faithfulness ran on
the pipeline in the server's threads, beside the batcher.)"""

import browser
import pytest

from pipelines import TranslationPipeline
from pipelines.hosting.microbatch import MicroBatcher
from pipelines.hosting.serving import serve
from pipelines.tasks import TRANSLATION
from viz.explanations import translation_explanation_panel as panel
from viz.heads.measure import head_table
from viz.translation.handlers import translate

GERMAN = "Ein Mann fährt mit dem Fahrrad."


class Counting:
    """Counts the decodings of an adapter (its generate) and records the methods the served runner ran."""

    def __init__(self, pipe):
        self.decodes, self.methods = 0, []
        generate, run_batch = pipe.adapter.generate, pipe.run_batch

        def counted_generate(*args, **kwargs):
            self.decodes += 1
            return generate(*args, **kwargs)

        def recorded_run_batch(items, pipeline_method, **options):
            self.methods.append(pipeline_method.__name__)
            return run_batch(items, pipeline_method, **options)

        pipe.adapter.generate = counted_generate
        pipe.run_batch = recorded_run_batch


@pytest.fixture
def counted(translation_dir):
    pipe = TranslationPipeline.from_pretrained(str(translation_dir))
    return pipe, Counting(pipe)


def test_the_click_chain_decodes_once_and_runs_through_the_batcher(counted):
    pipe, count = counted
    served_pipe = serve(TRANSLATION, pipe, MicroBatcher(4))
    view, english, _ = translate(served_pipe, GERMAN, "beam search", 3)  # the button
    expl, _, _ = panel.explain(served_pipe, view, "gradient_x_input")  # the explanation panel
    assert "comprehensiveness" in panel.faithfulness(served_pipe, expl)
    heads_view, *_ = head_table(served_pipe, "translation", GERMAN, "beam search", 3, result=view.result)
    assert count.decodes == 1
    assert expl.translation == english and heads_view.rows
    assert count.methods == ["explain_inputs", "explain", "faithfulness", "head_table"]


def test_a_result_of_another_decoding_is_not_reused(counted):
    pipe, count = counted
    view, *_ = translate(pipe, GERMAN, "greedy", 3)
    head_table(pipe, "translation", GERMAN, "beam search", 3, result=view.result)  # another beam width
    assert count.decodes == 2


@pytest.mark.browser
@pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}")
def test_one_translate_click_in_the_browser_decodes_once(translation_dir, tmp_path):
    from app import build_demo

    pipe = TranslationPipeline.from_pretrained(str(translation_dir))
    count = Counting(pipe)
    demo = build_demo(None, pipe, cache=False)  # no result cache to hide a decode, no Learn walk at the start
    try:
        url = browser.serve(demo)
        with browser.chromium_page(tmp_path / "profile") as page:
            browser.open_tab(page, f"{url}?tab=translation", "Translation")  # landing there: the Learn tab walks not
            loaded = count.decodes
            browser.translate(page, GERMAN, decoding="beam search")
            browser.wait_heads_measured(page, "translation")
            browser.reveal(page, "translation-faithfulness")  # in its accordion (viz.page.layout.faithfulness), closed
            page.wait_for_function(
                "() => (document.querySelector('#translation-faithfulness') || {}).innerText?.includes('random')"
            )
            browser.wait_drawn(page, "translation-attribution", ".js-plotly-plot")
    finally:
        demo.close()
    assert loaded == 0
    assert count.decodes == 1
    assert {"explain_inputs", "explain", "faithfulness", "head_table"} <= set(count.methods)


@pytest.mark.browser
@pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}")
def test_the_learn_tab_open_on_load_decodes_the_translator_once(translation_dir, tmp_path):
    """The page's load walks the example on each model (viz.learn.tab): the translator's walk writes its
    translation once (pipelines.learn.families), however many steps the walk shows."""
    from app import build_demo

    pipe = TranslationPipeline.from_pretrained(str(translation_dir))
    count = Counting(pipe)
    demo = build_demo(None, pipe, cache=False)
    try:
        url = browser.serve(demo)
        with browser.chromium_page(tmp_path / "profile") as page:
            page.goto(url)
            page.wait_for_function(
                "() => /Step \\d+ of/.test((document.querySelector('#learn-progress') || {}).textContent || '')",
                timeout=browser.TIMEOUT_MS,
            )
            page.wait_for_function(
                "() => !((document.querySelector('#learn-status') || {}).textContent || '').includes('being walked')",
                timeout=browser.TIMEOUT_MS,
            )
    finally:
        demo.close()
    assert count.decodes == 1
