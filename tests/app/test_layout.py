"""One layout for the three tabs (viz.page.layout, issue 57): each tab's main view holds its input, output,
explanation and main heatmap; every other view is in its sections, the same ones in the same order in every tab,
closed until one is clicked. Built with app.build_demo on the tiny models, no browser."""

import gradio as gr
import pytest

from viz.page import layout

TASKS = ("sentiment", "translation", "lm")


@pytest.fixture(scope="module")
def demo(sentiment, translation, lm_dir):
    from app import build_demo
    from pipelines import LanguageModelPipeline

    demo = build_demo(sentiment, translation, LanguageModelPipeline.from_pretrained(str(lm_dir)))
    yield demo
    demo.close()


def by_id(demo) -> dict:
    return {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}


def inside(block, container) -> bool:
    """Whether `block` is laid out inside `container`."""
    parent = block.parent
    while parent is not None:
        if parent is container:
            return True
        parent = parent.parent
    return False


@pytest.mark.parametrize("task", TASKS)
def test_each_tab_has_the_sections_in_one_order_closed(demo, task):
    blocks = by_id(demo)
    tabs = blocks[f"{task}-sections"]
    assert isinstance(tabs, gr.Tabs) and tabs.selected == layout.NONE_OPEN  # none open: the page ends under the view
    sections = [c for c in tabs.children if isinstance(c, gr.Tab)]
    assert [s.elem_id for s in sections] == [layout.section_id(task, name) for name in layout.SECTIONS]
    assert [s.label for s in sections] == list(layout.SECTIONS)
    shown = [s.label for s in sections if s.visible]
    assert (
        shown[:5] == ["All heads", "Inside one head", "Layer by layer", "What each head does", "Compare"]
        or task == "lm"
    )
    assert all(s.children for s in sections if s.visible)  # no empty section offered


@pytest.mark.parametrize("task", TASKS)
def test_the_main_view_comes_first_and_the_other_views_in_their_sections(demo, task):
    blocks = by_id(demo)
    tabs = blocks[f"{task}-sections"]
    for main in (f"{task}-input", f"{task}-submit", f"{task}-attention", f"{task}-layer", f"{task}-head"):
        assert not inside(blocks[main], tabs), main
    placed = {
        "All heads": [f"{task}-overview", f"{task}-token", f"{task}-model-view"],
        "What each head does": [f"{task}-heads-grid", f"{task}-heads-table"],
        "Compare": [f"{task}-compare-input"],
        "Layer by layer": [f"{task}-lens-submit", f"{task}-lens", f"{task}-dla"],
        "Training steps": [f"{task}-training-step"],
    }
    for name, ids in placed.items():
        for elem_id in ids:
            assert inside(blocks[elem_id], blocks[layout.section_id(task, name)]), (name, elem_id)


@pytest.mark.parametrize("faithfulness", ["sentiment-faithfulness", "translation-faithfulness", "lm-explanation-curve"])
def test_the_explanations_long_parts_are_in_a_closed_accordion(demo, faithfulness):
    block = by_id(demo)[faithfulness]
    accordion = block.parent
    while accordion is not None and not isinstance(accordion, gr.Accordion):
        accordion = accordion.parent
    assert accordion is not None and accordion.open is False and accordion.label == layout.FAITHFULNESS


def test_the_training_steps_section_is_there_only_for_models_with_snapshots(demo):
    """The tiny models have no snapshots: no "Training steps" button, the slider still there (hidden) for the runs."""
    blocks = by_id(demo)
    for task in TASKS:
        assert not blocks[layout.section_id(task, "Training steps")].visible
        assert f"{task}-training-step" in blocks


def test_a_section_is_named_by_its_slug():
    assert layout.section_id("lm", "What each head does") == "lm-section-what-each-head-does"
    with pytest.raises(KeyError):
        layout.section_id("lm", "Nowhere")
