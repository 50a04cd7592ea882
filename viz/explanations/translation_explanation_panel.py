"""The translation tab's explanation panel: which German tokens drove each English token (gradient x input,
integrated gradients, or mean cross-attention), every head's agreement with that, faithfulness, and a
contrastive step ("this token rather than that one", from the step's top-5 alternatives).

It runs after the translation is shown, in its own events (gradio shows their progress), on the translation
kept in the tab's state: it explains exactly the translation on screen, without decoding again.
"""

import logging
from dataclasses import dataclass

import gradio as gr

from pipelines import explanations
from pipelines.explanations import default_method

from ..attention.view_figures import note
from ..inputs import step_chosen
from ..page import layout
from ..page.progress import reporter
from ..server import hosting
from ..server.events import FOLLOW_UP, PRIVATE
from . import translation_attributions as figs
from .explanation_panel import made_by

log = logging.getLogger(__name__)
PROGRESS = gr.Progress()  # a handler parameter defaulting to a gr.Progress gets the event's progress bar
NO_CONTRAST = "(no contrast)"
TITLE = "Which German tokens drove each English token"


def explain(pipe, view, method: str, step=None, alternative: str | None = None, progress=None):
    """(explanation for gr.State, attribution heatmap, head-agreement heatmap) for the translation in `view`
    (viz.translation.handlers.TranslationView: its result is reused); with an alternative, step (1-based, as on the
    slider) is explained against it. progress(done, total) as a gradient method goes."""
    if view is None or view.result is None:
        return None, None, None
    contrast = None
    if alternative and alternative != NO_CONTRAST and step:
        contrast = {int(step) - 1: alternative}
    try:
        expl = pipe.explain(view.text, method or None, contrast=contrast, result=view.result, progress=progress)
    except Exception:
        log.exception("translation explanation failed")
        return None, note(TITLE, "⚠️ Sorry, this explanation could not be computed for this translation."), None
    return expl, figs.attribution_heatmap(expl), figs.agreement_heatmap(expl)


def faithfulness(pipe, expl) -> str:
    if expl is None:
        return ""
    try:
        return figs.faithfulness_markdown(pipe.faithfulness(expl), expl)
    except Exception:
        log.exception("translation faithfulness failed")
        return "⚠️ Sorry, the faithfulness of this explanation could not be measured."


def alternatives(view, step) -> gr.Dropdown:
    """The contrast choices at a step: its top-5 tokens other than the one produced."""
    if view is None:
        return gr.Dropdown(choices=[NO_CONTRAST], value=NO_CONTRAST)
    t = step_chosen(step, len(view.steps))
    alts = [tok for tok, _ in view.steps[t].top_k if tok != view.steps[t].token]
    return gr.Dropdown(choices=[NO_CONTRAST, *alts], value=NO_CONTRAST)


@dataclass
class TranslationExplanationPanel:
    method: gr.Radio
    contrast: gr.Dropdown
    attribution: gr.Plot
    agreement: gr.Plot
    faithfulness: gr.Markdown
    explained: gr.State


def build() -> TranslationExplanationPanel:
    """Lay out the panel (inside a gr.Blocks context)."""
    default = default_method("translation")
    names = explanations.choices("translation")
    gr.Markdown(f"### {TITLE}")
    with gr.Row():
        method = gr.Radio(names, value=default["method"], label="Attribution", elem_id="translation-explain-method")
        contrast = gr.Dropdown(
            [NO_CONTRAST],
            value=NO_CONTRAST,
            label="At the slider's step: the produced token rather than…",
            elem_id="translation-contrast",
        )
    # one under the other: in the main view's explanation column (viz.page.layout) side by side cut their titles
    attribution = gr.Plot(show_label=False, elem_id="translation-attribution")
    agreement = gr.Plot(show_label=False, elem_id="translation-head-agreement")
    with layout.faithfulness("translation-faithfulness-accordion"):  # closed: it pushed the heatmap down
        faith = gr.Markdown(elem_id="translation-faithfulness")
    explained = gr.State(None, time_to_live=hosting.STATE_TTL_S)  # the explanation shown (a result)
    return TranslationExplanationPanel(method, contrast, attribution, agreement, faith, explained)


def wire(panel: TranslationExplanationPanel, models, view_state: gr.State, step: gr.Slider, translated):
    """Explain the translation in view_state after `translated` and whenever the method, the step or the
    contrast changes, with the model that made it (models: the tab's ModelRegistry; a training snapshot's
    translation is explained by that snapshot)."""

    def run(view, method, step_value, alternative, progress=PROGRESS):
        report = reporter(progress, explanations.label("translation", method), "steps")
        model = getattr(view, "model", None)
        expl, *figures = explain(models.get(model), view, method, step_value, alternative, report)
        return made_by(model, expl), *figures

    def run_faithfulness(explained):
        model, expl = explained or (None, None)
        return faithfulness(models.get(model), expl)

    args = [view_state, panel.method, step, panel.contrast]
    outs = [panel.explained, panel.attribution, panel.agreement]
    triggers = ((translated.then, FOLLOW_UP), (panel.method.change, PRIVATE), (panel.contrast.change, PRIVATE))
    for event, options in triggers:
        explained = event(run, args, outs, **options)
        explained.then(run_faithfulness, [panel.explained], [panel.faithfulness], **FOLLOW_UP)
    step.change(alternatives, [view_state, step], [panel.contrast], **PRIVATE)
