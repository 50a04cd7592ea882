"""The Learn tab's handlers (viz.learn), on the app built over the tiny models: it is the page's first tab; a walk
runs the models once and Next, Back, the map and the sampling sliders redraw from what the page keeps; every step
shows its title, text, figure, code (file and lines, the file's own text) and check; nothing shows a traceback."""

from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from app_blocks import blocks, click_fn, load_fn

from pipelines import learn as library
from pipelines.hosting.cache import ResultCache
from pipelines.learn.walk import Check, CodeSpan, ModelMap, Step
from viz.learn import handlers, render
from viz.learn.choices import FROM_SCRATCH, model_sets
from viz.learn.glossary import GLOSSARY, marked
from viz.learn.handlers import Learned
from viz.learn.model_map import first_steps, map_html
from viz.learn.view import step_view
from viz.share import links

ROOT = Path(__file__).resolve().parents[2]
SHOWN = ["learn-title", "learn-text", "learn-figure", "learn-code", "learn-check", "learn-progress", "learn-map"]


@pytest.fixture(scope="module")
def demo(sentiment, translation, lm):
    from app import build_demo

    demo = build_demo(sentiment, translation, lm, cache=False)
    yield demo
    demo.close()


def _forget_kept_walks(demo) -> None:
    """A fresh cache of walks (the app keeps each model's walk of a text for every visitor)."""
    events = click_fn(demo, "learn-submit").fn.__self__
    events.cache = ResultCache(handlers.WALK_CACHE_BYTES)


@pytest.fixture
def walks(demo, monkeypatch):
    """Counts the library's walks (each runs a model once), none kept from an earlier test."""
    _forget_kept_walks(demo)
    calls = []
    walk = library.walk
    monkeypatch.setattr(library, "walk", lambda pipe, text, name=None: calls.append(name) or walk(pipe, text, name))
    return calls


def _label(demo) -> str:
    return blocks(demo)["learn-models"].choices[0][0]


def _walked(demo, english="A warm and funny film.", german="Ein Hund läuft.", k=0) -> tuple:
    """The button's two steps: the first model's walk (shown at once), then every model's."""
    sliders = (1.0, 1.0, 0)
    *first, wanted = click_fn(demo, "learn-submit").fn(english, german, _label(demo), k, *sliders)
    rest = next(f.fn for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "walk_rest")
    return rest(english, german, _label(demo), wanted, first[1], *sliders)


def _shown(outputs: tuple) -> dict:
    """A StepView's outputs (after the event's own first values) by elem_id."""
    return dict(zip(SHOWN, outputs[-11:-4], strict=True))


def test_the_learn_tab_is_the_first_and_offers_the_small_models_first(demo):
    tabs = sorted((b for b in demo.blocks.values() if isinstance(b, gr.Tab)), key=lambda b: b._id)
    assert tabs[0].id == links.LEARN and tabs[0].elem_id == "tab-learn"
    labels = [label for label, _ in blocks(demo)["learn-models"].choices]
    assert labels[0].startswith(FROM_SCRATCH)


def test_a_walk_draws_every_step_and_next_and_back_never_run_a_model(demo, walks):
    learned, k, status, *outputs = _walked(demo)
    # the first model at once, then the other two (the first's walk is kept)
    assert isinstance(learned, Learned) and k == 0 and len(walks) == 3
    sliders = (1.0, 1.0, 0)
    step_next, step_back = click_fn(demo, "learn-next").fn, click_fn(demo, "learn-back").fn
    n, seen = len(learned.steps), []
    for _ in range(n):
        shown = _shown(outputs)
        step = learned.steps[k]
        assert step.title in shown["learn-title"] and f"Step {k + 1} of {n}" in shown["learn-progress"]
        assert shown["learn-text"] and shown["learn-figure"] is not None
        assert ("max |difference| = " in shown["learn-check"]) == (step.check is not None)
        if step.code is not None:
            assert f"{step.code.path}, line" in shown["learn-code"]
        seen.append(step.key)
        k, *outputs = step_next(learned, k, *sliders)
    assert k == n - 1 and seen == [s.key for s in learned.steps]  # Next stops at the last step
    k, *outputs = step_back(learned, k, *sliders)
    assert k == n - 2 and learned.steps[k].title in _shown(outputs)["learn-title"]
    assert len(walks) == 3  # Next and Back redrew from the kept walk


def test_the_example_walked_at_the_start_is_not_walked_again_for_a_visitor(demo, walks):
    from viz.learn.tab import ENGLISH, GERMAN

    click_fn(demo, "learn-submit").fn.__self__.warm().join()
    assert len(walks) == 3  # every model of the first choice, once
    learned = _walked(demo, ENGLISH, GERMAN)[0]
    assert isinstance(learned, Learned) and len(walks) == 3


def test_the_german_box_shows_with_cross_attention_and_the_sliders_with_the_next_token(demo):
    learned = _walked(demo)[0]
    for k, step in enumerate(learned.steps):
        view = step_view(learned, k, handlers.Sampling())
        assert view.german["visible"] == (step.key == "cross_attention")
        assert view.sampling["visible"] == (step.key == "next_token")
    assert {"cross_attention", "next_token"} <= {s.key for s in learned.steps}
    last = step_view(learned, len(learned.steps) - 1, handlers.Sampling())  # where to go next: each tab, one click
    queries = [links.from_query(q) for _, q in learned.links]
    assert len(queries) == 6 and all(f'href="?{q}"'.replace("&", "&amp;") in last.text for _, q in learned.links)
    assert {q.text for q in queries} == {"A warm and funny film.", "Ein Hund läuft."} and any(q.layers for q in queries)


def test_each_steps_code_is_the_files_text_at_its_lines(demo):
    learned = _walked(demo)[0]
    spans = [s.code for s in learned.steps if s.code is not None]
    assert spans
    for span in spans:
        lines = (ROOT / span.path).read_text(encoding="utf-8").splitlines()
        assert span.text.splitlines() == lines[span.start - 1 : span.end]
        shown = render.code_html(span)
        assert f"{span.path}, lines {span.start}–{span.end}" in shown or f"line {span.start}" in shown


def test_a_new_input_walks_again_at_the_same_step(demo, walks):
    learned, *_ = _walked(demo)
    again, k, *_ = _walked(demo, "Dull.", "Ein Hund.", k=2)
    assert k == 2 and again.steps[0].labels != learned.steps[0].labels and len(walks) == 6


def test_a_text_walked_before_is_not_walked_again(demo, walks):
    """The preloaded example (or any text a visitor walked) is walked once, for every visitor after."""
    learned = _walked(demo, "Kept for the next visitor.")[0]
    again = _walked(demo, "Kept for the next visitor.")[0]
    assert len(walks) == 3 and [s.key for s in again.steps] == [s.key for s in learned.steps]
    assert all(a.labels == b.labels and a.check == b.check for a, b in zip(again.steps, learned.steps, strict=True))


def test_the_page_opens_at_the_step_its_address_names(demo):
    class Request:
        query_params = {"learn": "3"}

    opened = load_fn(demo, "learn-title").fn
    rest = next(f.fn for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "opened_rest")
    learned, k, *_ = opened(request=Request())
    assert k == 2
    Request.query_params = {"learn": "13"}  # past the first model's steps: there once every model is walked
    assert rest(0, request=Request())[1] == 12
    Request.query_params = {"learn": "999"}
    assert opened(request=Request())[1] == 0  # not a step: the first
    Request.query_params = {"tab": "translation"}  # another tab: the Learn tab walks when first opened
    assert all(value == gr.skip() for value in opened(request=Request()))


def test_a_map_click_goes_to_its_step(demo, walks):
    learned = _walked(demo)[0]
    target = next(k for k in range(len(learned.steps)) if k > 0)
    fn = next(f for f in demo.fns.values() if f.targets and f.targets[0][1] == "select"
              and blocks(demo)["learn-map"] in f.inputs + f.outputs)  # fmt: skip
    k, *outputs = fn.fn(learned, 1.0, 1.0, 0, evt=gr.SelectData(None, {"index": target, "value": target}))
    assert k == target and learned.steps[target].title in _shown(outputs)["learn-title"]
    assert len(walks) == 3


def test_the_sampling_sliders_redraw_the_next_token_figure_without_a_model_run(demo, walks):
    learned = _walked(demo)[0]
    k = next((i for i, s in enumerate(learned.steps) if s.key == "next_token"), None)
    if k is None:
        pytest.skip("the library's walk has no next-token step yet")
    redraw = click_fn(demo, "learn-temperature").fn
    cold, hot = redraw(learned, k, 0.3, 1.0, 0), redraw(learned, k, 2.0, 1.0, 0)
    assert cold.to_json() != hot.to_json() and len(walks) == 3


def test_a_model_that_cannot_be_walked_gives_a_plain_message(demo, monkeypatch):
    def broken(pipe, text, name=None):
        raise RuntimeError("no hook point here")

    monkeypatch.setattr(library, "walk", broken)
    _forget_kept_walks(demo)
    learned, k, status, *outputs = _walked(demo)
    text = _shown(outputs)["learn-text"]
    assert learned is None and "could not be walked: RuntimeError: no hook point here" in text
    assert "Traceback" not in text
    with pytest.warns(UserWarning, match="forgotten"):  # a page whose walk was forgotten: a toast says so
        moved = click_fn(demo, "learn-next").fn(None, 0, 1.0, 1.0, 0)
    assert all(value == gr.skip() for value in moved)


def test_an_empty_input_is_a_message_not_a_walk(demo, walks):
    learned, _, _, *outputs = _walked(demo, english="   ", german="")
    assert learned is None and len(walks) == 0 and "type some words" in _shown(outputs)["learn-text"].lower()


def test_the_small_models_are_from_scratch_and_pre_trained_ones_are_offered_apart(demo):
    from pipelines.models.model_registry import ModelEntry, ModelRegistry

    ours = ModelRegistry([ModelEntry("ours", str(ROOT / "tests"))], load=None)
    theirs = ModelRegistry([ModelEntry("hub", "org/model")], load=None)
    sets = model_sets({"sentiment": ours, "translation": None, "lm": theirs})
    assert [[m.name for m in s.models] for s in sets] == [["ours"], ["hub"]]


# --- the parts, on a walk made here (the contract's types) ----------------------------------------------------------

MAP = ModelMap("decoder", 6, 8, 2, 256, 704, 8192, "rotary", "pre-norm RMSNorm", "unembedding -> softmax over 8,192")


def _step(key: str, part: str, **fields) -> Step:
    return Step(key, key.title(), "Each token has a query and a key.", part, "<b>model</b>", ("0:a", "1:b"), **fields)


def test_the_map_shows_the_models_sizes_and_lights_the_current_part():
    steps = (_step("tokens", "embed"), _step("qkv", "attention"), _step("multi_head", "heads"))
    shown = map_html(MAP, steps, 1)
    assert "8 heads of 32, 2 key/value heads" in shown and "6 blocks (causal)" in shown and "704" in shown
    assert 'class="learn-part is-current" data-part="attention" data-step="1"' in shown
    assert 'data-part="heads" data-step="2"' in shown and "<b>model</b>" not in shown  # escaped
    assert first_steps(steps) == {"embed": 0, "attention": 1, "heads": 2, "tokens": 0}
    encdec = ModelMap("encoder-decoder", 3, 4, 4, 256, 1024, 8000, "sinusoidal", "post-norm LayerNorm", "x", 3)
    assert "3 encoder blocks + 3 decoder blocks" in map_html(encdec, steps, 0) and "Cross-attention" in map_html(
        encdec, steps, 0
    )


def test_the_glossary_defines_a_terms_first_use_and_escapes_the_rest():
    shown = marked("A query <script>x</script> meets a key; a query again.")
    assert shown.count("<abbr") == 2 and "&lt;script&gt;" in shown
    assert f'title="{GLOSSARY["query"]}"' in shown


def test_a_check_prints_its_difference_and_a_step_without_one_says_so():
    check = Check("softmax(Q K^T / sqrt(d)) vs blocks.0.attn.hook_pattern", 4e-08)
    assert "max |difference| = 4e-08" in render.check_html(check)
    assert render.NOTHING_TO_CHECK in render.check_html(None)
    span = CodeSpan("transformer/attention.py", 10, 11, "q = x\nk = <y>", "x (1, 9, 128)")
    shown = render.code_html(span)
    assert "transformer/attention.py, lines 10–11" in shown and "&lt;y&gt;" in shown and "x (1, 9, 128)" in shown


def test_a_link_carries_the_learn_step():
    assert links.learn_step({"learn": "5"}) == 4 and links.learn_step({"learn": "x"}) is None
    link = links.from_query({"tab": "sentiment", "text": "A film.", "learn": "3"})
    assert link.learn == 2 and "learn=3" in links.to_query(link)
    assert handlers.clamp(7, Learned((_step("a", "b"),), {})) == 0 and np.isfinite(handlers.Sampling().top_p)


def test_the_pages_intro_sends_a_newcomer_to_learn_before_the_task_tabs(demo):
    from app import INTRO

    shown = [b.value for b in demo.blocks.values() if isinstance(b, gr.Markdown) and isinstance(b.value, str)]
    intro = next(value for value in shown if value.startswith("# How transformers pay attention"))
    assert intro == INTRO.strip() and "Start with **Learn**" in intro
    assert intro.index("Learn") < intro.index("task tabs") and len(intro.split()) <= 70
