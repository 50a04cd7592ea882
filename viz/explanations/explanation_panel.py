"""The sentiment tab's explanation panel: a method picker, the review shaded by signed attributions with a
legend, and beside it how faithful that view is on this very review (numbers and a deletion curve).

The prediction is shown first; the explanation and its faithfulness follow in their own events, so a slow
method (occlusion, integrated gradients) never holds the label back, and gradio shows its progress.
"""

import logging
from dataclasses import dataclass

import gradio as gr

from pipelines import explanations
from pipelines.explanations import default_method

from ..page.progress import reporter
from ..server.events import FOLLOW_UP
from . import attributions

log = logging.getLogger(__name__)
PRIVATE = dict(api_visibility="private")
PROGRESS = gr.Progress()  # a handler parameter defaulting to a gr.Progress gets the event's progress bar


def method_choices(default: str | None = None) -> list[tuple[str, str]]:
    """(label, name) of every registered method that explains a classifier, `default` (None: the project's) marked."""
    return explanations.choices("sentiment", default)


def model_default(pipe) -> dict:
    """The default explanation of this model, measured on it or saying that it was not (default_method)."""
    return getattr(pipe, "default_explanation", None) or default_method("sentiment", {})


def explain(pipe, view, method: str, progress=None):
    """(explanation for gr.State, highlighted review HTML) for the analysed review in `view`; progress(done,
    total) as a slow method (occlusion) goes."""
    if view is None:
        return None, ""
    try:
        expl = pipe.explain(view.text, method or None, progress=progress)
    except Exception:
        log.exception("explanation failed")
        return None, "<p>⚠️ Sorry, this explanation could not be computed for this review.</p>"
    html = attributions.attribution_html(
        view.text,
        [(t.start, t.end) for t in expl.tokens],
        expl.words,
        expl.scores,
        expl.target,
        expl.method,
        view.cut_after,
        view.n_skipped,
    )
    return expl, html


def faithfulness(pipe, expl):
    """(faithfulness Markdown, deletion-curve figure) of an explanation on its own review."""
    if expl is None:
        return "", None
    try:
        report = pipe.faithfulness(expl)
    except Exception:
        log.exception("faithfulness failed")
        return "⚠️ Sorry, the faithfulness of this explanation could not be measured.", None
    text = attributions.faithfulness_markdown(report, expl, model_default(pipe))
    return text, attributions.deletion_curve(report, expl.target, expl.method)


@dataclass
class ExplanationPanel:
    method: gr.Radio
    highlight: gr.HTML
    faithfulness: gr.Markdown
    curve: gr.Plot
    explained: gr.State


def build(pipe=None) -> ExplanationPanel:
    """Lay out the panel (inside a gr.Blocks context); its default method is `pipe`'s (the tab's default model)."""
    default = model_default(pipe) if pipe is not None else default_method("sentiment")
    gr.Markdown("### What drives the prediction")
    method = gr.Radio(
        method_choices(default["method"]),
        value=default["method"],
        label="Explanation method (blue = supports the predicted label, red = speaks against it)",
        elem_id="sentiment-highlight-mode",
    )
    with gr.Row():
        with gr.Column(scale=3):
            highlight = gr.HTML(elem_id="sentiment-highlight")
        with gr.Column(scale=2):
            faith = gr.Markdown(elem_id="sentiment-faithfulness")
            curve = gr.Plot(show_label=False, elem_id="sentiment-deletion-curve")
    return ExplanationPanel(method, highlight, faith, curve, gr.State(None))


def wire(panel: ExplanationPanel, models, view_state: gr.State, predicted):
    """Explain after `predicted` (the event that fills view_state) and whenever the method changes, with the model
    that made the view (models: the tab's ModelRegistry). Returns the event that draws the highlight, for the app
    to chain its own redraws on."""

    def run_explain(view, method, progress=PROGRESS):
        name = explanations.label("sentiment", method) if method else "Explanation"
        model = getattr(view, "model", None)
        expl, html = explain(models.get(model), view, method, reporter(progress, name, "words"))
        return made_by(model, expl), html

    def run_faithfulness(explained):
        model, expl = explained or (None, None)
        return faithfulness(models.get(model), expl)

    outs, faith_outs = [panel.explained, panel.highlight], [panel.faithfulness, panel.curve]
    drawn = predicted.then(run_explain, [view_state, panel.method], outs, **FOLLOW_UP)
    drawn.then(run_faithfulness, [panel.explained], faith_outs, **FOLLOW_UP)
    changed = panel.method.change(run_explain, [view_state, panel.method], outs, **PRIVATE)
    changed.then(run_faithfulness, [panel.explained], faith_outs, **FOLLOW_UP)
    return drawn


def made_by(model, expl) -> tuple | None:
    """What the panel keeps of an explanation: (the name of the model that made it, the explanation), so its
    faithfulness is measured on that model even when the tab has moved to another one since (a model switched
    during the explanation had the from-scratch model measure the pre-trained one's token ids: IndexError)."""
    return None if expl is None else (model, expl)
