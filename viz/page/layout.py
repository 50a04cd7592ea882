"""One layout for every task tab, built here once so that the three tabs place their parts alike.

A tab opens on what answers the visitor's question, its main view: what they ask (the input, its options, the
button, the examples) beside what the model answers (model choice, output, status, share), then the explanation
beside one large heatmap with its layer and head pickers. Every other view is one click away, in the same place in
every tab: the sections under the main view, gr.Tabs opened in SECTIONS' order (elem_id "<task>-sections", each
section "<task>-section-<slug>"), all closed until one is clicked. A section a tab does not have is left out of the
row of buttons (hidden), so the others keep their order.

The parts are laid out empty first, in page order, and a tab builder fills them in whatever order its wiring needs:

    page = layout.task_page("sentiment", shown=layout.present(models))
    with page.ask:
        review = ...
    with page.section("Compare"):
        compare_panel(...)
"""

from dataclasses import dataclass

import gradio as gr

from ..server.events import PRIVATE
from . import scripts
from .sections import SECTIONS, section_id

# The sections start closed (no section's id is NONE_OPEN): the page ends under the main view, each section one click
# away; one open by default (the small multiples of a 12-head layer are 1,100 px tall) took the page past 2,700 px.
NONE_OPEN = "none"
MORE = "**More views of this result**, one click each:"
# a share link's parameter (viz.share.links) -> the section it sets
LINKED = {"training_step": "Training steps", "layers": "Layer by layer"}
FAITHFULNESS = "How faithful is this explanation? (measured on this input: numbers and deletion curve)"


@dataclass
class TaskPage:
    """The empty parts of one tab, in page order; `with page.ask:` (or a section) adds to a part."""

    task: str
    ask: gr.Column
    answer: gr.Column
    explain: gr.Column
    heatmap: gr.Column
    sections: gr.Tabs
    tabs: dict[str, gr.Tab]

    def section(self, name: str) -> gr.Tab:
        return self.tabs[name]

    def opens(self, name: str, accordion: gr.Accordion) -> None:
        """Opening the section also opens this accordion in it, with what it does on opening (inside one head records
        the heads then): the section's view comes with the one click."""
        self.tabs[name].select(None, None, None, js=scripts.call("open_accordion.js", accordion.elem_id))

    def close(self, demo: gr.Blocks) -> None:
        """Once the tab is built: a section left empty (a view this task does not have) is hidden too, and a share
        link that sets a view in a section opens it (open_for_links)."""
        for tab in self.tabs.values():
            tab.visible = tab.visible and bool(tab.children)
        open_for_links(demo, self.task)


def present(models) -> tuple[str, ...]:
    """The sections a tab over this ModelRegistry has: "Training steps" only where one of its models has training
    snapshots."""
    snapshots = any(models.snapshots(name) for name in models.names)
    return tuple(name for name in SECTIONS if name != "Training steps" or snapshots)


def task_page(task: str, shown: tuple[str, ...] = SECTIONS) -> TaskPage:
    """Lay out a tab's parts, empty (inside its gr.Tab): the main view's two rows, then the sections."""
    with gr.Row(equal_height=False, elem_classes=["main-view"]):
        ask = gr.Column(scale=1, min_width=320, elem_id=f"{task}-ask")
        answer = gr.Column(scale=1, min_width=320, elem_id=f"{task}-answer")
    with gr.Row(equal_height=False, elem_classes=["main-view"]):
        explain = gr.Column(scale=2, min_width=320, elem_id=f"{task}-explain")
        heatmap = gr.Column(scale=3, min_width=320, elem_id=f"{task}-main-heatmap")
    gr.Markdown(MORE, elem_id=f"{task}-sections-help")
    with gr.Tabs(selected=NONE_OPEN, elem_id=f"{task}-sections", elem_classes=["sections"]) as sections:
        tabs = {
            name: gr.Tab(name, id=section_id(task, name), elem_id=section_id(task, name), visible=name in shown)
            for name in SECTIONS
        }
    for tab in tabs.values():
        tab.select(None, None, None, js=scripts.script("resize_plots.js"), **PRIVATE)
    return TaskPage(task, ask, answer, explain, heatmap, sections, tabs)


def faithfulness(elem_id: str) -> gr.Accordion:
    """Where an explanation's long parts go (its faithfulness table and deletion curve): closed, under the
    explanation, so that they do not push the heatmap down."""
    return gr.Accordion(FAITHFULNESS, open=False, elem_id=elem_id)


def _choices(n: int) -> list[tuple[str, int]]:
    return [(str(i + 1), i) for i in range(n)]


@dataclass
class MainHeatmap:
    """The main view's heatmap and its controls."""

    layer: gr.Radio
    head: gr.Radio
    scale: gr.Radio
    hide: gr.Checkbox
    plot: gr.Plot
    clicks: tuple  # where clicks on the tab's plots arrive (views_panel.click_boxes)


def main_heatmap(task: str, pipe, plots: str) -> MainHeatmap:
    """The main view's heatmap (elem_id '<task>-attention') under its layer and head pickers, sized to the tab's
    default model (`plots`: which plots the head picks), with the colour scale and hidden tokens under it, and the
    boxes its clicks go to (on the page from the start, as the heatmap is)."""
    from ..attention import views_panel

    with gr.Row():
        layer = gr.Radio(_choices(pipe.n_layers), value=0, label="Layer", elem_id=f"{task}-layer")
        head = gr.Radio(_choices(pipe.n_heads), value=0, label=f"Head ({plots})", elem_id=f"{task}-head")
    plot = gr.Plot(show_label=False, elem_id=f"{task}-attention")
    scale, hide = views_panel.options(task)
    return MainHeatmap(layer, head, scale, hide, plot, views_panel.click_boxes(task))


def model_notes(models, task: str, notes: str | None = None) -> None:
    """What each model of the tab's choice is, in a closed accordion under the answer (it stood between the
    prediction and the explanation); hidden when the tab has one model. notes: the tab's own text, else
    model_choice's."""
    from ..models import model_choice

    shown = len(models.names) > 1 or notes is not None
    with gr.Accordion("About these models", open=False, visible=shown, elem_id=f"{task}-about-models"):
        if notes is None:
            model_choice.choice_notes(models, task)
        else:
            gr.Markdown(notes, elem_id=f"{task}-model-notes")


def open_for_links(demo: gr.Blocks, task: str) -> None:
    """A share link that sets a view kept in a section (LINKED) opens that section of its tab as the page loads."""
    from .landing import page_step

    sections = {parameter: section_id(task, name) for parameter, name in LINKED.items()}
    demo.load(None, None, None, js=page_step("open_linked_section.js", task, sections), **PRIVATE)
