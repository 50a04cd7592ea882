"""The Learn tab, the page's first: the from-scratch path step by step on the live models (viz.learn.handlers),
with a map of the model above the steps, Next and Back (and the arrow keys), a link to each step (?learn=k) and the
next-token step's live sampling sliders. Built by app.build_demo inside its gr.Tab."""

import threading
from dataclasses import dataclass

import gradio as gr

from pipelines.hosting.cache import ResultCache

from ..page.landing import page_step
from ..page.scripts import Code, call, script
from ..server.events import FOLLOW_UP, PRIVATE
from ..server.hosting import MODEL_EVENTS, STATE_TTL_S
from ..share.links import LEARN, learn_step, opens_learn
from . import handlers
from .choices import model_sets
from .handlers import Learned, Sampling
from .view import message_view, step_view

ENGLISH = "The film was slow at first, but the ending made me smile."
GERMAN = "Ein Hund läuft über eine grüne Wiese."
INTRO = """\
## Learn how attention works, one step at a time
Your sentence goes through real transformers, step by step: each step shows one idea, a live figure, the lines of
this project's code that compute it and a check that the page shows the model's own numbers. Use **Next** and
**Back** (or the arrow keys); click a part of the model's map to jump to its step.
"""
GERMAN_HELP = "The translator reads a German sentence: change it here and press “Walk through it”."
MAP_JS = call("learn_map.js", Code("element"), Code("trigger")) + ";"  # a click on the map: trigger('select')
# A walk runs the models: it queues with the other tabs' model runs; a press while one runs runs once more after it
DEFAULTS = (Sampling().temperature, Sampling().top_p, Sampling().seed)
RUN = dict(**MODEL_EVENTS, **PRIVATE, trigger_mode="always_last", show_progress="minimal")


@dataclass
class LearnPage:
    english: gr.Textbox
    german: gr.Textbox
    choice: gr.Radio
    submit: gr.Button
    status: gr.Markdown
    back: gr.Button
    next: gr.Button
    temperature: gr.Slider
    top_p: gr.Slider
    seed: gr.Number
    shown: list  # the components of a StepView, in its outputs' order
    figure: gr.Plot
    model_map: gr.HTML


def _inputs(labels: list[str]):
    with gr.Row(equal_height=False):
        english = gr.Textbox(ENGLISH, label="Your sentence (English)", lines=1, max_lines=3, elem_id="learn-input",
                             scale=3, min_width=240)  # fmt: skip
        submit = gr.Button("Walk through it", variant="primary", elem_id="learn-submit", scale=1, min_width=140)
    choice = gr.Radio(labels, value=labels[0], label="Models", elem_id="learn-models")
    return english, submit, choice


def _sampling():
    """The next-token step's sliders, shown with that step (each its own visibility: a layout block as an event's
    output makes gradio's page copy every component's value under it at each event)."""
    with gr.Row(elem_id="learn-sampling"):
        temperature = gr.Slider(0.1, 2.0, value=1.0, step=0.05, label="Temperature", elem_id="learn-temperature",
                                min_width=160, visible=False)  # fmt: skip
        top_p = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label="Top-p", elem_id="learn-top-p", min_width=160,
                          visible=False)  # fmt: skip
        seed = gr.Number(0, label="Seed", precision=0, minimum=0, elem_id="learn-seed", min_width=100, visible=False)
    return temperature, top_p, seed


def _page(labels: list[str]) -> LearnPage:
    gr.Markdown(INTRO, elem_id="learn-intro")
    english, submit, choice = _inputs(labels)
    status = gr.Markdown(elem_id="learn-status")
    model_map = gr.HTML(elem_id="learn-map", js_on_load=MAP_JS, container=False, padding=False)
    with gr.Row(elem_classes=["learn-nav"]):
        back = gr.Button("← Back", elem_id="learn-back", size="sm", min_width=80)
        progress = gr.HTML(elem_id="learn-progress", container=False, padding=False)
        forward = gr.Button("Next →", elem_id="learn-next", variant="primary", size="sm", min_width=80)
    title = gr.HTML(elem_id="learn-title", container=False, padding=False)
    text = gr.HTML(elem_id="learn-text", container=False, padding=False)
    german = gr.Textbox(GERMAN, label="German sentence (for the translator)", info=GERMAN_HELP, lines=1,
                        max_lines=3, visible=False, elem_id="learn-german")  # fmt: skip
    temperature, top_p, seed = _sampling()
    with gr.Row(equal_height=False, elem_classes=["learn-step"]):
        with gr.Column(scale=3, min_width=300):
            figure = gr.Plot(show_label=False, elem_id="learn-figure")
        with gr.Column(scale=2, min_width=300):
            code = gr.HTML(elem_id="learn-code", label="The code", show_label=True, container=True)
            check = gr.HTML(elem_id="learn-check", container=False, padding=False)
    shown = [title, text, figure, code, check, progress, model_map, german, temperature, top_p, seed]
    return LearnPage(english, german, choice, submit, status, back, forward, temperature, top_p, seed, shown, figure,
                     model_map)  # fmt: skip


def _notes(learned: Learned) -> str:
    return "\n".join(f"⚠️ {note}" for note in learned.notes)


class LearnEvents:
    """The tab's events over the kept walk: only a walk (a new input, model choice or the page's load) runs models."""

    def __init__(self, registries: dict, sets: list, page: LearnPage):
        self.registries, self.sets, self.p = registries, sets, page
        self.cache = ResultCache(handlers.WALK_CACHE_BYTES)  # walks by model and text, for every visitor
        self.by_label = {s.label: s for s in sets}
        self.n_run = 3 + len(page.shown)  # a walk's outputs: the kept walk, the step, the status, what is shown

    def warm(self) -> threading.Thread:
        """Walk the preloaded example on the first choice's models now, in the background, into the kept walks:
        the first visitor's page then finds them walked (the app's start; tests build the page without it)."""
        chosen = self.sets[0]
        thread = threading.Thread(target=handlers.walk_set, name="learn-warm", daemon=True,
                                  args=(self.registries, chosen, ENGLISH, GERMAN, False, self.cache))  # fmt: skip
        thread.start()
        return thread

    def shown(self, kept: Learned | str | None, k, *options) -> tuple:
        if not isinstance(kept, Learned):
            return message_view(kept or handlers.NO_WALK).outputs()
        return step_view(kept, handlers.clamp(k, kept), Sampling(*options)).outputs()

    def walk(self, english, german, label, k, *options, first_only: bool = False):
        """A new input or model choice: walk the models, show the same step of the new walk (first_only: the
        first model alone, shown at once; walk_rest follows with every model)."""
        chosen = self.by_label.get(label, self.sets[0])
        kept = handlers.walk_set(self.registries, chosen, english, german, first_only, self.cache)
        ok = isinstance(kept, Learned)
        k = handlers.clamp(k, kept if ok else None)
        status = _notes(kept) if ok else ""
        status += f"\n\n{handlers.MORE}" if ok and first_only and len(chosen.models) > 1 else ""
        return kept if ok else None, k, status, *self.shown(kept, k, *options)

    def walk_first(self, english, german, label, k, *options):
        return *self.walk(english, german, label, k, *options, first_only=True), k

    def walk_rest(self, english, german, label, wanted, k, *options):
        """Every model walked, at the step asked for (a link's step past the first model's) or the one shown now."""
        return self.walk(english, german, label, max(int(wanted or 0), int(k or 0)), *options)

    def opened(self, request: gr.Request = None):
        """The page's load: the walk of the preloaded sentences (the first model's steps at once, then every
        model's), at the step the address asks for (?learn=k); none when the address opens another tab
        (learn_when_opened.js walks when the visitor first opens this one). The load takes no inputs: the boxes
        hold their preloaded text then, and a load with inputs cleared the German box a task tab's landing had
        just filled (gradio 6.31, seen in chromium with ?tab=translation)."""
        params = dict(request.query_params) if request else {}
        if not opens_learn(params):
            return [gr.skip()] * (self.n_run + 1)
        return self.walk_first(ENGLISH, GERMAN, self.sets[0].label, learn_step(params) or 0, *DEFAULTS)

    def opened_rest(self, k, request: gr.Request = None):
        params = dict(request.query_params) if request else {}
        if not opens_learn(params):
            return [gr.skip()] * self.n_run
        return self.walk_rest(ENGLISH, GERMAN, self.sets[0].label, learn_step(params) or 0, k, *DEFAULTS)

    def moved(self, by: int):
        def move(kept, k, *options):
            if not isinstance(kept, Learned):
                gr.Warning(handlers.EXPIRED)
                return gr.skip(), *[gr.skip()] * len(self.p.shown)
            k = handlers.clamp(int(k or 0) + by, kept)
            return k, *self.shown(kept, k, *options)

        return move

    def picked(self, kept, temperature, top_p, seed, evt: gr.SelectData):
        """A part of the map clicked: its step (learn_map.js sends the step's index)."""
        k = handlers.clamp(evt.value, kept if isinstance(kept, Learned) else None)
        return k, *self.shown(kept, k, temperature, top_p, seed)

    def redrawn(self, kept, k, *options):
        """A sampling slider moved: the next-token figure again, from the kept logits."""
        if not isinstance(kept, Learned):
            return gr.skip()
        return step_view(kept, handlers.clamp(k, kept), Sampling(*options)).figure


def _wire(demo, e: LearnEvents) -> None:
    p = e.p
    learned, at, wanted = gr.State(None, time_to_live=STATE_TTL_S), gr.State(0), gr.State(0)
    sliders = [p.temperature, p.top_p, p.seed]
    run_in = [p.english, p.german, p.choice, at, *sliders]
    run_out = [learned, at, p.status, *p.shown]
    rest_in = [p.english, p.german, p.choice, wanted, at, *sliders]
    for trigger in (p.submit.click, p.english.submit, p.german.submit, p.choice.input):
        trigger(e.walk_first, run_in, [*run_out, wanted], **RUN).then(e.walk_rest, rest_in, run_out, **RUN)
    demo.load(e.opened, None, [*run_out, wanted], **RUN).then(e.opened_rest, [at], run_out, **RUN)
    demo.load(None, None, None, js=script("learn_keys.js"), **PRIVATE)
    demo.load(None, None, None, js=page_step("learn_when_opened.js"), **PRIVATE)
    for button, by in ((p.next, 1), (p.back, -1)):
        button.click(e.moved(by), [learned, at, *sliders], [at, *p.shown], **FOLLOW_UP)
    p.model_map.select(e.picked, [learned, *sliders], [at, *p.shown], **FOLLOW_UP)
    for control in sliders:
        control.input(e.redrawn, [learned, at, *sliders], [p.figure], **FOLLOW_UP)


def learn_tab(registries: dict, demo: gr.Blocks, warm: bool = False) -> LearnEvents | None:
    """The Learn tab (the page's first: build it first inside the page's gr.Tabs) over the tabs' ModelRegistries
    (task name -> registry, None where a tab has no model); its events, None without a model. warm: walk the
    preloaded example now, in the background (LearnEvents.warm)."""
    with gr.Tab("Learn", id=LEARN, elem_id=f"tab-{LEARN}"):
        sets = model_sets(registries)
        if not sets:
            gr.Markdown("### No model to learn with\nNone of the app's models loaded: see the other tabs for why.")
            return None
        events = LearnEvents(registries, sets, _page([s.label for s in sets]))
        _wire(demo, events)
        if warm:
            events.warm()
        return events
