"""What the page shows for step k of a kept walk: the outputs of every Learn event but a new walk's state, in one
order (StepView.outputs). Drawing only: nothing here runs a model."""

import html
import logging
from dataclasses import dataclass

import gradio as gr

from . import figures, render
from .handlers import Learned, Sampling
from .model_map import map_html

log = logging.getLogger(__name__)
NEXT_TOKEN, CROSS = "next_token", "cross_attention"  # the steps that show the sampling controls, the German box
NEXT = "next"  # the last step: links to each task tab on the same input


def figure(learned: Learned, k: int, sampling: Sampling):
    """Step k's live figure (viz.learn.figures), the next-token step's drawn with the sliders' options; None (and a
    warning in the log) where it cannot be drawn: the step's text, code and check still show, never a traceback."""
    step = learned.steps[k]
    try:
        return figures.draw(step, sampling.options() if step.key == NEXT_TOKEN else None)
    except Exception:  # noqa: BLE001 (a figure that fails leaves its step readable)
        log.exception("the Learn step %s's figure could not be drawn", step.key)
        return None


@dataclass(frozen=True)
class StepView:
    """Step k drawn: the values of the page's Learn components (viz.learn.tab.LearnPage.shown)."""

    title: str
    text: str
    figure: object
    code: str
    check: str
    progress: str
    model_map: str
    german: object  # the German box's update: shown with the cross-attention step
    sampling: object  # each sampling control's update (temperature, top-p, seed): shown with the next-token step

    def outputs(self) -> tuple:
        return (self.title, self.text, self.figure, self.code, self.check, self.progress, self.model_map,
                self.german, self.sampling, self.sampling, self.sampling)  # fmt: skip


def step_view(learned: Learned, k: int, sampling: Sampling) -> StepView:
    step = learned.steps[k]
    m = learned.maps[step.model]
    return StepView(
        render.title_html(step),
        render.text_html(step) + (render.links_html(learned.links) if step.key == NEXT else ""),
        figure(learned, k, sampling),
        render.code_html(step.code),
        render.check_html(step.check),
        render.progress_html(k, len(learned.steps)),
        map_html(m, learned.steps, k),
        gr.update(visible=step.key == CROSS),
        gr.update(visible=step.key == NEXT_TOKEN),
    )


def message_view(message: str) -> StepView:
    """A page with no walk to show: the message where the step's text goes, nothing else drawn."""
    text = f'<p class="learn-message">{html.escape(message)}</p>'
    return StepView("", text, None, "", "", "", "", gr.update(visible=True), gr.update(visible=False))
