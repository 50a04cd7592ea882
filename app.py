"""The Gradio app: sentiment, translation and the next word, with every attention head one click away.

Run `python app.py`. Models load once at start from $SENTIMENT_MODEL / $TRANSLATION_MODEL (a Hub repo id
or a local folder), else from assets/sentiment and assets/translation; the language model from $LM_MODEL (a folder,
repo id or .gguf file) or the installed SmolLM2 GGUF, with ours ($LM_OURS_MODEL, else assets/lm) beside it (and,
without a SmolLM2 file, SmolLM2 from the Hub: $LM_HUB_MODEL).
RESULT_CACHE=off: every call runs its model (identical calls are otherwise answered from pipelines.hosting.cache).
The logic lives in viz/.
"""

import os
from dataclasses import dataclass

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from pipelines.hosting import budget  # noqa: E402
from pipelines.hosting.cache import ResultCache  # noqa: E402
from pipelines.hosting.memory import tame_malloc  # noqa: E402
from pipelines.hosting.microbatch import MicroBatcher  # noqa: E402
from pipelines.hosting.serving import serve  # noqa: E402
from pipelines.tasks import LM, SENTIMENT, TRANSLATION  # noqa: E402
from viz.attention import inside_head_panel, layer_by_layer, score_parts_panel, task_views, views_panel  # noqa: E402
from viz.attention.inside_head_panel import InsideHeadUI  # noqa: E402
from viz.attention.views_panel import ViewsUI  # noqa: E402
from viz.compare.input_panels import sentiment_compare_panel, translation_compare_panel  # noqa: E402
from viz.compare.model_compare import model_compare_panel  # noqa: E402
from viz.examples import GERMAN, LANDING, REVIEWS  # noqa: E402
from viz.explanations import explanation_panel, translation_explanation_panel  # noqa: E402
from viz.explanations.explanation_panel import ExplanationPanel  # noqa: E402
from viz.explanations.translation_explanation_panel import TranslationExplanationPanel  # noqa: E402
from viz.heads.composition_panel import composition_panel  # noqa: E402
from viz.heads.panel import heads_panel  # noqa: E402
from viz.inputs import LM_DECODINGS, TRANSLATION_DECODINGS, clamp_layer_head  # noqa: E402
from viz.learn.tab import learn_tab  # noqa: E402
from viz.models import model_choice, training_step  # noqa: E402
from viz.models.loading import lm_registry, redact_paths, sentiment_registry, translation_registry  # noqa: E402
from viz.models.training_step import TrainingStepUI  # noqa: E402
from viz.next_word.tab import lm_tab  # noqa: E402
from viz.page import layout, theme  # noqa: E402
from viz.page.landing import land_on_examples, press_after, select_tab_on_load  # noqa: E402
from viz.page.layout import MainHeatmap, TaskPage  # noqa: E402
from viz.sentiment.handlers import analyze_review  # noqa: E402
from viz.server import hosting  # noqa: E402
from viz.server.events import FOLLOW_UP, PRIVATE  # noqa: E402
from viz.server.hosting import MODEL_EVENTS  # noqa: E402
from viz.server.hub_access import settle_offline_mode  # noqa: E402
from viz.share import export_store, share_ui  # noqa: E402
from viz.share.share_ui import ShareControls  # noqa: E402
from viz.tasks import TASKS  # noqa: E402
from viz.translation.handlers import default_decoding, step_slider, translation_step  # noqa: E402
from viz.translation.handlers import translate as translate_german  # noqa: E402

CONCURRENCY = 2  # redraws at once (figures only; they never run a model)
# A tab's button pressed while its last run is still pending runs once more when that one ends, with the inputs
# then: gradio's default for a click ("once") dropped the press, so three quick arrow keys on the translator's
# training-step slider (each presses the button) showed step 653 beside the translation of step 102.
PRESS = dict(**MODEL_EVENTS, **PRIVATE, trigger_mode="always_last")
INTRO = """\
# How transformers pay attention
New to attention? Start with **Learn**: it walks your own sentence through small transformers, one idea a step.
To go further, the three task tabs (classify a movie review, translate a German sentence, write the next words of a
prompt) show every layer and head of a model, the tools researchers use, and the larger pre-trained models.
"""

STEP_HELP = (
    "### Step by step\nAt each step the decoder produces one English token. Move the slider to see what it "
    "weighed then, and (*All heads*) where every head of the chosen layer looked in the German sentence."
)


def _unavailable(tab, error: str | None, missing) -> None:
    """The tab (viz.tasks.TabTitle) of a model that did not load: why, and how to fix it. Its API endpoint
    (`missing`, given the status) answers the same."""
    what = tab.model
    reason = f"It could not be loaded: `{redact_paths(error or 'no model given')}`"
    fix = f"Set `{tab.env_var}` to a Hugging Face Hub repo id or a local model folder and restart the app."
    gr.Markdown(f"### The {what} model is not available\n\n{reason}\n\n{fix} The other tabs work independently.")
    missing(f"⚠️ The {what} model is not available. {reason}. {fix}")


def _missing_sentiment(status: str) -> None:
    def sentiment(review: str):
        """Classify a review: (probabilities per label, status with any notices)."""
        return None, status

    outputs = [gr.Label(visible=False), gr.Markdown("", visible=False)]
    hosting.api_endpoint(sentiment, [gr.Textbox(visible=False)], outputs, "sentiment")


def _missing_translation(status: str) -> None:
    def translate(german_text: str, decoding: str | None = None, beam_size: float | None = None):
        """Translate German to English: (English text, status with any notices)."""
        return "", status

    inputs = [gr.Textbox(visible=False), gr.Radio(list(TRANSLATION_DECODINGS), visible=False), gr.Number(visible=False)]
    hosting.api_endpoint(translate, inputs, [gr.Textbox(visible=False), gr.Markdown("", visible=False)], "translate")


def _missing_lm(status: str) -> None:
    def generate(prompt: str, max_new_tokens=None, decoding=None, temperature=None, top_p=None, seed=None):
        """Continue a prompt: (continuation, the first step's top next tokens, status)."""
        return "", None, status

    inputs = [gr.Textbox(visible=False), gr.Number(visible=False), gr.Radio(list(LM_DECODINGS), visible=False)]
    inputs += [gr.Number(visible=False) for _ in range(3)]
    outputs = [gr.Textbox(visible=False), gr.Label(visible=False), gr.Markdown("", visible=False)]
    hosting.api_endpoint(generate, inputs, outputs, "generate")


def _input_box(task: str) -> gr.Textbox:
    """The tab's text box (viz.tasks), elem_id '<task>-input'."""
    box = TASKS[task].box
    return gr.Textbox(
        label=box.label, placeholder=box.placeholder, lines=box.lines, max_lines=box.max_lines, elem_id=f"{task}-input"
    )


def _sentiment_inputs():
    """The review box, the button and the example reviews: (review, submit)."""
    review = _input_box("sentiment")
    submit = gr.Button("Analyse sentiment", variant="primary", elem_id="sentiment-submit")
    examples = gr.Examples(
        examples=[[text] for _, text in REVIEWS],
        inputs=[review],
        example_labels=[name for name, _ in REVIEWS],
        label="Example reviews",
        elem_id="sentiment-examples",
        **PRIVATE,
    )
    press_after(examples.load_input_event, "sentiment", review)  # an example runs, as a click does
    return review, submit


@dataclass
class SentimentPage:
    """The sentiment tab's components that its events read (viz.page.layout), by name."""

    page: TaskPage
    review: gr.Textbox
    submit: gr.Button
    choice: gr.Radio  # the model choice (viz.models.model_choice)
    label: gr.Label
    status: gr.Markdown
    share: ShareControls
    panel: ExplanationPanel
    main: MainHeatmap  # the large heatmap with its layer, head, colour scale and hide controls
    overview: gr.Plot
    views: ViewsUI
    snapshot: TrainingStepUI
    inside: InsideHeadUI


def _sentiment_page(models, pipe) -> SentimentPage:
    """The sentiment tab's main view and the sections its events read (viz.page.layout), by name."""
    page = layout.task_page("sentiment", layout.present(models))
    with page.ask:
        review, submit = _sentiment_inputs()
    with page.answer:
        choice = model_choice.choice(models, "sentiment")
        label = gr.Label(label="Prediction", num_top_classes=2, elem_id="sentiment-label")
        status = gr.Markdown(label="Status", elem_id="sentiment-status")
        share = share_ui.share_controls("sentiment")
        layout.model_notes(models, "sentiment")
    with page.explain:
        panel = explanation_panel.build(pipe)
    with page.heatmap:
        main = layout.main_heatmap("sentiment", pipe, "large plot")
    with page.section("All heads"):
        overview = gr.Plot(show_label=False, elem_id="sentiment-overview")
        views = views_panel.focus_and_model("sentiment", main.scale, main.hide, main.clicks)
    with page.section("Training steps"):
        snapshot = training_step.build(models, "sentiment")
    with page.section("Inside one head"):
        inside = inside_head_panel.build("sentiment")
    page.opens("Inside one head", inside.accordion)
    return SentimentPage(
        page, review, submit, choice, label, status, share, panel, main, overview, views, snapshot, inside
    )


def sentiment_tab(models, demo: gr.Blocks) -> None:
    """The sentiment tab over a ModelRegistry (pipelines.models.model_registry): the model choice picks which of its
    models the run, the panels, compare and downloads use; the API serves the default. Laid out by viz.page.layout."""
    pipe = models.get()  # the default: it sizes the controls until a run with another model resizes them
    state = gr.State(None, time_to_live=hosting.STATE_TTL_S)
    p = _sentiment_page(models, pipe)
    page, review, submit, choice, label, status = p.page, p.review, p.submit, p.choice, p.label, p.status
    layer, head, scale, hide, single = p.main.layer, p.main.head, p.main.scale, p.main.hide, p.main.plot
    share, panel, overview, views, snapshot, inside = p.share, p.panel, p.overview, p.views, p.snapshot, p.inside

    def analyze(review: str, name, position, layer: int, head: int, scale: str, hide: bool, request: gr.Request = None):
        """The button: the prediction and the large heatmap come back together (one round trip to a drawn map),
        with the layer and head choices sized to the chosen model (at the training step's snapshot, if any)."""
        chosen, name = model_choice.resolve(models, training_step.chosen(models, name, position))
        if chosen is None:
            return None, None, name, None, gr.skip(), gr.skip()
        view, probabilities, status = hosting.run_as(request, analyze_review, chosen, review, True, name)
        asked, (layer, head) = (layer, head), clamp_layer_head(chosen, layer, head)
        heatmap = task_views.drawn_heatmap(view, layer, head, scale, hide)
        status, sized = training_step.noted(models, name, status), model_choice.sized(chosen, layer, head, asked)
        return view, probabilities, status, heatmap, *sized

    def sentiment(review: str, request: gr.Request = None):
        """Classify a review: (probabilities per label, status with any notices)."""
        return hosting.run_as(request, analyze_review, pipe, review, False)[1:]

    outputs = [state, label, status, single, layer, head]
    inputs = [review, choice, snapshot.slider, layer, head, scale, hide]
    predicted = submit.click(analyze, inputs, outputs, **PRESS, **hosting.first_view(label))
    training_step.wire(snapshot, models, "sentiment", choice)  # a new model or step reads the review again
    # then the small multiples and the other views, then the explanation (integrated gradients takes a core for a
    # second or two); a new layer redraws the plots of a layer, a new head only the large one
    painted = hosting.after_paint(predicted, label)
    drawn = views_panel.wire(views, "sentiment", state, layer, head, [single], overview, painted)
    explanation_panel.wire(panel, models, state, drawn)
    inside_head_panel.wire(inside, models, state, layer, head, views.token, views.kind, new_result=drawn)
    score_parts_panel.section(page, models, "sentiment", state, layer, head)
    layers = layer_by_layer.section(page, models, "sentiment", state, drawn=drawn)
    hosting.api_endpoint(sentiment, [review], [label, status], "sentiment", **MODEL_EVENTS)
    hosting.watch_for_expiry(state, layer, head)
    with page.section("What each head does"):
        heads_panel(models, "sentiment", state, drawn, [review])
        composition_panel(models, "sentiment", state)
    with page.section("Compare"):
        sentiment_compare_panel(models, review=review, choice=choice, step=snapshot, layer=layer, head=head)
        if len(models.names) > 1:
            model_compare_panel(models, review=review, choice=choice, layer=layer, head=head)
    share_ui.wire_sentiment_links(
        demo, models, share, review=review, choice=choice, step=snapshot, layer=layer, head=head,
        method=panel.method, scale=scale, hide=hide, layers=layers,
    )  # fmt: skip
    page.close(demo)


def _translation_inputs(pipe):
    """The German input, the decoding options, the button and the examples: (german, decoding, beam, submit)."""
    german = _input_box("translation")
    with gr.Row():
        default, beam = default_decoding(pipe)  # what the model was evaluated with
        decoding = gr.Radio(
            list(TRANSLATION_DECODINGS), value=default, label="Decoding", elem_id="translation-decoding"
        )
        beam_size = gr.Slider(2, 8, value=beam, step=1, label="Beam size", elem_id="translation-beam")
    submit = gr.Button("Translate", variant="primary", elem_id="translation-submit")
    examples = gr.Examples(
        examples=[[s] for s in GERMAN], inputs=[german], label="Example sentences", elem_id="translation-examples",
        **PRIVATE,
    )  # fmt: skip
    press_after(examples.load_input_event, "translation", german)
    return german, decoding, beam_size, submit


@dataclass
class TranslationPage:
    """The translation tab's components that its events read (viz.page.layout), by name."""

    page: TaskPage
    german: gr.Textbox
    decoding: gr.Radio
    beam_size: gr.Slider
    submit: gr.Button
    choice: gr.Radio  # the model choice: ours, and Marian from the Hub (viz.models.model_choice)
    english: gr.Textbox
    status: gr.Markdown
    share: ShareControls
    explanations: TranslationExplanationPanel
    main: MainHeatmap  # the large cross-attention heatmap with its layer, head, colour scale and hide controls
    step: gr.Slider  # the decoding step
    step_topk: gr.Plot
    cross_overview: gr.Plot
    step_heads: gr.Plot
    views: ViewsUI
    encoder: gr.Plot  # the chosen head's self-attention in the encoder and in the decoder
    decoder: gr.Plot
    inside: InsideHeadUI
    snapshot: TrainingStepUI


def _translation_page(models) -> TranslationPage:
    """The translation tab's main view and its sections (viz.page.layout), by name."""
    pipe = models.get()
    page = layout.task_page("translation", layout.present(models))
    with page.ask:
        german, decoding, beam_size, submit = _translation_inputs(pipe)
    with page.answer:
        choice = model_choice.choice(models, "translation")  # ours, and Marian from the Hub (python app.py)
        english = gr.Textbox(label="English", interactive=False, lines=2, elem_id="translation-output")
        status = gr.Markdown(label="Status", elem_id="translation-status")
        share = share_ui.share_controls("translation")
        layout.model_notes(models, "translation")
    with page.explain:
        explanations = translation_explanation_panel.build()
    with page.heatmap:
        main = layout.main_heatmap("translation", pipe, "large plots")
    scale, hide = main.scale, main.hide
    with page.answer:  # the translation step by step, as the Next word tab's continuation
        gr.Markdown(STEP_HELP)
        step = gr.Slider(1, 2, value=1, step=1, label="Decoding step", interactive=False, elem_id="translation-step")
        step_topk = gr.Plot(show_label=False, elem_id="translation-step-topk")
    with page.section("All heads"):
        cross_overview = gr.Plot(show_label=False, elem_id="translation-overview")
        step_heads = gr.Plot(show_label=False, elem_id="translation-step-heads")
        views = views_panel.focus_and_model("translation", scale, hide, main.clicks)
    with page.section("Inside one head"):
        gr.Markdown("### Self-attention of this head\nThe chosen layer and head in the encoder and in the decoder.")
        with gr.Row(elem_classes=["plot-row"]):
            encoder = gr.Plot(show_label=False, elem_id="translation-encoder")
            decoder = gr.Plot(show_label=False, elem_id="translation-decoder")
        inside = inside_head_panel.build("translation")
    page.opens("Inside one head", inside.accordion)
    with page.section("Training steps"):
        snapshot = training_step.build(models, "translation")
    return TranslationPage(
        page, german, decoding, beam_size, submit, choice, english, status, share, explanations, main, step, step_topk,
        cross_overview, step_heads, views, encoder, decoder, inside, snapshot,
    )  # fmt: skip


def _translate_api(models):
    """The /translate endpoint's function, on the tab's default model."""

    def translate(german_text: str, decoding=None, beam_size=None, request: gr.Request = None):
        """Translate German to English: (English text, status with any notices). null: the default."""
        light = (None, False)  # no model name, no redraws: the decoding alone, no maps
        return hosting.run_as(request, translate_german, models.get(), german_text, decoding, beam_size, *light)[1:]

    return translate


def translation_tab(models, demo: gr.Blocks) -> None:
    """The translation tab over a ModelRegistry (viz.models.loading.translation_registry): the model choice and the
    training-step slider pick which model the run and the panels use; the API serves the default."""
    state = gr.State(None, time_to_live=hosting.STATE_TTL_S)
    p = _translation_page(models)
    page, german, decoding, beam_size, submit = p.page, p.german, p.decoding, p.beam_size, p.submit
    choice, english, status, share = p.choice, p.english, p.status, p.share
    layer, head, scale, hide, cross = p.main.layer, p.main.head, p.main.scale, p.main.hide, p.main.plot
    step, step_heads, step_topk, cross_overview = p.step, p.step_heads, p.step_topk, p.cross_overview

    def run(german_text: str, decoding, beam, name, position, layer, head, scale, hide, request: gr.Request = None):
        """The button: the translation and the large cross-attention heatmap come back together (by the chosen model,
        at the training step's snapshot when the slider is not at the trained model), the layer and head choices
        sized to that model."""
        chosen, name = model_choice.resolve(models, training_step.chosen(models, name, position))
        if chosen is None:
            return None, "", name, None, gr.skip(), gr.skip()
        view, text, status = hosting.run_as(request, translate_german, chosen, german_text, decoding, beam, name)
        asked, (layer, head) = (layer, head), clamp_layer_head(chosen, layer, head)
        heatmap = task_views.drawn_heatmap(view, layer, head, scale, hide)
        sized = model_choice.sized(chosen, layer, head, asked)
        return view, text, training_step.noted(models, name, status), heatmap, *sized

    translate = _translate_api(models)

    def redraw(view, layer, head, scale, hide):  # the other plots of a new translation, with the step slider at 1
        encoder_decoder = task_views.large_figures("translation", view, layer, head, scale, hide)[1:]
        return (*encoder_decoder, step_slider(view), *translation_step(view, layer, 1))

    inputs = [german, decoding, beam_size]
    outputs = [state, english, status, cross, layer, head]
    run_inputs = [*inputs, choice, p.snapshot.slider, layer, head, scale, hide]
    translated = submit.click(run, run_inputs, outputs, **PRESS, **hosting.first_view(english))
    training_step.wire(p.snapshot, models, "translation", choice)  # another model or step translates it again
    painted = hosting.after_paint(translated, english)
    viewed = views_panel.wire(
        p.views, "translation", state, layer, head, [cross, p.encoder, p.decoder], cross_overview, painted
    )
    redrawn = [p.encoder, p.decoder, step, step_heads, step_topk]
    drawn = viewed.then(redraw, [state, layer, head, scale, hide], redrawn, **FOLLOW_UP)
    hosting.api_endpoint(translate, inputs, [english, status], "translate", **MODEL_EVENTS)
    translation_explanation_panel.wire(p.explanations, models, state, step, translated)
    inside_head_panel.wire(p.inside, models, state, layer, head, p.views.token, p.views.kind, step, new_result=drawn)
    score_parts_panel.section(page, models, "translation", state, layer, head)
    layers = layer_by_layer.section(page, models, "translation", state, step, drawn=drawn)
    step_io = ([state, layer, step], [step_heads, step_topk])
    layer.change(translation_step, *step_io, **PRIVATE)
    step.input(translation_step, *step_io, trigger_mode="always_last", **PRIVATE)
    hosting.watch_for_expiry(state, layer, head, step)
    with page.section("What each head does"):
        heads_panel(models, "translation", state, drawn, [german, decoding, beam_size])
        composition_panel(models, "translation", state)
    inputs = dict(german=german, decoding=decoding, beam=beam_size, layer=layer, head=head)
    with page.section("Compare"):
        translation_compare_panel(models, **inputs, training=p.snapshot, choice=choice)
    share_ui.wire_translation_links(
        demo, models, share, **inputs, scale=scale, hide=hide, state=state, drawn=drawn,
        step=[step, step_heads, step_topk], training=p.snapshot, choice=choice, layers=layers,
    )  # fmt: skip
    page.close(demo)


def _sentiment_models(default, wrap, sources: list[str], compare):
    return sentiment_registry(default, wrap, wrap(compare), sources)


def _translation_models(default, wrap, sources: list[str], compare):
    return translation_registry(default, wrap, sources)


def _lm_models(default, wrap, sources: list[str], compare):
    return lm_registry(default, wrap, sources)


# The tabs in the page's order: (the task's TaskUI, the tab builder, the API endpoint of a model that did not load,
# its ModelRegistry given (the served default, how to serve another model, the other sources, the sentiment tab's
# compare model)). What a tab is called and which variable names its model are the TaskUI's (viz.tasks.TabTitle).
TABS = [
    (TASKS[SENTIMENT.name], sentiment_tab, _missing_sentiment, _sentiment_models),
    (TASKS[TRANSLATION.name], translation_tab, _missing_translation, _translation_models),
    (TASKS[LM.name], lm_tab, _missing_lm, _lm_models),
]


def _registries(batcher, pipes: dict, own_process, compare, sources: dict, cache=None) -> dict:
    """Each task's ModelRegistry over its served default (None where the default is missing), with the task's other
    model sources (sources: task name -> folders or repo ids); every model answers identical calls from `cache`."""
    registries = {}
    for ui, _, _, registry in TABS:
        pipe = pipes[ui.name]
        wrap = (lambda task: lambda p: serve(task, p, batcher, cache=cache))(ui.task)
        served = None if pipe is None else serve(ui.task, pipe, batcher, own_process, cache)
        registries[ui.name] = None if served is None else registry(served, wrap, list(sources[ui.name]), compare)
    return registries


def build_demo(
    sentiment=None,
    translation=None,
    lm=None,
    *,
    sentiment_error=None,
    translation_error=None,
    lm_error=None,
    own_process=(),
    sentiment_compare=None,
    sentiment_models: tuple[str, ...] = (),
    lm_models: tuple[str, ...] = (),
    translation_models: tuple[str, ...] = (),
    landing: bool = False,
    cache: bool = True,
) -> gr.Blocks:
    """The app on the given pipelines; a tab whose pipeline is None explains that its model is missing.
    own_process: the tasks whose requests run in a process of their own (pipelines.hosting.processes; python app.py
    sets hosting.OWN_PROCESS). sentiment_compare: a second sentiment pipeline, compared with the first on the
    same review ($SENTIMENT_COMPARE_MODEL). sentiment_models / lm_models: more model folders or repo ids the tab's
    model choice offers, loaded on first use (`python app.py`: the bundled from-scratch sentiment model beside the
    default, when $SENTIMENT_MODEL is not set; our language model beside SmolLM2); translation_models: the same for
    the translation tab (`python app.py`: Marian from the Hub). landing: each tab opens on a
    worked example (LANDING) when the address is not a link (`python app.py` turns it on; the tests leave it off but
    for their own). cache: identical model calls answered from a ResultCache (pipelines.hosting.cache; False: none).
    Launch it with hosting.launch_options(demo)."""
    batcher = MicroBatcher(hosting.MAX_BATCH, parallel=hosting.parallel_models())
    results = ResultCache(budget.BUDGET.bytes(budget.BUDGET.cache)) if cache else None
    names = [ui.name for ui, *_ in TABS]  # build_demo's arguments are in the tabs' order
    pipes = dict(zip(names, (sentiment, translation, lm)))
    errors = dict(zip(names, (sentiment_error, translation_error, lm_error)))
    more = dict(zip(names, (sentiment_models, translation_models, lm_models)))  # each tab's models besides its default
    models = _registries(batcher, pipes, own_process, sentiment_compare, more, results)
    processes = [m.get().process for m in models.values() if m is not None and m.get().process is not None]
    with gr.Blocks(
        title="How transformers pay attention: three tasks", analytics_enabled=False, delete_cache=hosting.DELETE_CACHE
    ) as demo:
        gr.Markdown(INTRO)
        pages = {}
        with gr.Tabs():
            learn_tab(models, demo, warm=False)  # first; its example walked by the first visit (memory: RESULTS)
            for ui, build, missing, _ in TABS:
                task = ui.name
                with gr.Tab(ui.tab.title, id=task, elem_id=f"tab-{task}") as pages[task]:
                    if models[task] is None:
                        _unavailable(ui.tab, errors[task], missing)
                    else:
                        build(models[task], demo)
        select_tab_on_load(demo)
        if landing:
            land_on_examples(demo, {t: (pages[t], LANDING[t]) for t in pages if models[t] is not None})
    hosting.progress_on_one_component(demo)
    theme.skip_off_screen(demo, keep=[f"{ui.name}-attention" for ui, *_ in TABS])  # each tab's first view
    hosting.quiet_queue_analytics()
    demo.queue(default_concurrency_limit=CONCURRENCY, max_size=hosting.QUEUE_SIZE)
    demo.batcher, demo.results = batcher, results  # their counters (results: the cache, None: off), for tests
    hosting.bound_sessions(demo, budget.BUDGET.bytes(budget.BUDGET.sessions))
    export_store.size_for([m.get() for m in models.values() if m is not None])  # the tabs' defaults
    demo.model_processes = processes
    return demo


def main() -> None:
    from viz.models.loading import alternative_sources, load_compare_model, load_lm, load_models

    tame_malloc()
    hosting.set_torch_threads()
    settle_offline_mode()  # one short request: where the Hub does not answer, no model load waits on its retries
    sentiment, translation = load_models()
    lm, lm_models = load_lm()
    demo = build_demo(
        sentiment.pipeline,
        translation.pipeline,
        lm.pipeline,
        sentiment_error=sentiment.error,
        translation_error=translation.error,
        lm_error=lm.error,
        lm_models=tuple(lm_models),
        own_process=hosting.OWN_PROCESS,
        sentiment_compare=load_compare_model(),
        sentiment_models=tuple(alternative_sources("SENTIMENT_MODEL")),
        translation_models=tuple(alternative_sources("TRANSLATION_MODEL")),
        landing=True,
        cache=os.environ.get("RESULT_CACHE", "on") != "off",  # off: every call runs the model (benchmarks)
    )
    demo.launch(**hosting.launch_options(demo))


if __name__ == "__main__":
    main()
