"""The explanation panel of a tab that explains one output over its input's words (the sentiment tab: the label;
the Next word tab: the token of the step shown, on demand as the step slider moves): a method picker, the text shaded
by signed attributions with a legend, and beside it how faithful that view is on this very input (numbers and a
deletion curve). What differs by task (its
words, its elem_ids, how its pipeline is asked) is one PanelSpec in PANELS.

The prediction is shown first; the explanation and its faithfulness follow in their own events, so a slow
method (occlusion, integrated gradients) never holds the label back, and gradio shows its progress.
"""

import html
import logging
from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from pipelines import explanations
from pipelines.explanations import default_method
from pipelines.tasks import LM, SENTIMENT

from ..inputs import step_chosen
from ..page import layout
from ..page.progress import reporter
from ..server import hosting
from ..server.events import FOLLOW_UP, PRIVATE
from ..tasks import TASKS
from . import attributions, step_explanation

log = logging.getLogger(__name__)
PROGRESS = gr.Progress()  # a handler parameter defaulting to a gr.Progress gets the event's progress bar


def _explain_review(pipe, view, method: str | None, progress, step=None, contrast=None):
    """The classifier's label for the review in `view` (a review has no steps; two labels: no other to contrast)."""
    return pipe.explain(view.text, method, progress=progress)


def _explain_step(pipe, view, method: str | None, progress, step=None, contrast=None):
    """Token `step` (1-based; None: the step the view shows) of the continuation in `view`
    (viz.next_word.handlers.LMView), read from the prompt and the step - 1 tokens before it: its result is reused, so
    the token explained is the one on screen, sampled or not, without decoding again; against `contrast` (the text
    of another of the step's top tokens) where given."""
    s = step_chosen(view.step if step is None else step, len(view.steps), view.step)
    return pipe.explain(view.text, method, step=s, result=view.result, progress=progress, contrast=contrast)


@dataclass(frozen=True)
class PanelSpec:
    """What one task's panel says, where its parts are (elem_ids) and how its pipeline explains a view."""

    heading: str
    method_label: str  # the picker's label: what blue and red mean
    ids: tuple[str, str, str, str]  # elem_ids: the picker, the highlight, the faithfulness text, the deletion curve
    explain: Callable  # (pipe, view, method or None, progress, step, contrast) -> pipelines.explanations.Explanation
    step_button: str | None = None  # it explains the step a slider shows: the elem_id of its "Explain this step"
    contrast_box: str | None = None  # the elem_id of its "against" box: why this output rather than another


PANELS: dict[str, PanelSpec] = {
    SENTIMENT.name: PanelSpec(
        "What drives the prediction",
        "Explanation method (blue = supports the predicted label, red = speaks against it)",
        ("sentiment-highlight-mode", "sentiment-highlight", "sentiment-faithfulness", "sentiment-deletion-curve"),
        _explain_review,
    ),
    LM.name: PanelSpec(
        "What drives the next token of the step shown",
        "Explanation method (blue = raises the probability of the step's token, red = lowers it)",
        ("lm-explanation-method", "lm-explanation", "lm-explanation-faithfulness", "lm-explanation-curve"),
        _explain_step,
        "lm-explain-step",
        "lm-explain-contrast",
    ),
}


def method_choices(default: str | None = None, task: str = "sentiment") -> list[tuple[str, str]]:
    """(label, name) of every registered method that explains the task, `default` (None: the project's) marked."""
    return explanations.choices(task, default)


def model_default(pipe, task: str = "sentiment") -> dict:
    """The default explanation of this model, measured on it or saying that it was not (default_method)."""
    return getattr(pipe, "default_explanation", None) or default_method(task, {})


def explain(pipe, view, method: str, progress=None, step=None, contrast: str | None = None):
    """(explanation for gr.State, highlighted text HTML) for the input in `view` (its task: view.task); progress(done,
    total) as a slow method (occlusion) goes; step: a continuation's step to explain (1-based; None: the one shown);
    contrast: another output's text, to explain why this one rather than that (blank: none)."""
    if view is None:
        return None, ""
    task = view.task.name
    against = (contrast or "").strip() or None
    try:
        expl = PANELS[task].explain(pipe, view, method or None, progress, step, against)
    except Exception as e:
        if against is not None and isinstance(e, ValueError):  # a contrast not among the step's top tokens, or itself
            return None, f"<p>⚠️ {html.escape(str(e))}</p>"
        log.exception("explanation failed")
        return None, f"<p>⚠️ Sorry, this explanation could not be computed for this {TASKS[task].unit}.</p>"
    if PANELS[task].step_button is None:
        return expl, _highlight(view, expl)
    scale = step_explanation.shared_scale(expl)  # the prompt and the tokens written before the step, alike
    shaded = _highlight(view, expl, scale)
    return expl, step_explanation.caption(view, expl) + shaded + step_explanation.prefix_html(view, expl, scale)


def _highlight(view, expl, scale: float | None = None) -> str:
    """The input's text shaded by the explanation (attributions.attribution_html)."""
    return attributions.attribution_html(
        view.text,
        [(t.start, t.end) for t in expl.tokens],
        expl.words,
        expl.scores,
        expl.target,
        expl.method,
        view.cut_after,
        view.n_skipped,
        expl.task,
        scale=scale,
    )


def faithfulness(pipe, expl):
    """(faithfulness Markdown, deletion-curve figure) of an explanation on its own input."""
    if expl is None:
        return "", None
    try:
        report = pipe.faithfulness(expl)
    except Exception:
        log.exception("faithfulness failed")
        return "⚠️ Sorry, the faithfulness of this explanation could not be measured.", None
    text = attributions.faithfulness_markdown(report, expl, model_default(pipe, expl.task))
    text += step_explanation.faithfulness_note(expl)
    return text, attributions.deletion_curve(report, expl.target, expl.method, expl.task)


@dataclass
class ExplanationPanel:
    method: gr.Radio
    highlight: gr.HTML
    faithfulness: gr.Markdown
    curve: gr.Plot
    explained: gr.State
    task: str = "sentiment"
    button: gr.Button | None = None  # "Explain this step" (a panel that follows a step slider)
    contrast: gr.Textbox | gr.State | None = None  # "against": another output to explain this one against


def build(pipe=None, task: str = "sentiment") -> ExplanationPanel:
    """Lay out the task's panel (inside a gr.Blocks context); its default method is `pipe`'s (the tab's default
    model)."""
    spec = PANELS[task]
    default = model_default(pipe, task) if pipe is not None else default_method(task)
    method_id, highlight_id, faith_id, curve_id = spec.ids
    gr.Markdown(f"### {spec.heading}")
    method = gr.Radio(
        method_choices(default["method"], task), value=default["method"], label=spec.method_label, elem_id=method_id
    )
    button = gr.Button("Explain this step", size="sm", elem_id=spec.step_button) if spec.step_button else None
    contrast = (gr.Textbox(label="against (optional): another of the step's top tokens, as the chart of next tokens "
                           "names it", max_lines=1, elem_id=spec.contrast_box)
                if spec.contrast_box else gr.State(None))  # fmt: skip
    highlight = gr.HTML(elem_id=highlight_id)
    with layout.faithfulness(f"{faith_id}-accordion"):  # closed: it pushed the heatmap down
        faith = gr.Markdown(elem_id=faith_id)
        curve = gr.Plot(show_label=False, elem_id=curve_id)
    explained = gr.State(None, time_to_live=hosting.STATE_TTL_S)  # the explanation shown (a result)
    return ExplanationPanel(method, highlight, faith, curve, explained, task, button, contrast)


def wire(panel: ExplanationPanel, models, view_state: gr.State, predicted, step=None):
    """Explain after `predicted` (the event that fills view_state) and whenever the method changes, with the model
    that made the view (models: the tab's ModelRegistry). step: a step slider (the Next word tab's): the step it shows
    is explained, and again when the visitor presses "Explain this step" (moving the slider only redraws: an
    explanation runs the model). Returns the event that draws the highlight, for the app to chain its own redraws on."""

    def run_explain(view, method, step, contrast, progress=PROGRESS):
        name = explanations.label(panel.task, method) if method else "Explanation"
        model = getattr(view, "model", None)
        expl, shown = explain(models.get(model), view, method, reporter(progress, name, "words"), step, contrast)
        return made_by(model, expl), shown

    def run_faithfulness(explained):
        model, expl = explained or (None, None)
        return faithfulness(models.get(model), expl)

    # one input per parameter, the step a State where there is no slider (gradio fills a left-out one its own way)
    contrast = panel.contrast if panel.contrast is not None else gr.State(None)
    inputs = [view_state, panel.method, gr.State(None) if step is None else step, contrast]
    outs, faith_outs = [panel.explained, panel.highlight], [panel.faithfulness, panel.curve]
    drawn = predicted.then(run_explain, inputs, outs, **FOLLOW_UP)
    drawn.then(run_faithfulness, [panel.explained], faith_outs, **FOLLOW_UP)
    asked = [panel.method.change(run_explain, inputs, outs, **PRIVATE)]
    if panel.button is not None:
        asked.append(panel.button.click(run_explain, inputs, outs, trigger_mode="always_last", **PRIVATE))
    for event in asked:
        event.then(run_faithfulness, [panel.explained], faith_outs, **FOLLOW_UP)
    return drawn


def made_by(model, expl) -> tuple | None:
    """What the panel keeps of an explanation: (the name of the model that made it, the explanation), so its
    faithfulness is measured on that model even when the tab has moved to another one since (a model switched
    during the explanation had the from-scratch model measure the pre-trained one's token ids: IndexError)."""
    return None if expl is None else (model, expl)
