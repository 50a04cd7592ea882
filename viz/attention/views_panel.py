"""The attention views of a tab, laid out and wired: colour scale and hidden tokens (options under the layer and
head controls), token focus, and the model view (every layer x head, drawn only once its accordion is opened).

The same events serve every tab: a tab names its task (pipelines.tasks), whose kinds of attention and large heatmaps
the events draw.
A click in the page (viz/page/js/plot_clicks.js) writes into a hidden textbox: a heatmap cell picks its row's token,
a thumbnail of the model view sets the layer and head controls."""

from dataclasses import dataclass
from functools import partial, wraps

import gradio as gr

from pipelines.attention import attention_views as av
from pipelines.kinds import KINDS
from pipelines.tasks import TASKS

from ..page.scripts import call
from ..page.sections import section_id
from ..page.theme import waiting_plot
from ..server.events import FOLLOW_UP, PRIVATE
from . import task_views
from . import view_handlers as views

HIDE_LABEL = "Hide special tokens and punctuation (rows renormalised)"
# Clicks on plots, in the browser (viz/page/js/plot_clicks.js), on the plots of every tab's elements
PLOT_HOSTS = ", ".join(f'[id^="{t}-"]' for t in TASKS)
LARGE_PLOT = {kind: f"{t.name}-{KINDS[kind].plot}" for t in TASKS.values() for kind in t.shown}  # kind -> elem_id
# The large plots of a task's other kinds (the translator's encoder and decoder) sit in its "Inside one head" section
# (app.py); a thumbnail of one opens that section before scrolling to it
PLOT_SECTION = {kind: section_id(t.name, "Inside one head") for t in TASKS.values() for kind in t.shown[1:]}


@dataclass
class ViewsUI:
    task: str
    scale: gr.Radio
    hide: gr.Checkbox
    kind: gr.Radio | gr.State
    token: gr.Dropdown
    token_click: gr.Textbox
    open_head: gr.Textbox
    focus: gr.Plot
    accordion: gr.Accordion
    model: gr.Plot
    model_open: gr.State


def options(task: str) -> tuple[gr.Radio, gr.Checkbox]:
    """The colour scale and the hidden tokens, for every attention plot of the tab."""
    with gr.Row(elem_classes=["view-options"]):
        scale = gr.Radio(av.SCALE_CHOICES, value="linear", label="Colour scale", elem_id=f"{task}-scale")
        hide = gr.Checkbox(False, label=HIDE_LABEL, elem_id=f"{task}-hide-tokens")
    return scale, hide


def kind_choices(task: str) -> list[tuple[str, str]]:
    """(label, kind) of the kinds a tab draws, in its order."""
    return [(KINDS[kind].choice, kind) for kind in TASKS[task].shown]


def click_boxes(task: str) -> tuple[gr.Textbox, gr.Textbox]:
    """Where clicks on plots arrive (plot_clicks.js, loaded with them, writes into them), out of sight: (token click,
    head opened). A tab lays them out in its main view (viz.page.layout.main_heatmap): the parts of a section are not
    on the page until it is opened, and a click on the main heatmap was lost before "All heads" had been."""
    clicks = call("plot_clicks.js", PLOT_HOSTS) + ";"
    gr.HTML("", js_on_load=clicks, container=False, padding=False, elem_classes=["views-js"])
    with gr.Row(elem_classes=["views-hidden"]):
        token_click = gr.Textbox(elem_id=f"{task}-token-click", show_label=False, container=False)
        open_head = gr.Textbox(elem_id=f"{task}-open-head", show_label=False, container=False)
    return token_click, open_head


def focus_and_model(task: str, scale: gr.Radio, hide: gr.Checkbox, boxes: tuple | None = None) -> ViewsUI:
    """Token focus and the model view (with the kind of attention to show, where the task has several); boxes: the
    tab's click_boxes, else laid out here."""
    choices = kind_choices(task)
    token_click, open_head = boxes or click_boxes(task)
    gr.Markdown("### Token focus\nPick a token, or click a row of a large heatmap: every head of the layer at once.")
    with gr.Row(elem_classes=["view-options"]):
        kind = None
        if len(choices) > 1:
            kind = gr.Radio(choices, value=choices[0][1], label="Attention", elem_id=f"{task}-view-kind")
        token = gr.Dropdown([], value=None, label="Token", elem_id=f"{task}-token", filterable=True)
    focus = waiting_plot(f"{task}-token-focus")
    with gr.Accordion("Model view: every layer × head (click one to open it)", open=False) as accordion:
        model = gr.Plot(show_label=False, elem_id=f"{task}-model-view")
    kind = kind or gr.State(choices[0][1])
    return ViewsUI(task, scale, hide, kind, token, token_click, open_head, focus, accordion, model, gr.State(False))


def _focus_kind(view, kind):
    kinds = task_views.kinds(view)
    return kinds.get(kind) or next(iter(kinds.values()))


def _model(view, scale, hide, kind, is_open):
    if not is_open or view is None:
        return gr.skip()
    return views.model_view(_focus_kind(view, kind), scale, hide)


def _focus(view, layer, token, hide, kind, scale=None):
    return None if view is None else views.token_focus(_focus_kind(view, kind), layer, token, hide, scale)


def _token_box(view):
    choices = [] if view is None else views.token_choices(list(task_views.kinds(view).values()))
    return gr.Dropdown(choices=choices, value=None)


def after_run(view, layer, head, scale, hide, token, kind, is_open):
    """The step after a run: the small multiples, the token list (emptied), token focus (cleared), the model view;
    and the run's own large heatmap (its main kind) again only for a layer or head picked while the run went on
    (task_views.drawn_heatmap). The tab draws its other large heatmaps after the run at the page's choice anyway."""
    moved = view is not None and getattr(view, "drawn_at", None) not in (None, (layer, head))
    main = task_views.heatmap(view, layer, head, scale, hide) if moved else gr.skip()
    return (
        task_views.overview(view, layer, scale, hide),
        _token_box(view),
        None,
        _model(view, scale, hide, kind, is_open),
        main,
    )


def _redraw(fn, outputs: list):
    """An event's handler that redraws from the tab's result: with none yet it leaves its outputs as they are. A
    link sets layer and head and presses the button at once, and the redraw of the layer (no result yet: None
    figures) could answer after the run and wipe the heatmap it had just drawn, the label and status beside it."""

    @wraps(fn)
    def redraw(view, *args):
        if view is None:
            return gr.skip() if len(outputs) == 1 else tuple(gr.skip() for _ in outputs)
        return fn(view, *args)

    return redraw


def wire(ui: ViewsUI, task: str, state, layer, head, large: list, overview, painted):
    """Every event of the views: new result (after `painted`, the first heatmap shown), layer, head, scale, hidden
    tokens, token, kind, model view. `large`: the tab's large heatmaps, in its task's order (pipelines.tasks).
    Returns the event that redraws the rest of a new result (small multiples, token list, model view)."""
    common = [state, layer, head, ui.scale, ui.hide, ui.token, ui.kind, ui.model_open]
    draw = partial(task_views.large_figures, task)  # (view, layer, head, scale, hide, token) -> the large heatmaps

    def on_layer(view, layer, head, scale, hide, token, kind, is_open):
        large_figs = draw(view, layer, head, scale, hide, token)
        return task_views.overview(view, layer, scale, hide), *large_figs, _focus(view, layer, token, hide, kind, scale)

    def on_head(view, layer, head, scale, hide, token, kind, is_open):
        figs = draw(view, layer, head, scale, hide, token)
        return figs if len(figs) > 1 else figs[0]  # gradio takes a one-tuple for one output as the value

    def on_scale(view, layer, head, scale, hide, token, kind, is_open):  # also the hidden tokens' box
        model, focus = _model(view, scale, hide, kind, is_open), _focus(view, layer, token, hide, kind, scale)
        return *draw(view, layer, head, scale, hide, token), task_views.overview(view, layer, scale, hide), model, focus

    def on_token(view, layer, head, scale, hide, token, kind, is_open):
        return *draw(view, layer, head, scale, hide, token), _focus(view, layer, token, hide, kind, scale)

    def on_click(view, layer, head, scale, hide, token, kind, is_open, clicked):
        parsed = views.parse_token(clicked)
        if parsed is None:
            return gr.skip(), *[gr.skip()] * len(large), gr.skip()
        token = f"{parsed[0]}:{parsed[1]}"
        return token, *on_token(view, layer, head, scale, hide, token, kind, is_open)

    def on_kind(view, layer, head, scale, hide, token, kind, is_open):
        return _focus(view, layer, token, hide, kind, scale), _model(view, scale, hide, kind, is_open)

    def on_expand(view, layer, head, scale, hide, token, kind, is_open):
        return True, _model(view, scale, hide, kind, True)

    drawn = painted.then(after_run, common, [overview, ui.token, ui.focus, ui.model, large[0]], **FOLLOW_UP)
    redraws = [
        (layer.change, on_layer, common, [overview, *large, ui.focus]),
        (head.change, on_head, common, large),
        (ui.scale.change, on_scale, common, [*large, overview, ui.model, ui.focus]),
        (ui.hide.change, on_scale, common, [*large, overview, ui.model, ui.focus]),
        (ui.token.input, on_token, common, [*large, ui.focus]),
        (ui.token_click.change, on_click, [*common, ui.token_click], [ui.token, *large, ui.focus]),
    ]
    if isinstance(ui.kind, gr.Radio):
        redraws.append((ui.kind.change, on_kind, common, [ui.focus, ui.model]))
    for event, fn, inputs, outputs in redraws:
        event(_redraw(fn, outputs), inputs, outputs, **PRIVATE)
    ui.accordion.expand(on_expand, common, [ui.model_open, ui.model], **PRIVATE)
    ui.accordion.collapse(lambda: False, None, [ui.model_open], **PRIVATE)
    scroll = call("scroll_to_plot.js", LARGE_PLOT, PLOT_SECTION)
    ui.open_head.change(open_head, [ui.open_head], [layer, head], js=scroll, **PRIVATE)
    return drawn


def open_head(clicked) -> tuple:
    """'layer:head:kind' from a thumbnail -> (layer, head) for the radios, whose change events redraw."""
    try:
        layer, head = (int(x) for x in str(clicked).split("#")[0].split(":")[:2])
    except ValueError:
        return gr.skip(), gr.skip()
    return layer, head
