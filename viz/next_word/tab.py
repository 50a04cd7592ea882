"""The Next word tab (task "lm"): a prompt continued token by token, streamed, with a step slider over what the
model read at each step, its top-10 next tokens, what drives the token of the step shown (the shared explanation
panel, with its faithfulness), inside one head (rotation and key/value groups), the shared views and heads panel for
its causal attention, a share link, the download and a second prompt to compare. Every elem_id starts with "lm-".
The handlers are in viz.next_word.handlers and viz.share.lm_share."""

from dataclasses import dataclass

import gradio as gr

from pipelines.language_model import MAX_NEW_TOKENS

from ..attention import inside_head_panel, layer_by_layer, score_parts_panel, task_views, views_panel
from ..compare import input_panels
from ..examples import LM_EXAMPLES
from ..explanations import explanation_panel, step_matrix
from ..heads.composition_panel import composition_panel
from ..heads.panel import heads_panel
from ..inputs import LM_DECODINGS, clamp_layer_head
from ..models import model_choice, training_step
from ..models.loading import GET_SMOLLM2, SMOLLM2_NAME
from ..page import landing, layout
from ..server import hosting
from ..server.events import FOLLOW_UP, PRIVATE
from ..server.stops import Stops
from ..share import lm_share, share_ui
from ..tasks import TASKS
from . import handlers as lm

CHAT_LABEL = "chat template: the prompt goes in as a user message, wrapped in the model's chat template"
STEP_HELP = (
    "### Step by step\nAt step *s* the model had read the prompt and the *s − 1* tokens it wrote before, and chose "
    "token *s*. Move the slider: the top-10 and every attention view show what it read then (causal: a token reads "
    "only what came before it, so the cells above the diagonal are empty)."
)
GENERATIONS = Stops()  # Stop: the running generation of its client ends at its next token


@dataclass
class LMInputs:
    """The tab's inputs (read by its run, its share links and its compare panel)."""

    prompt: gr.Textbox
    chat: gr.Checkbox  # the prompt through the model's chat template
    decoding: gr.Radio
    max_new: gr.Slider
    temperature: gr.Slider
    top_p: gr.Slider
    seed: gr.Number
    submit: gr.Button
    stop: gr.Button


@dataclass
class LMViews:
    """The tab's views under the continuation and in its sections (viz.page.layout)."""

    step: gr.Slider
    next_plot: gr.Plot  # the top-10 next tokens of the step shown
    layer: gr.Radio
    head: gr.Radio
    scale: gr.Radio
    hide: gr.Checkbox
    single: gr.Plot  # the large heatmap
    overview: gr.Plot
    views: views_panel.ViewsUI
    snapshot: training_step.TrainingStepUI


def _inputs() -> LMInputs:
    """The prompt box, the chat checkbox, the decoding options, the buttons and the examples."""
    box = TASKS["lm"].box
    prompt = gr.Textbox(label=box.label, placeholder=box.placeholder, lines=box.lines, max_lines=box.max_lines,
                        elem_id="lm-input")  # fmt: skip
    chat = gr.Checkbox(False, label=CHAT_LABEL, elem_id="lm-chat")
    with gr.Row():
        decoding = gr.Radio(list(LM_DECODINGS), value="greedy", label="Decoding", elem_id="lm-decoding")
        max_new = gr.Slider(1, MAX_NEW_TOKENS, value=lm.DEFAULT_NEW_TOKENS, step=1, label="Max new tokens",
                            elem_id="lm-max-new-tokens")  # fmt: skip
    with gr.Row():
        temperature = gr.Slider(0.05, 2.0, value=lm.DEFAULT_TEMPERATURE, step=0.05, label="Temperature (sampled)",
                                elem_id="lm-temperature")  # fmt: skip
        top_p = gr.Slider(0.05, 1.0, value=lm.DEFAULT_TOP_P, step=0.05, label="Top-p (sampled)", elem_id="lm-top-p")
        seed = gr.Number(None, label="Seed (sampled; empty: a new one, shown in the status)", precision=0,
                         elem_id="lm-seed")  # fmt: skip
    with gr.Row():
        submit = gr.Button("Generate", variant="primary", elem_id="lm-submit")
        stop = gr.Button("Stop", variant="stop", elem_id="lm-stop")
    examples = gr.Examples(
        examples=[[text, chat_on] for _, text, chat_on in LM_EXAMPLES], inputs=[prompt, chat],
        example_labels=[name for name, _, _ in LM_EXAMPLES], label="Examples", elem_id="lm-examples", **PRIVATE,
    )  # fmt: skip
    landing.press_after(examples.load_input_event, "lm", prompt)
    return LMInputs(prompt, chat, decoding, max_new, temperature, top_p, seed, submit, stop)


def _notes(models) -> str:
    """What the model choice offers, and how to get SmolLM2 when it cannot load here (not installed, and offered from
    the Hub, if at all, where the Hub cannot be reached)."""
    if SMOLLM2_NAME in models.names and not models.entries[SMOLLM2_NAME].unavailable:
        where = models.entries[SMOLLM2_NAME].note  # from the Hub: what it is, and that it loads on first use
        return "SmolLM2 is instruction-tuned: tick *chat template* for a question. Ours was trained here on IMDB " + (
            f"reviews. {where}" if where else "reviews."
        )
    return f"{SMOLLM2_NAME} is not installed; to offer it: `{GET_SMOLLM2}` and restart the app."


def _views(models, page) -> LMViews:
    """The step slider and the top-10 under the continuation, the heatmap with its layer and head, and the shared
    views in the sections (viz.page.layout)."""
    with page.answer:
        gr.Markdown(STEP_HELP)
        step = gr.Slider(1, 2, value=1, step=1, label="Step", interactive=False, elem_id="lm-step")
        next_plot = gr.Plot(show_label=False, elem_id="lm-next")
    with page.heatmap:
        main = layout.main_heatmap("lm", models.get(), "large plot")
    layer, head, scale, hide, single = main.layer, main.head, main.scale, main.hide, main.plot
    with page.section("All heads"):
        overview = gr.Plot(show_label=False, elem_id="lm-overview")
        views = views_panel.focus_and_model("lm", scale, hide, main.clicks)
    with page.section("Training steps"):
        snapshot = training_step.build(models, "lm")
    return LMViews(step, next_plot, layer, head, scale, hide, single, overview, views, snapshot)


def _run(models):
    """The button's handler: streams (state, continuation, status, top-10, heatmap, step, layer, head)."""

    def run(prompt, decoding, temperature, top_p, seed, max_new, chat, name, position, layer, head, scale, hide,
            request: gr.Request = None):  # fmt: skip
        """Generate: the text token by token, then the maps, the step slider at the last step and the heatmap."""
        chosen, name = model_choice.resolve(models, training_step.chosen(models, name, position))
        if chosen is None:
            yield None, "", name, None, None, gr.skip(), gr.skip(), gr.skip()
            return
        with GENERATIONS.watch(request) as stopped:
            options = (decoding, temperature, top_p, seed, max_new, chat, name, stopped)
            # the model calls are queued as this request's client's (pipelines.hosting.serving.client_source)
            for view, text, status, bar in lm.generate(chosen, prompt, *options):
                if view is None and status.startswith("Generating"):
                    yield gr.skip(), text, status, bar, gr.skip(), gr.skip(), gr.skip(), gr.skip()
                    continue
                asked, (layer, head) = (layer, head), clamp_layer_head(chosen, layer, head)
                heatmap = task_views.drawn_heatmap(view, layer, head, scale, hide)
                status = training_step.noted(models, name, status)
                step = gr.Slider(**lm.step_slider_value(view))
                yield view, text, status, bar, heatmap, step, *model_choice.sized(chosen, layer, head, asked)

    return run


def _api(models, state) -> None:
    """/generate on the default model; hidden inputs, checked by the handler (viz.next_word.handlers)."""
    pipe = models.get()

    def generate(prompt: str, max_new_tokens=None, decoding=None, temperature=None, top_p=None, seed=None,
                 request: gr.Request = None):  # fmt: skip
        """Continue a prompt: (continuation, the first step's top next tokens, status). null: the default (greedy,
        20 new tokens; sampled: temperature 0.8, top-p 0.95, a new seed, named in the status)."""
        return hosting.run_as(request, lm.api_generate, pipe, prompt, max_new_tokens, decoding, temperature, top_p,
                              seed)  # fmt: skip

    inputs = [gr.Textbox(visible=False), gr.Number(visible=False), gr.Radio(list(LM_DECODINGS), visible=False)]
    inputs += [gr.Number(visible=False) for _ in range(3)]
    outputs = [gr.Textbox(visible=False), gr.Label(visible=False), gr.Markdown("", visible=False)]
    hosting.api_endpoint(generate, inputs, outputs, "generate", **hosting.MODEL_EVENTS)


def lm_tab(models, demo: gr.Blocks) -> None:
    """The Next word tab over a ModelRegistry (viz.models.loading.lm_registry): the model choice and the training
    step pick which model the run and every panel use; the API serves the default."""
    state = gr.State(None, time_to_live=hosting.STATE_TTL_S)
    page = layout.task_page("lm", layout.present(models))
    with page.ask:
        i = _inputs()
    with page.answer:
        choice = model_choice.choice(models, "lm")
        output = gr.Textbox(label="Continuation", interactive=False, lines=4, elem_id="lm-output")
        status = gr.Markdown(label="Status", elem_id="lm-status")
        share = share_ui.share_controls("lm")
        layout.model_notes(models, "lm", _notes(models))
        options = [i.prompt, i.decoding, i.temperature, i.top_p, i.seed, i.max_new, i.chat]
    with page.explain:
        panel = explanation_panel.build(models.get(), "lm")
        every_token = step_matrix.build()
    v = _views(models, page)
    with page.section("Inside one head"):
        inside = inside_head_panel.build("lm")
    page.opens("Inside one head", inside.accordion)  # one click: the section, its view recorded and drawn
    run_inputs = [*options, choice, v.snapshot.slider, v.layer, v.head, v.scale, v.hide]
    outputs = [state, output, status, v.next_plot, v.single, v.step, v.layer, v.head]
    generated = i.submit.click(_run(models), run_inputs, outputs, **hosting.MODEL_EVENTS, **PRIVATE,
                               trigger_mode="always_last", **hosting.first_view(status))  # fmt: skip
    i.stop.click(GENERATIONS.press, None, None, concurrency_limit=None, **PRIVATE)
    training_step.wire(v.snapshot, models, "lm", choice)
    painted = hosting.after_paint(generated, status)
    drawn = views_panel.wire(v.views, "lm", state, v.layer, v.head, [v.single], v.overview, painted)
    step_io = ([state, v.layer, v.head, v.step, v.scale, v.hide], [v.single, v.next_plot])
    stepped = v.step.input(lm.show_step, *step_io, trigger_mode="always_last", **PRIVATE)
    stepped.then(task_views.overview, [state, v.layer, v.scale, v.hide], [v.overview], **FOLLOW_UP)
    hosting.watch_for_expiry(state, v.layer, v.head, v.step)
    layers = layer_by_layer.section(page, models, "lm", state, v.step, drawn=drawn)
    linked = lm_share.wire_lm_links(demo, models, share, i=i, v=v, choice=choice, method=panel.method, state=state,
                                    drawn=drawn, layers=layers)  # fmt: skip
    # after a link's step is set (nothing to set otherwise), so that the step the slider shows is the one explained
    explanation_panel.wire(panel, models, state, linked, step=v.step)
    step_matrix.wire(every_token, models, state, panel.method)
    inside_head_panel.wire(inside, models, state, v.layer, v.head, v.views.token, v.views.kind, v.step, drawn)
    score_parts_panel.section(page, models, "lm", state, v.layer, v.head)
    _api(models, state)
    with page.section("What each head does"):
        heads_panel(models, "lm", state, drawn, [i.prompt])
        composition_panel(models, "lm", state, i.prompt)
    with page.section("Compare"):
        input_panels.lm_compare_panel(models, i=i, v=v, choice=choice)
    page.close(demo)
