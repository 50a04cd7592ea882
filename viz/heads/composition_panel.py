"""The composition view of a tab's "What each head does" section: on a click of its button, the Q-, K- or
V-composition of every earlier head into every later head and each head's copying score, by the model that made the
tab's result (from its weights: no input needed), kept in the visitor's state; a click on a head of the matrix lists
what it composes with. On a language model's tab, the worked example beside it: the induction circuit."""

import html
import logging
from dataclasses import dataclass

import gradio as gr

from pipelines.kinds import CAUSAL, KINDS
from pipelines.lens.composition import Composition, Copying

from ..page.theme import waiting_plot
from ..server import hosting
from ..server.events import PRIVATE
from .composition import KINDS as COMPOSITIONS
from .composition import PICK_BOX, attentions, composition_figure, head_note, parse_head
from .induction_example import induction_circuit

log = logging.getLogger(__name__)
HELP = (
    "### Heads composing\nA head's query, key and value read the residual stream, where every earlier head wrote "
    "its output. **K-composition**: how much of what an earlier head writes reaches a later head's keys (so the "
    "earlier head decides which tokens the later one finds); **Q-** the same for its queries, **V-** for what it "
    "carries. From the weights alone, beside the same score for random matrices of the same shapes. Click a head "
    "for what it composes with and the tokens it copies."
)
INDUCTION_HELP = (
    "**The induction circuit, found here**: the model reads random words written twice; the head that looks most "
    "at the token after the earlier copy of the current one is its strongest induction head, and its K-composition "
    "shows which earlier heads its keys read from (the prompt box gets the words: Generate to see the maps)."
)


@dataclass(frozen=True)
class Kept:
    """What the button computed, kept in the visitor's state: for which model and attention."""

    model: str | None
    attention: str
    composition: Composition
    copying: Copying | None


@dataclass
class CompositionUI:
    kind: gr.Radio
    attention: gr.Radio | gr.State
    submit: gr.Button
    note: gr.Markdown
    plot: gr.Plot
    head: gr.Markdown
    click: gr.Textbox
    kept: gr.State
    induction: gr.Button | None = None
    induction_plot: gr.Plot | None = None
    induction_note: gr.Markdown | None = None


def build(task: str) -> CompositionUI:
    gr.Markdown(HELP)
    kinds = attentions(task)
    with gr.Row():
        kind = gr.Radio(
            list(COMPOSITIONS), value="K-composition", label="Composition", elem_id=f"{task}-composition-kind"
        )
        attention = gr.State(kinds[0])
        if len(kinds) > 1:
            choices = [(KINDS[k].choice, k) for k in kinds]
            attention = gr.Radio(choices, value=kinds[0], label="Heads of", elem_id=f"{task}-composition-attention")
        submit = gr.Button("Compute composition", size="sm", elem_id=f"{task}-composition-submit")
    note = gr.Markdown(elem_id=f"{task}-composition-note")
    plot = waiting_plot(f"{task}-composition")
    head = gr.Markdown(elem_id=f"{task}-composition-head")
    with gr.Row(elem_classes=["views-hidden"]):
        click = gr.Textbox(elem_id=f"{task}-{PICK_BOX}", show_label=False, container=False)
    ui = CompositionUI(kind, attention, submit, note, plot, head, click, gr.State(None))
    if CAUSAL.name in kinds:
        gr.Markdown(INDUCTION_HELP)
        ui.induction = gr.Button("The induction circuit", size="sm", elem_id=f"{task}-induction")
        ui.induction_note = gr.Markdown(elem_id=f"{task}-induction-note")
        ui.induction_plot = waiting_plot(f"{task}-induction-parts")
    return ui


def compute(pipe, model: str | None, choice: str, attention: str) -> tuple:
    """(figure, note, Kept) of the composition chosen, by `pipe` (the model named `model`); a plain message and no
    figure where the model cannot give it."""
    kind = COMPOSITIONS.get(choice, "k")
    try:
        comp = pipe.composition(kind, attention)
        copying = pipe.copying_scores(attention)
    except Exception as e:  # noqa: BLE001 (the page says so; nothing else depends on it)
        log.exception("composition failed")
        return None, f"Could not compute the composition: {html.escape(str(e) or type(e).__name__)}", None
    L, H = comp.scores.shape[:2]
    note = (f"{L} layers × {H} heads of {KINDS[attention].title.lower()}. Top: each head's strongest "
            f"{choice} from an earlier head (random matrices: {comp.baseline_mean:.3f}); bottom: each head's copying "
            "score. Click a head.")  # fmt: skip
    return composition_figure(comp, copying), note, Kept(model, attention, comp, copying)


def pick(pipe, kept: Kept | None, clicked) -> str:
    """The clicked head's list (Markdown): what it composes with, its copying score, the tokens it copies most."""
    if kept is None:
        return "Compute the composition first."
    L, H = kept.composition.scores.shape[:2]
    head = parse_head(clicked, L, H)
    if head is None:
        return gr.skip()
    try:
        copied = pipe.copied_tokens(*head, attention=kept.attention)
    except Exception:  # noqa: BLE001 (the list stands without its tokens)
        log.exception("copied tokens failed")
        copied = None
    return head_note(kept.composition, kept.copying, copied, *head)


def wire(ui: CompositionUI, models, state, prompt=None) -> None:
    """The button computes (as the page's client), a click on a head lists it; the worked example where there is
    one (prompt: the tab's prompt box, given the words)."""

    def run(view, choice, attention, request: gr.Request = None):
        model = getattr(view, "model", None)
        return hosting.run_as(request, compute, models.get(model), model, choice, attention)

    def clicked(kept, value, request: gr.Request = None):
        return hosting.run_as(request, pick, models.get(None if kept is None else kept.model), kept, value)

    ui.submit.click(run, [state, ui.kind, ui.attention], [ui.plot, ui.note, ui.kept], **PRIVATE)
    ui.click.change(clicked, [ui.kept, ui.click], [ui.head], trigger_mode="always_last", **PRIVATE)
    if ui.induction is not None:
        outputs = [ui.plot, ui.note, ui.head, ui.induction_plot, ui.induction_note]
        outputs += [] if prompt is None else [prompt]

        def example(view, request: gr.Request = None):
            out = hosting.run_as(request, worked_example, models.get(getattr(view, "model", None)))
            return out if prompt is not None else out[:-1]

        ui.induction.click(example, [state], outputs, **PRIVATE)


def worked_example(pipe) -> tuple:
    """(composition figure, its note, the head's list, the cell's figure, its note, the words read) of the induction
    circuit on `pipe`; a plain message where the model cannot give it."""
    try:
        c = induction_circuit(pipe)
    except Exception as e:  # noqa: BLE001 (the page says so)
        log.exception("the induction example failed")
        message = f"Could not find the induction circuit: {html.escape(str(e) or type(e).__name__)}"
        return None, message, "", None, "", gr.skip()
    layer, head = c.head
    note = (f"Read: *{html.escape(c.text)}*. Strongest induction head: **L{layer}H{head}** (layer {layer + 1}, head "
            f"{head + 1}), mean weight {c.score:.2f} on the token after the earlier copy. The words are in the prompt "
            f"box: *Generate*, then pick layer {layer + 1}, head {head + 1} to see its map.")  # fmt: skip
    return c.composition, f"{note}\n\n{c.confirmed}", c.head_note, c.parts, c.parts_note, c.text


def composition_panel(models, task: str, state, prompt=None) -> CompositionUI:
    """Lay out the view in the section being built and wire it (prompt: the tab's prompt box, for the worked
    example)."""
    ui = build(task)
    wire(ui, models, state, prompt)
    return ui
