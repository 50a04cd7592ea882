"""The heads panel of a tab: head table and grid after each run, a click for one head's map, and the
model run again with chosen heads switched off. Laid out here so app.py only calls heads_panel()."""

import gradio as gr

from . import heads

PRIVATE = dict(api_visibility="private")
HELP = {
    "sentiment": "Each head of the classifier, measured on this review. **Effect**: how much the predicted "
    "label's probability changes when that head alone is switched off.",
    "translation": "Each head of the translator (encoder self-attention, decoder self-attention, "
    "cross-attention), measured on this sentence. **Effect**: how much the log-probability of the produced "
    "translation changes (teacher-forced) when that head alone is switched off. **Agreement**: rank "
    "correlation of a cross-attention head with the attribution of each English token to the German ones.",
}
_COLUMNS = (
    "Entropy in nats (0 = all weight on one token); distance in tokens{cross}; *on …*: the average share of "
    "attention on the previous token, on the token itself, on the end ({end}) and on punctuation."
)
COLUMNS_HELP = {  # in the words of each tab: no tokenizer markers
    "sentiment": _COLUMNS.format(cross="", end="the review's last token"),
    "translation": _COLUMNS.format(
        cross=" (cross-attention: from the diagonal)",
        end="the end of the German sentence; for the decoder, the start of the English one",
    ),
}


def heads_panel(models, task: str, main_state: gr.State, run_event, inputs: list) -> None:
    """Add the panel; it measures the heads after `run_event` (the tab's model run) on `inputs`
    (the text, and for translation the decoding and beam size), reusing the run's result where main_state
    holds one (a translation: no second decoding). models: the tab's ModelRegistry; the panel uses the model
    that made main_state's view, and its head choices follow that model's size."""
    p = f"{task}-heads"
    pipe = models.get()
    layers, n_heads = pipe.head_layers, pipe.n_heads
    state, clicked = gr.State(None), gr.State(None)
    gr.Markdown(f"### What each head does\n{HELP[task]}")
    status = gr.Markdown(elem_id=f"{p}-status")
    # The grid takes the full width: a 6 x 12-head model's twelve columns fit at 1440 px, the clicked head's map below
    grid = gr.Dataframe(
        heads.empty_grid(layers, n_heads),
        label="Effect, layer × head (click a cell)",
        interactive=False,
        elem_id=f"{p}-grid",
    )
    add = gr.Button("Switch the clicked head off", size="sm", elem_id=f"{p}-add")
    heatmap = gr.Plot(show_label=False, elem_id=f"{p}-heatmap")
    table = gr.Dataframe(
        heads.empty_table(layers), label="Head table (click a header to sort)", interactive=False, elem_id=f"{p}-table"
    )
    gr.Markdown(COLUMNS_HELP[task])
    gr.Markdown("#### Switch heads off")
    chosen = gr.CheckboxGroup(heads.head_choices(layers, n_heads), label="Heads to switch off", elem_id=f"{p}-off")
    run = gr.Button("Run with these heads off", variant="secondary", elem_id=f"{p}-run")
    compare = gr.HTML(elem_id=f"{p}-compare")

    def measure(view, *args):
        model = models.get(getattr(view, "model", None))
        choices = gr.CheckboxGroup(choices=heads.head_choices(model.head_layers, model.n_heads), value=[])
        return *heads.head_table(model, task, *args, result=getattr(view, "result", None)), choices

    run_event.then(measure, [main_state, *inputs], [state, grid, table, status, chosen], **PRIVATE)
    grid.select(heads.selected_head, [state], [clicked], **PRIVATE).then(
        heads.head_heatmap, [main_state, state, clicked], [heatmap], **PRIVATE
    )
    add.click(heads.add_head, [chosen, clicked], [chosen], **PRIVATE)

    def switch_off(view, heads_view, selected):
        return heads.switch_off(models.get(getattr(view, "model", None)), heads_view, selected)

    run.click(switch_off, [main_state, state, chosen], [compare], **PRIVATE)
