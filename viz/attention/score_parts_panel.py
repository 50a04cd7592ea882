"""The panel of a tab's "Inside one head" section that takes a clicked cell's attention score apart
(viz.attention.score_parts): a click on a cell of a large heatmap (viz/page/js/plot_clicks.js) writes the cell into a
hidden box of the main view; once the panel's accordion is open, each click (and each new layer or head) runs the model
that made the result once for the cell and once for the key the head weighs least, as this page's client."""

import html
import logging
from dataclasses import dataclass

import gradio as gr

from ..page.theme import waiting_plot
from ..server import hosting
from ..server.events import PRIVATE
from .score_parts import NO_RESULT, PICK, score_parts

log = logging.getLogger(__name__)
HELP = (
    "### Why does this head look there?\nClick a cell of a large heatmap: its score (query · key, before the softmax) "
    "is taken apart into one term for each pair of parts of the model that wrote into the query's token and into "
    "the key's (embeddings, earlier heads, earlier feed-forward layers), beside the same for the key the head weighs "
    "least."
)


@dataclass
class ScorePartsUI:
    cell: gr.Textbox  # where a click on a cell arrives ('kind:query:key#nonce'), in the main view
    note: gr.Markdown
    plot: gr.Plot
    is_open: gr.State  # the section has been opened: clicks are taken apart from then on


def cell_box(task: str) -> gr.Textbox:
    """The hidden box a cell's click writes into (elem_id '<task>-cell-click'): in the main view, on the page from the
    start as the heatmaps are."""
    with gr.Row(elem_classes=["views-hidden"]):
        return gr.Textbox(elem_id=f"{task}-cell-click", show_label=False, container=False)


def build(task: str) -> tuple[gr.Accordion, gr.Markdown, gr.Plot]:
    """The panel (an accordion, closed until asked for: nothing is computed before) with its text and figure (elem_id
    '<task>-score-parts'), in the section it is built in."""
    label = "Why does this head look there? Click a cell of a large heatmap"
    with gr.Accordion(label, open=False, elem_id=f"{task}-score-parts-accordion") as accordion:
        gr.Markdown(HELP)
        note = gr.Markdown(f"<p class='ih-note'>{PICK}</p>", elem_id=f"{task}-score-parts-note")
        plot = waiting_plot(f"{task}-score-parts")
    return accordion, note, plot


def take_apart(models, view, cell, layer, head, request: gr.Request = None):
    """(figure, note) for the clicked cell by the model that made the view, queued as the page's client; a plain
    message where anything fails."""
    if view is None:
        return None, NO_RESULT
    try:
        pipe = models.get(getattr(view, "model", None))
        return hosting.run_as(request, score_parts, pipe, view, cell, layer, head)
    except Exception as e:  # the page says so; the other views are unaffected
        log.exception("taking a score apart failed")
        return None, f"Could not take this score apart: {html.escape(str(e) or type(e).__name__)}"


def section(page, models, task: str, state, layer, head) -> ScorePartsUI:
    """Add the panel to the tab's "Inside one head" section and its box to the main view, and wire them: opening the
    panel takes the last clicked cell apart, then every click and every new layer or head does."""
    with page.heatmap:
        cell = cell_box(task)
    with page.section("Inside one head"):
        accordion, note, plot = build(task)
    ui = ScorePartsUI(cell, note, plot, gr.State(False))
    inputs = [state, cell, layer, head]

    def draw(view, cell, layer, head, is_open, request: gr.Request = None):
        if not is_open or not cell:
            return gr.skip(), gr.skip()
        return take_apart(models, view, cell, layer, head, request)

    def opened(view, cell, layer, head, request: gr.Request = None):
        return (True, *(draw(view, cell, layer, head, True, request) if cell else (gr.skip(), gr.skip())))

    accordion.expand(opened, inputs, [ui.is_open, plot, note], **PRIVATE)
    accordion.collapse(lambda: False, None, [ui.is_open], **PRIVATE)
    for event in (cell.change, layer.change, head.change):
        event(draw, [*inputs, ui.is_open], [plot, note], trigger_mode="always_last", **PRIVATE)
    return ui
