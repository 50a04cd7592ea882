"""The heads panel of a tab: head table and grid after each run, a click for one head's map, and the
model run again with chosen heads switched off. Laid out here so app.py only calls heads_panel()."""

import gradio as gr

from ..page.theme import HEADS_GRID, waiting_plot
from ..server.events import FOLLOW_UP
from ..tasks import TASKS
from . import handlers as heads

PRIVATE = dict(api_visibility="private")


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
    grid = effect_grid(heads.empty_grid(layers, n_heads), elem_id=f"{p}-grid")
    add = gr.Button("Switch the clicked head off", size="sm", elem_id=f"{p}-add")
    heatmap = waiting_plot(f"{p}-heatmap")
    table = gr.HTML(
        heads.empty_table(layers).html(),
        label="Head table (click a header to sort)",
        show_label=True,
        container=True,
        js_on_load=heads.SORT_JS,
        elem_id=f"{p}-table",
    )
    gr.Markdown(TASKS[task].columns_help)
    gr.Markdown("#### Switch heads off")
    chosen = gr.CheckboxGroup(
        heads.head_choices(layers, n_heads), label="Heads to switch off", elem_id=f"{p}-off", elem_classes=["heads-off"]
    )
    run = gr.Button("Run with these heads off", variant="secondary", elem_id=f"{p}-run")
    compare = gr.HTML(elem_id=f"{p}-compare")

    def measure(view, *args):
        model = models.get(getattr(view, "model", None))
        choices = gr.CheckboxGroup(choices=heads.head_choices(model.head_layers, model.n_heads), value=[])
        measured, grid, table, status = heads.head_table(model, task, *args, result=getattr(view, "result", None))
        return measured, grid, table.html(), status, choices

    run_event.then(measure, [main_state, *inputs], [state, grid, table, status, chosen], **FOLLOW_UP)
    grid.select(heads.selected_head, [state], [clicked], **PRIVATE).then(
        heads.head_heatmap, [main_state, state, clicked], [heatmap], **PRIVATE
    )
    add.click(heads.add_head, [chosen, clicked], [chosen], **PRIVATE)

    def switch_off(view, heads_view, selected):
        return heads.switch_off(models.get(getattr(view, "model", None)), heads_view, selected)

    run.click(switch_off, [main_state, state, chosen], [compare], **PRIVATE)
