"""Share, download and compare wired into the built app (called directly, no server): elem_ids, a link
opening a view, the copy-link handler, and the contrast pairs."""

import json
from types import SimpleNamespace
from urllib.parse import urlsplit

import gradio as gr
import pytest

from pipelines import SentimentPipeline, TranslationPipeline
from viz import links
from viz.examples import CONTRAST_PAIRS, contrast_pairs

ELEM_IDS = [
    f"{task}-{name}"
    for task in ("sentiment", "translation")
    for name in ("share", "download", "compare-input", "compare-submit", "compare-output")
]


@pytest.fixture(scope="module")
def demo(sentiment_dir, translation_dir):
    from app import build_demo

    return build_demo(
        SentimentPipeline.from_pretrained(str(sentiment_dir)), TranslationPipeline.from_pretrained(str(translation_dir))
    )


def blocks(demo) -> dict:
    return {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}


def load_fn(demo, outputs_elem_id: str):
    """The page-load event that writes into the given component (the link restorer of its tab)."""
    target = blocks(demo)[outputs_elem_id]
    (fn,) = [f for f in demo.fns.values() if f.targets and f.targets[0][1] == "load" and target in f.outputs]
    return fn


def request(**params) -> SimpleNamespace:
    return SimpleNamespace(query_params=params)


def test_the_issue_elem_ids_exist(demo):
    assert set(ELEM_IDS) <= set(blocks(demo))


def test_every_new_event_is_private(demo):
    public = {f.api_name for f in demo.fns.values() if f.api_visibility == "public"}
    assert public == {"sentiment", "translate"}


def test_a_sentiment_link_runs_the_model_and_draws_the_chosen_view(demo):
    fn = load_fn(demo, "sentiment-input")
    params = dict(tab="sentiment", text="Ein <b>gutes</b> Film!", layer="2", head="3", method="rollout")
    values = dict(zip([o.elem_id or id(o) for o in fn.outputs], fn.fn(request(**params))))
    assert values["sentiment-input"] == "Ein <b>gutes</b> Film!"
    assert (
        values["sentiment-layer"] == 1
        and values["sentiment-head"] == 2
        and values["sentiment-highlight-mode"] == "rollout"
    )
    assert "Layer 2, head 3" in values["sentiment-attention"].layout.title.text
    assert set(values["sentiment-label"]) == {"negative", "positive"}
    assert "attention rollout" in values["sentiment-highlight"]


def test_a_link_for_the_other_tab_or_without_text_changes_nothing(demo):
    fn = load_fn(demo, "sentiment-input")
    for params in ({}, {"tab": "translation", "text": "Ein Hund."}, {"tab": "sentiment", "text": "  "}):
        assert all(v == gr.skip() for v in fn.fn(request(**params)))


def test_a_translation_link_restores_decoding_layer_head_and_step(demo):
    fn = load_fn(demo, "translation-input")
    params = dict(
        tab="translation", text="Zwei Hunde.", decoding="beam search", beam="3", layer="2", head="4", step="2"
    )
    values = dict(zip([o.elem_id or id(o) for o in fn.outputs], fn.fn(request(**params))))
    assert values["translation-beam"] == 3 and "beam search, 3 beams" in values["translation-status"]
    params.update(decoding="greedy", beam="99")  # out of the slider's range: its default
    values = dict(zip([o.elem_id or id(o) for o in fn.outputs], fn.fn(request(**params))))
    assert values["translation-beam"] == 2
    assert values["translation-decoding"] == "greedy" and "greedy decoding" in values["translation-status"]
    assert (values["translation-layer"], values["translation-head"]) == (1, 3)
    assert "layer 2, head 4" in values["translation-attention"].layout.title.text
    assert "Step 2 of" in values["translation-step-heads"].layout.title.text
    assert values["translation-step"].value == 2


def test_copy_link_builds_a_link_that_opens_the_same_view(demo):
    share = blocks(demo)["sentiment-share"]
    (fn,) = [f for f in demo.fns.values() if f.targets and f.targets[0][0] == share._id and f.fn is not None]
    box = fn.fn("http://127.0.0.1:7860/", "Großartig! <script>x</script>", 1, 0, "pool")
    link = links.from_query(urlsplit(box.value).query)
    assert link == links.ViewLink("sentiment", "Großartig! <script>x</script>", layer=1, head=0, method="pool")
    too_long = fn.fn("http://127.0.0.1:7860/", "ü" * 5_000, 0, 0, "pool")
    assert too_long.value.startswith("⚠️") and "too long for a link" in too_long.value


def test_contrast_pairs_come_from_the_file_when_it_is_there(tmp_path):
    path = tmp_path / "contrast_pairs.jsonl"
    rows = [
        {"a": "good", "b": "not good", "label_a": 1, "label_b": 0, "kind": "negation"},
        {"a": "fine", "b": "not fine", "label_a": 1, "label_b": 0, "kind": "negation"},
        {"a": "great", "b": "awful", "label_a": 1, "label_b": 0, "kind": "antonym"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    first_of_each_kind_first = [("good", "not good", "negation"), ("great", "awful", "antonym")]
    assert contrast_pairs(path) == [*first_of_each_kind_first, ("fine", "not fine", "negation")]
    assert contrast_pairs(path, limit=1) == [("good", "not good", "negation")]
    path.write_text("{broken json\n")
    assert contrast_pairs(path) == CONTRAST_PAIRS
    assert contrast_pairs(tmp_path / "missing.jsonl") == CONTRAST_PAIRS
