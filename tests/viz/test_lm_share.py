"""The Next word tab's share link, download, compare panel and explanation wired into the built app (called
directly, no server), on the tiny models: a link fills the prompt and the decoding options and presses Generate, the
copy-link handler records the view shown (the drawn seed of a sampled continuation included), the linked step is
applied once."""

import json
from types import SimpleNamespace

import gradio as gr
import pytest
from app_blocks import blocks, click_fn, load_fn, shared_link

from pipelines import SentimentPipeline, TranslationPipeline
from viz.examples import LANDING, LM_EXAMPLES
from viz.next_word import handlers as next_word
from viz.page.landing import page_step
from viz.share import export_store, links, lm_share

BASE = "http://127.0.0.1:7860/"
ELEM_IDS = [
    *(f"lm-{name}" for name in ("share", "download", "share-link", "download-file")),
    *(f"lm-compare-{name}" for name in ("input", "submit", "output", "diff")),
    *(f"lm-explanation{name}" for name in ("", "-method", "-faithfulness", "-curve")),
]


@pytest.fixture(scope="module")
def demo(sentiment_dir, translation_dir, lm):
    from app import build_demo

    return build_demo(
        SentimentPipeline.from_pretrained(str(sentiment_dir)),
        TranslationPipeline.from_pretrained(str(translation_dir)),
        lm,
    )


def named(fn, values) -> dict:
    return dict(zip([o.elem_id or id(o) for o in fn.outputs], values))


def shown(demo):
    """(model name, training-step position) as the page shows them."""
    b = blocks(demo)
    return b["lm-model"].value, b["lm-training-step"].value


def test_the_tab_has_its_share_compare_and_explanation_ids(demo):
    assert set(ELEM_IDS) <= set(blocks(demo))
    public = {f.api_name for f in demo.fns.values() if f.api_visibility == "public"}
    assert public == {"sentiment", "translate", "generate"}  # the new events are private


def test_a_link_fills_the_prompt_and_options_then_presses_generate(demo):
    fn = load_fn(demo, "lm-input")
    params = dict(tab="lm", text="Hi <b>there</b>", decoding="sampled", temperature="0.7", top_p="0.9", seed="42")
    params |= dict(max_new="12", chat="1", layer="2", head="3", step="4", method="occlusion", scale="log", hide="1")
    values = named(fn, fn.fn(SimpleNamespace(query_params=params)))
    assert values["lm-input"] == "Hi <b>there</b>" and values["lm-chat"] is True
    assert (values["lm-decoding"], values["lm-temperature"], values["lm-top-p"], values["lm-seed"]) == (
        "sampled", 0.7, 0.9, 42
    )  # fmt: skip
    assert values["lm-max-new-tokens"] == 12 and (values["lm-layer"], values["lm-head"]) == (1, 2)
    assert values["lm-explanation-method"] == "occlusion" and values["lm-scale"] == "log"
    assert values["lm-hide-tokens"] is True and 3 in fn.fn(SimpleNamespace(query_params=params))  # the step, pending
    follow = [f for f in demo.fns.values() if f.trigger_after == fn._id and f.js]
    assert page_step("press_for_link.js", "lm") in [f.js for f in follow]


def test_a_link_for_another_tab_changes_nothing_here_and_bad_values_are_named(demo, monkeypatch):
    fn = load_fn(demo, "lm-input")
    for params in ({}, {"tab": "sentiment", "text": "Fine."}, {"tab": "lm", "text": " "}):
        assert all(v == gr.skip() for v in fn.fn(SimpleNamespace(query_params=params)))
    warned = []
    monkeypatch.setattr(lm_share.gr, "Warning", lambda message, *a, **k: warned.append(message))
    params = dict(tab="lm", text="Hi", temperature="4", layer="9", method="nope")  # 4: past the slider's 2
    values = named(fn, fn.fn(SimpleNamespace(query_params=params)))
    assert values["lm-temperature"] == gr.skip() and values["lm-layer"] == gr.skip()
    assert values["lm-explanation-method"] == gr.skip()
    assert warned and all(word in warned[0] for word in ("method", "temperature", "layer"))


def test_copy_link_records_the_view_and_the_drawn_seed(demo, lm):
    view = list(next_word.generate(lm, "This movie was", "sampled", 1.0, 0.9, None, 5))[-1][0]
    share = click_fn(demo, "lm-share")
    options = ["sampled", 1.0, 0.9, None, 5, False]  # no seed typed: one was drawn, named in the status
    box = share.fn(BASE, view, "This movie was", *options, 1, 2, 3, "occlusion", "norm", True, *shown(demo))
    link = shared_link(box)
    assert box.visible is True and box.value.startswith(BASE + "?tab=lm&")
    assert link == links.ViewLink(
        "lm", "This movie was", 1, 2, 2, "sampled", method="occlusion", scale="norm", hide=True,
        temperature=1.0, top_p=0.9, seed=view.result.seed, max_new_tokens=5,
    )  # fmt: skip
    greedy = share.fn(BASE, None, "Another prompt", "greedy", 1.0, 0.9, 3, 20, True, 0, 0, 1, None, "linear",
                      False, *shown(demo))  # fmt: skip
    link = shared_link(greedy)
    assert (link.seed, link.temperature, link.step, link.chat, link.max_new_tokens) == (None, None, None, True, None)


def test_the_linked_step_is_applied_once_after_the_run(lm, monkeypatch):
    warned = []
    monkeypatch.setattr(lm_share.gr, "Warning", lambda message, *a, **k: warned.append(message))
    view = list(next_word.generate(lm, "This movie was", max_new_tokens=4))[-1][0]
    slider, heat, top, overview, pending = lm_share.apply_step(view, 1, 0, "linear", False, 2)
    assert slider.value == 3 and pending is None and view.step == 3
    assert "Step 3 of" in top.layout.title.text and heat is not None and overview is not None
    assert lm_share.apply_step(view, 0, 0, "linear", False, None) == (gr.skip(),) * 4 + (None,)
    slider, *_ = lm_share.apply_step(view, 0, 0, "linear", False, 40)
    assert slider.value == len(view.steps) and "past this continuation's last step" in warned[0]


def test_download_exports_the_continuation_on_screen(demo, lm, monkeypatch):
    view = list(next_word.generate(lm, "This movie was", "sampled", 1.0, 0.9, None, 4))[-1][0]
    fn = click_fn(demo, "lm-download")
    url = fn.fn(view, "This movie was", "sampled", 1.0, 0.9, None, 4, False, *shown(demo), "attention")
    assert url.startswith("exports/attention-lm-")  # the address the page fetches
    record = json.loads((export_store.export_dir() / url.removeprefix("exports/")).read_text(encoding="utf-8"))
    assert record["continuation"] == view.result.continuation and record["input"]["seed"] == view.result.seed
    assert record["explanation"]["method"] == "attention"
    layers = record["layer_by_layer"]  # what each layer predicted before the first new token, and who wrote it
    assert len(layers["lens"]["layers"]) == lm.n_layers + 1
    assert layers["lens"]["final_token"] == layers["attribution"]["target"]  # the model's first choice, not the drawn
    warned = []
    monkeypatch.setattr(lm_share.gr, "Warning", lambda message, *a, **k: warned.append(message))
    assert fn.fn(None, "x", "sampled", 9.0, 0.9, 1, 4, False, *shown(demo), None) == ""
    assert "temperature" in warned[0]


def test_compare_runs_by_the_model_shown_with_the_tabs_options(demo, lm):
    fn = click_fn(demo, "lm-compare-submit")
    state, out, fig = fn.fn("This movie was", "This film was", "greedy", 1.0, 0.9, None, 3, False, *shown(demo), 1, 1)
    assert out.count('class="compare-label"') == 2 and "layer 2, head 2" in fig.layout.title.text
    assert state.b.shape[0] == lm.n_layers


def test_the_tab_lands_on_an_example_and_a_link_opens_it():
    assert "lm" in links.TABS and LANDING["lm"] == LM_EXAMPLES[0][1]
