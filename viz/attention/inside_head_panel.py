"""The "Inside one head" accordion of a tab: closed until asked for (nothing is sent before), then one model run
records every head (pipelines.attention.inside_head), kept in a session state; the chosen token (token focus's), layer,
head, kind of attention and decoding step redraw from that state without running the model again. With no token
chosen it opens on a row (query_of): the step's, the last one read, or the first content token."""

import html
from dataclasses import dataclass

import gradio as gr
import numpy as np

from pipelines.attention import attention_views as av
from pipelines.attention.inside_head import CausalHeadInternals
from pipelines.kinds import KINDS, TGT

from ..page.theme import waiting_plot
from ..server import hosting
from ..server.events import FOLLOW_UP, PRIVATE
from . import inside_head_causal as causal
from . import inside_head_view as draw
from . import view_handlers as views

PICK = "<p class='ih-note'>Pick a token (token focus), or click a row of a large heatmap, to see its row computed.</p>"
OTHER = "Pick a token (token focus), or click a row of a large heatmap, for another."


@dataclass
class InsideHeadUI:
    accordion: gr.Accordion
    steps: gr.HTML
    heads: gr.Plot
    recorded: gr.State  # (input_key of the view it was recorded on, AttentionInternals) or None
    is_open: gr.State


def build(task: str) -> InsideHeadUI:
    label = "Inside one head: how the chosen token's row is computed"
    with gr.Accordion(label, open=False, elem_id=f"{task}-inside-head-accordion") as accordion:
        steps = gr.HTML(PICK, elem_id=f"{task}-inside-head")
        heads = waiting_plot(f"{task}-inside-head-heads")
    recorded = gr.State(None, time_to_live=hosting.STATE_TTL_S)
    return InsideHeadUI(accordion, steps, heads, recorded, gr.State(False))


def query_of(kind: str, token, step, rows: list[str] = ()) -> tuple[int | None, str]:
    """(the row to show, why it is shown: "" for the chosen token). The chosen token where it is a query of this
    kind, else the row the panel opens on: (English rows) the step's; (a causal kind whose rows are the tokens read
    so far) the last row, the one that chose the next token; else the first content token (no special token or
    punctuation; the first row where every one is). rows: the kind's query tokens (no row without them)."""
    parsed = views.parse_token(token)
    side = KINDS[kind].q_side
    if parsed is not None and parsed[0] == side:
        return parsed[1], ""
    if side == TGT and step:
        return int(step) - 1, "the step's row"
    if not len(rows):
        return None, ""
    if KINDS[kind].causal:
        return len(rows) - 1, "the last token read, the one that chose the next"
    content = np.flatnonzero(~av.hidden_positions(list(rows)))
    return (int(content[0]), "the first content token") if len(content) else (0, "the first row")


def opened_on(query: int, label: str, why: str) -> str:
    """The note above a row the panel opened on (no token chosen): which row, why, and how to choose another."""
    row = html.escape(f"{query}:{label}")
    return f"<p class='ih-note'>Row {row}, {why}. {OTHER}</p>"


def recorded_input(view) -> tuple:
    """What pipe.internals reads for this view: its own `internals_input` where it has one (a continuation: the ids
    of its maps), else the text (and a translation's output ids)."""
    own = getattr(view, "internals_input", None)
    if own is not None:
        return own
    result = getattr(view, "result", None)
    return (view.text,) if result is None else (view.text, list(result.target_ids))


def record(models, view):
    """One model run that records every head on the view's input (a translation: on its own output), by the model
    that made the view (models: the tab's ModelRegistry)."""
    return models.get(getattr(view, "model", None)).internals(*recorded_input(view))


def input_key(view) -> tuple:
    """What a recording was made on: the model and what it read."""
    read = tuple(tuple(x) if isinstance(x, list) else x for x in recorded_input(view))
    return getattr(view, "model", None), *read


def _maps(view, step):
    """The view's maps at the step asked for (a continuation's are cut to it), else its maps."""
    at = getattr(view, "maps_at", None)
    return at(step) if at is not None and step else view.maps


def figures(view, internals, kind: str, layer, head, token, step=None):
    """(the steps' HTML, the heads' bars) for one query, from what was recorded."""
    if view is None or internals is None:
        return PICK, None
    kind = kind if kind in internals.kinds else next(iter(internals.kinds))
    ki, maps = internals.kinds[kind], _maps(view, step)
    n_rows = min(ki.q.size(2), len(maps.queries[kind]))
    query, why = query_of(kind, token, step, maps.queries[kind][:n_rows])
    if query is None or not 0 <= query < n_rows:
        return PICK, None
    layer, head = min(max(int(layer or 0), 0), ki.q.size(0) - 1), min(max(int(head or 0), 0), ki.q.size(1) - 1)
    h = internals.head(kind, layer, head, query)
    q_label, k_labels = maps.queries[kind][query], maps.keys[kind]
    h = h.up_to(len(k_labels)) if h.keys.size(0) > len(k_labels) else h  # a causal row cut to the step shown
    extra = causal.causal_html(h, k_labels) if isinstance(h, CausalHeadInternals) else ""
    note = opened_on(query, q_label, why) if why else ""
    return note + draw.steps_html(h, q_label, k_labels, extra), draw.heads_figure(
        internals, kind, layer, query, q_label
    )


def wire(ui: InsideHeadUI, models, state, layer, head, token, kind, step=None, new_result=None) -> None:
    """Opening records (once per result, by the model that made it: models is the tab's ModelRegistry) and draws;
    every choice after that redraws from the recording. step: the decoding step's control (None: no steps)."""
    # One input per positional parameter, the request last: it then reaches run_as (queued as this page's client)
    # whatever gradio does with a left-out parameter (6.31 fills in its default; tests/app/test_browser_inside_head.py)
    step = gr.State(None) if step is None else step
    inputs = [state, ui.recorded, ui.is_open, layer, head, token, kind, step]

    def redraw(view, recorded, is_open, layer, head, token, kind, step, request: gr.Request = None):
        if not is_open or view is None:
            return gr.skip(), gr.skip(), gr.skip()
        if recorded is None or recorded[0] != input_key(view):
            try:
                recorded = (input_key(view), hosting.run_as(request, record, models, view))
            except Exception as e:  # the page says so; the other views are unaffected
                return f"<p class='ih-note'>Could not record the heads: {html.escape(str(e))}</p>", None, None
        return (*figures(view, recorded[1], kind, layer, head, token, step), recorded)

    def opened(view, recorded, layer, head, token, kind, step, request: gr.Request = None):
        """Opening marks it open and draws in one event (the model view's accordion does the same): no second
        event to wait for, or to be lost, between the click and the view."""
        return (True, *redraw(view, recorded, True, layer, head, token, kind, step, request))

    outputs = [ui.steps, ui.heads, ui.recorded]
    opening = [state, ui.recorded, layer, head, token, kind, step]
    ui.accordion.expand(opened, opening, [ui.is_open, *outputs], **PRIVATE)
    ui.accordion.collapse(lambda: False, None, [ui.is_open], **PRIVATE)
    for control in (layer, head, token, kind, step):
        if isinstance(control, gr.State):
            continue
        control.change(redraw, inputs, outputs, **PRIVATE)
    if new_result is not None:
        new_result.then(redraw, inputs, outputs, **FOLLOW_UP)
