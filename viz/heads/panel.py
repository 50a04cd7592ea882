"""The heads panel of a tab: head table and grid after each run, a click for one head's map, and the
model run again with chosen heads switched off. Laid out here so app.py only calls heads_panel()."""

import html
import logging
from dataclasses import dataclass

import gradio as gr

from ..page.progress import reporter
from ..page.scripts import call
from ..page.theme import HEADS_GRID, waiting_plot
from ..server import hosting
from ..server.events import FOLLOW_UP, PRIVATE
from ..server.stops import Stops
from ..tasks import TASKS
from .clicked import head_heatmap, selected_head, table_head
from .grid import empty_grid
from .measure import head_table
from .names import head_choices
from .over_set import (
    OVER,
    THIS,
    chosen_set,
    effects_note,
    over_set_csv,
    over_set_status,
    over_set_table,
    switch_choices,
)
from .switch_off import add_head, switch_off
from .table import TABLE_JS, empty_table, head_table_view

PROGRESS = gr.Progress()  # a handler parameter defaulting to a gr.Progress gets the event's progress bar
OVER_SET = Stops()  # Stop: a client's head table over the set ends after the input it is at
log = logging.getLogger(__name__)


def effect_grid(value, elem_id: str) -> gr.Dataframe:
    """The layer x head grid of effects. It takes the full width, the clicked head's map below; its cells are narrow
    (theme.CSS, HEADS_GRID), so a 6 x 12-head model's thirteen columns fit at 1440 px at six decimals; on a phone the
    layer names stay in sight while the heads scroll sideways."""
    return gr.Dataframe(
        value,
        label="Effect, layer × head (click a cell)",
        interactive=False,
        elem_id=elem_id,
        elem_classes=[HEADS_GRID],
    )


def heads_off(choices: list[tuple[str, str]], elem_id: str) -> gr.Dropdown:
    """The heads to switch off: one multi-select of every head ('layer 2 · head 3'), filled by picking or typing
    ('head 3' lists every third head), or by clicking a head in the grid or the table and then 'Switch the clicked
    head off'. It replaced a checkbox per head: 72 for a 6 x 12-head model took three phone screens."""
    return gr.Dropdown(
        choices,
        value=[],
        multiselect=True,
        filterable=True,
        label="Heads to switch off",
        info="Pick or type heads, or click one in the grid or the table and switch it off.",
        elem_id=elem_id,
    )


def heads_panel(models, task: str, main_state: gr.State, run_event, inputs: list) -> None:
    """Add the panel; it measures the heads after `run_event` (the tab's model run) on `inputs`
    (the text, and for translation the decoding and beam size), reusing the run's result where main_state
    holds one (a translation: no second decoding). models: the tab's ModelRegistry; the panel uses the model
    that made main_state's view, and its head choices follow that model's size."""
    p = f"{task}-heads"
    pipe = models.get()
    layers, n_heads = pipe.head_layers, pipe.n_heads
    state, clicked = gr.State(None), gr.State(None)
    gr.Markdown(f"### What each head does\n{TASKS[task].heads_help}")
    status = gr.Markdown(elem_id=f"{p}-status")
    grid = effect_grid(empty_grid(layers, n_heads), elem_id=f"{p}-grid")
    add = gr.Button("Switch the clicked head off", size="sm", elem_id=f"{p}-add")
    heatmap = waiting_plot(f"{p}-heatmap")
    over = over_set_controls(p, task)
    table = gr.HTML(
        empty_table(layers).html(),
        label="Head table (click a header to sort, a row for its head)",
        show_label=True,
        container=True,
        js_on_load=TABLE_JS,
        elem_id=f"{p}-table",
    )
    gr.Markdown(TASKS[task].columns_help)
    gr.Markdown("#### Switch heads off")
    chosen = heads_off(head_choices(layers, n_heads), elem_id=f"{p}-off")
    run = gr.Button("Run with these heads off", variant="secondary", elem_id=f"{p}-run")
    compare = gr.HTML(elem_id=f"{p}-compare")

    def measure(view, *args, progress=PROGRESS):
        model = models.get(getattr(view, "model", None))
        choices = gr.Dropdown(choices=head_choices(model.head_layers, model.n_heads), value=[])
        report = reporter(progress, "Switching each head off", "heads")
        measured, grid, table, status = head_table(model, task, *args, result=getattr(view, "result", None),
                                                   progress=report)  # fmt: skip
        return measured, grid, table.html(), status, choices, THIS

    outputs = [state, grid, table, status, chosen, over.choice]
    run_event.then(measure, [main_state, *inputs], outputs, **FOLLOW_UP)
    wire_over_set(over, models, task, main_state, state, table)
    for source, pick in ((grid, selected_head), (table, table_head)):  # a head clicked in the grid or the table
        source.select(pick, [state], [clicked], **PRIVATE).then(
            head_heatmap, [main_state, state, clicked], [heatmap], **PRIVATE
        )
    add.click(add_head, [chosen, clicked], [chosen], **PRIVATE)

    def run_off(view, heads_view, selected):
        return switch_off(models.get(getattr(view, "model", None)), heads_view, selected)

    run.click(run_off, [main_state, state, chosen], [compare], **PRIVATE)


@dataclass
class OverSetUI:
    """The head table's switch between this input and the bundled set, with its Stop, status and CSV download."""

    choice: gr.Radio
    stop: gr.Button
    download: gr.Button
    status: gr.Markdown
    csv: gr.Textbox  # hidden: the last measurement over the set as CSV, saved by the browser (save_text.js)
    name: str  # the CSV file's name


def over_set_controls(p: str, task: str) -> OverSetUI:
    with gr.Row():
        choice = gr.Radio(switch_choices(task), value=THIS, label="Head table", elem_id=f"{p}-over")
        stop = gr.Button("Stop", size="sm", variant="stop", elem_id=f"{p}-over-stop")
        download = gr.Button("Download CSV", size="sm", elem_id=f"{p}-over-download")
    status = gr.Markdown(elem_id=f"{p}-over-status")
    with gr.Row(elem_classes=["views-hidden"]):
        csv = gr.Textbox(show_label=False, container=False, elem_id=f"{p}-over-csv")
    return OverSetUI(choice, stop, download, status, csv, f"{p}-over-set.csv")


def measure_over_set(pipe, task: str, progress=None, stop=None, choice=OVER, seconds=None) -> tuple[str, str, str]:
    """(table HTML, status, CSV) of the head table over the set of `choice` (viz.heads.over_set: the task's bundled
    set, with the effects or not; the induction set), by `pipe`; a plain message where the set or the model cannot
    give it. seconds: this input's head table took that long (the estimate of the effects' cost)."""
    chosen = chosen_set(task, choice)
    if chosen is None:
        return gr.skip(), "The bundled set of this task is not available here.", ""
    try:
        result = pipe.head_table_over(chosen.inputs, progress=progress, stop=stop, name=chosen.name,
                                      effects=chosen.effects)  # fmt: skip
    except Exception as e:  # noqa: BLE001 (the page says so; the table of this input stands)
        log.exception("head table over the set failed")
        return gr.skip(), f"Could not measure the heads over the set: {html.escape(str(e) or type(e).__name__)}", ""
    if result.n == 0 and result.stopped:
        return gr.skip(), "Stopped before any input was measured.", ""
    if result.n == 0:
        unread = f"None of the {result.asked} inputs could be read by this model (too long for it, or no tokens)."
        return gr.skip(), unread, ""
    status = over_set_status(result, chosen.unit) + effects_note(result, chosen, seconds)
    return over_set_table(result).html(), status, over_set_csv(result)


def wire_over_set(ui: OverSetUI, models, task: str, main_state, state, table) -> None:
    """A choice over a set measures in the background (progress, Stop); "this input" shows the run's table."""

    def switch(choice, view, heads_view, request: gr.Request = None, progress=PROGRESS):
        if choice == THIS:
            this = empty_table(models.get().head_layers) if heads_view is None else head_table_view(heads_view.rows)
            return this.html(), "", ""
        report = reporter(progress, "Measuring the heads over the set", TASKS[task].units)
        pipe = models.get(getattr(view, "model", None))
        with OVER_SET.watch(request) as stopped:
            seconds = getattr(heads_view, "seconds", None)
            return hosting.run_as(request, measure_over_set, pipe, task, report, stopped, choice, seconds)

    outputs = [table, ui.status, ui.csv]
    ui.choice.input(switch, [ui.choice, main_state, state], outputs, trigger_mode="always_last", **PRIVATE)
    ui.stop.click(OVER_SET.press, None, None, concurrency_limit=None, **PRIVATE)
    ui.download.click(None, [ui.csv], None, js=call("save_text.js", ui.name), **PRIVATE)
