"""The Next word tab in a real headless chromium, on the tiny models: an example generated, the continuation and
the causal heatmap drawn, the step slider moved."""

import browser
import pytest

from viz.examples import LM_EXAMPLES

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]


@pytest.fixture(scope="module")
def lm_url(sentiment_dir, translation_dir, lm_dir):
    from app import build_demo
    from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline

    demo = build_demo(
        SentimentPipeline.from_pretrained(str(sentiment_dir)),
        TranslationPipeline.from_pretrained(str(translation_dir)),
        LanguageModelPipeline.from_pretrained(str(lm_dir)),
    )
    try:
        yield browser.serve(demo)
    finally:
        demo.close()


def test_next_word_tab_generates_an_example_and_steps_through_it(page, lm_url):
    page.goto(lm_url)
    page.get_by_role("tab", name="Next word").click()
    page.wait_for_selector("#lm-input textarea", state="visible")
    page.locator("#lm-examples").get_by_text(
        LM_EXAMPLES[2][0]
    ).click()  # an example fills the box and generates (the tiny model reads 64 tokens)
    page.wait_for_function(
        "() => (document.querySelector('#lm-status') || {}).textContent.includes('new token')", timeout=60_000
    )
    assert page.locator("#lm-input textarea").input_value() == LM_EXAMPLES[2][1]
    assert page.locator("#lm-output textarea").input_value() != ""
    browser.wait_drawn(page, "lm-attention")
    assert "(causal)" in browser.plot_title(page, "lm-attention")
    tip = browser.hover_heatmap(page, "lm-attention", 0.1, 0.9)  # below the diagonal: a weight
    assert "weight 0." in tip
    browser.wait_drawn(page, "lm-next", ".barlayer")
    last = browser.plot_title(page, "lm-next")
    assert "Step 20 of 20" in last

    page.wait_for_function(
        "() => { const s = document.querySelector('#lm-step input[type=range]'); return s && !s.disabled; }"
    )
    slider = page.locator("#lm-step input[type=range]")
    browser.mark_plot(page, "lm-next")
    slider.press("Home")
    browser.wait_redrawn(page, "lm-next")
    assert "Step 1 of" in browser.plot_title(page, "lm-next")
    browser.mark_plot(page, "lm-next")
    slider.press("ArrowRight")
    browser.wait_redrawn(page, "lm-next")
    assert "Step 2 of" in browser.plot_title(page, "lm-next")


def test_the_explanation_is_drawn_and_a_share_link_restores_the_prompt(page, lm_url):
    """The prompt is shaded by what drives the first new token, with its faithfulness; the tab's link, opened in the
    page, fills the prompt and the decoding options and generates the same continuation."""
    from urllib.parse import urlencode

    prompt = "This movie was <b>fun</b> &"
    query = urlencode({"tab": "lm", "text": prompt, "decoding": "sampled", "seed": 5, "max_new": 6, "step": 2})
    page.goto(f"{lm_url}?{query}")
    page.wait_for_function(
        "() => (document.querySelector('#lm-status') || {textContent: ''}).textContent.includes('seed 5')",
        timeout=60_000,
    )
    assert page.locator("#lm-input textarea").input_value() == prompt
    assert page.locator("#lm-decoding input[value=sampled]").is_checked()
    page.wait_for_selector("#lm-explanation .attr-legend", timeout=60_000)
    shaded = page.locator("#lm-explanation .token-text").text_content()
    assert " ".join(shaded.split()) == " ".join(prompt.split())  # the prompt's own words, shown as text
    assert page.locator("#lm-explanation b", has_text="fun").count() == 0  # markup never runs
    browser.reveal(page, "lm-explanation-faithfulness")  # in its accordion (viz.page.layout.faithfulness), closed
    page.wait_for_function(
        "() => (document.querySelector('#lm-explanation-faithfulness') || {textContent: ''})"
        ".textContent.includes('random')",
        timeout=60_000,
    )
    browser.wait_drawn(page, "lm-explanation-curve", ".scatterlayer")
    page.wait_for_function(
        "() => (document.querySelector('#lm-next .gtitle') || {textContent: ''}).textContent.startsWith('Step 2 of')",
        timeout=60_000,
    )  # the link's step, applied once the run is drawn
    page.wait_for_selector('#lm-explanation .explained-step[data-step="2"]', timeout=60_000)  # and explained
    continuation = page.locator("#lm-output textarea").input_value()

    page.locator("#lm-share").click()
    page.wait_for_function(
        "() => (document.querySelector('#lm-share-link textarea') || {value: ''}).value.startsWith('http')"
    )
    link = page.locator("#lm-share-link textarea").input_value()
    assert "tab=lm" in link and "seed=5" in link and "max_new=6" in link and "step=2" in link
    page.goto(link)
    page.wait_for_function(
        "() => (document.querySelector('#lm-status') || {textContent: ''}).textContent.includes('seed 5')",
        timeout=60_000,
    )
    assert page.locator("#lm-input textarea").input_value() == prompt
    assert page.locator("#lm-output textarea").input_value() == continuation  # the same seed, the same text


INSIDE = "lm-inside-head"
CAUSAL_JS = """id => { const d = document.querySelector('#' + id + ' .inside-causal'),
  v = document.querySelector('#' + id + ' .inside-head');
  return d && v ? {query: Number(v.dataset.query), head: Number(v.dataset.head), group: d.dataset.group,
                   kv: Number(d.dataset.kvHead), text: d.innerText} : null; }"""


def weights_are_the_last_row_shown(page) -> list[float]:
    """The weights the view prints equal the large heatmap's last row (the step's: what chose its token)."""
    from page_probes import TRACE_JS, WEIGHTS_JS

    _, z = page.evaluate(TRACE_JS, "lm-attention")
    printed = [float(w) for w in page.evaluate(WEIGHTS_JS, INSIDE)]
    assert len(printed) == len(z) == len(z[-1])  # every key read at this step, none past it
    assert all(abs(min(p, 0.999) - w / 1000) <= 1.5e-3 for p, w in zip(printed, z[-1]))
    return printed


def test_inside_one_head_shows_the_steps_row_its_rotation_and_its_group(page, lm_url):
    """The lm tab's inside-one-head view (in its section, opened): the step's last row of the head chosen, equal to
    the large heatmap's; q and k before and after the rotation, the causal mask, the key/value head shared by a group
    of query heads (the tiny model: 4 query heads, 2 key/value heads); it follows the step slider and the head, and
    the explanation of the step shown follows on "Explain this step"."""
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(lm_url)
    page.get_by_role("tab", name="Next word").click()
    page.wait_for_selector("#lm-input textarea", state="visible")
    page.locator("#lm-input textarea").fill("A wonderful film with a dull ending.")
    page.locator("#lm-submit").click()
    page.wait_for_function(
        "() => (document.querySelector('#lm-status') || {}).textContent.includes('new token')", timeout=60_000
    )
    browser.wait_drawn(page, "lm-attention")
    assert page.locator("#lm-scale input[value=linear]").is_checked()  # the heatmap draws the weights themselves
    browser.reveal(page, INSIDE)  # its section, then its accordion: opening records and draws
    page.wait_for_selector(f"#{INSIDE} .ih-weights td", state="attached", timeout=60_000)
    shown = page.evaluate(CAUSAL_JS, INSIDE)
    assert (shown["head"], shown["group"], shown["kv"]) == (0, "0-1", 0)
    assert "shared with query heads 1–2" in shown["text"] and "rotated" in shown["text"]
    assert "Causal mask" in shown["text"] and "nothing above the diagonal" in shown["text"]
    last = weights_are_the_last_row_shown(page)
    assert shown["query"] == len(last) - 1

    page.wait_for_function(
        "() => { const s = document.querySelector('#lm-step input[type=range]'); return s && !s.disabled; }"
    )
    slider = page.locator("#lm-step input[type=range]")
    n = int(slider.get_attribute("max"))  # the steps generated: the last one is shown first, and explained
    page.wait_for_selector(f"#lm-explanation .explained-step[data-step='{n}']", state="attached", timeout=60_000)
    browser.mark_plot(page, "lm-attention")
    slider.press("Home")  # step 1: the prompt only
    browser.wait_redrawn(page, "lm-attention")
    page.wait_for_function(f"([id, q]) => ({CAUSAL_JS})(id)?.query === q", arg=[INSIDE, len(last) - n])
    assert len(weights_are_the_last_row_shown(page)) == len(last) - n + 1
    assert page.locator("#lm-explanation .explained-step").get_attribute("data-step") == str(n)  # not run again
    page.locator("#lm-explain-step").click()
    page.wait_for_selector("#lm-explanation .explained-step[data-step='1']", state="attached", timeout=60_000)

    browser.choose(page, "lm-head", "4", redraws=("lm-attention",))
    page.wait_for_function(f"id => ({CAUSAL_JS})(id)?.head === 3", arg=INSIDE)
    shown = page.evaluate(CAUSAL_JS, INSIDE)
    assert (shown["group"], shown["kv"]) == ("2-3", 1) and "shared with query heads 3–4" in shown["text"]
    weights_are_the_last_row_shown(page)

    slider.press("ArrowRight")  # step 2, explained by the button
    page.locator("#lm-explain-step").click()
    page.wait_for_selector("#lm-explanation .explained-step[data-step='2']", state="attached", timeout=60_000)
    assert f"Step 2 of {n} explained" in page.locator("#lm-explanation .explained-step").text_content()
    assert page.locator("#lm-explain-step").is_visible()


def test_inside_one_head_fits_a_phone(page, lm_url):
    from page_probes import FIT_JS

    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.goto(lm_url)
        page.get_by_role("tab", name="Next word").click()
        page.wait_for_selector("#lm-input textarea", state="visible")
        page.locator("#lm-input textarea").fill("A wonderful film with a dull ending.")
        page.locator("#lm-submit").click()
        browser.wait_drawn(page, "lm-attention")
        browser.reveal(page, INSIDE)
        page.wait_for_selector(f"#{INSIDE} .inside-causal .ih-mask", state="attached", timeout=60_000)
        page.locator(f"#{INSIDE} details summary").click()  # every weight of the row, opened
        fit = page.evaluate(FIT_JS, INSIDE)
        assert fit["page"] <= fit["window"] == 390  # no sideways scrolling of the page
        assert 0 <= fit["view"][0] and fit["view"][1] <= 390
        assert fit["cells"] and all(w >= 6 and h >= 6 and right <= 390 for w, h, right in fit["cells"])
        weights_are_the_last_row_shown(page)
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})


def generate_an_example(page, url: str) -> None:
    """The Next word tab, a random-words example clicked and generated."""
    page.goto(url)
    page.get_by_role("tab", name="Next word").click()
    page.wait_for_selector("#lm-input textarea", state="visible")
    page.locator("#lm-examples").get_by_text(LM_EXAMPLES[2][0]).click()
    page.wait_for_function(
        "() => (document.querySelector('#lm-status') || {}).textContent.includes('new token')", timeout=60_000
    )


def test_layer_by_layer_draws_the_lens_and_the_attribution_of_the_step_shown(page, lm_url):
    generate_an_example(page, lm_url)
    browser.open_section(page, "lm", "Layer by layer")
    page.locator("#lm-lens-submit").click()
    browser.wait_drawn(page, "lm-lens")
    browser.wait_drawn(page, "lm-dla")
    assert "logit lens" in browser.plot_title(page, "lm-lens")
    assert "direct logit attribution" in browser.plot_title(page, "lm-dla")
    notes = page.locator("#lm-lens-notes").inner_text()
    assert "Attributed:" in notes and "Left over:" in notes
    # a click on a head of the attribution grid opens its map: the tiny model's 2 layers x (4 heads + the MLP) column,
    # the middle column (h2) of the top row (layer 1)
    browser.click_plot(page, "lm-dla", 0.5, 0.25)
    page.wait_for_function(
        "() => ((document.querySelector('#lm-head input:checked') || {}).value || '') === '2'", timeout=20_000
    )
    assert page.locator("#lm-layer input:checked").get_attribute("value") == "1"
    # it follows the step slider without a click: the lens then has one column fewer (it read one token less)
    columns_js = "() => ((document.querySelector('#lm-lens .js-plotly-plot') || {}).data || [{x: []}])[0].x.length"
    columns = page.evaluate(columns_js)
    browser.reveal(page, "lm-step")
    page.locator("#lm-step input[type=range]").press("ArrowLeft")
    page.wait_for_function(f"() => ({columns_js})() === {columns - 1}")
    # the tuned lens: the tiny model has none, and the section says so over the logit lens
    browser.choose(page, "lm-lens-kind", "tuned lens")
    page.wait_for_function("() => document.querySelector('#lm-lens-notes').innerText.includes('no tuned lens')")


@pytest.mark.parametrize("size", [(1440, 900), (390, 844)])
def test_layer_by_layer_follows_the_step_and_fits_the_screen(page, lm_url, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    try:
        generate_an_example(page, lm_url)
        browser.open_section(page, "lm", "Layer by layer")
        page.locator("#lm-lens-submit").click()
        browser.wait_drawn(page, "lm-lens")
        browser.wait_drawn(page, "lm-dla")
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
        columns_js = "() => ((document.querySelector('#lm-lens .js-plotly-plot') || {}).data || [{x: []}])[0].x.length"
        columns = page.evaluate(columns_js)
        browser.reveal(page, "lm-step")
        page.locator("#lm-step input[type=range]").press("ArrowLeft")
        page.wait_for_function(f"() => ({columns_js})() === {columns - 1}")
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})


def test_every_new_token_is_explained_on_a_click(page, lm_url):
    generate_an_example(page, lm_url)
    browser.reveal(page, "lm-explain-steps-submit")
    page.locator("#lm-explain-steps-submit").click()
    browser.wait_drawn(page, "lm-explain-steps")
    assert "Every new token attributed" in browser.plot_title(page, "lm-explain-steps")
    rows = page.evaluate("() => document.querySelector('#lm-explain-steps .js-plotly-plot').data[0].y.length")
    assert rows >= 1 and "explained in" in page.locator("#lm-explain-steps-notes").inner_text()


def test_the_compare_section_says_when_a_pair_has_nothing_to_patch(page, lm_url):
    """The tiny model answers both prompts of the indirect-object pair alike: the section says so, drawing no grid
    (SmolLM2's grids for the pair: benchmarks/patching.py)."""
    page.goto(lm_url)
    page.get_by_role("tab", name="Next word").click()
    page.wait_for_selector("#lm-input textarea", state="visible")
    browser.open_section(page, "lm", "Compare")
    page.locator("#lm-compare-submit").locator("xpath=ancestor::*[contains(@class,'column')][1]").get_by_text(
        "indirect object: John → Mary gave"
    ).first.click()
    page.wait_for_function(
        "() => (document.querySelector('#lm-patch-notes') || {}).innerText.includes('nothing to patch back')"
        " || (document.querySelector('#lm-patch-notes') || {}).innerText.includes('no difference to patch back')",
        timeout=60_000,
    )
    assert page.locator("#lm-patch-heads .js-plotly-plot").count() == 0


def test_each_head_switched_off_is_drawn_beside_its_direct_part(page, lm_url):
    generate_an_example(page, lm_url)
    browser.open_section(page, "lm", "Layer by layer")
    browser.reveal(page, "lm-dla-total-submit")
    page.locator("#lm-dla-total-submit").click()
    browser.wait_drawn(page, "lm-dla-total")
    assert "switched off" in browser.plot_title(page, "lm-dla-total")
    assert "Pearson" in page.locator("#lm-dla-total-notes").inner_text()
