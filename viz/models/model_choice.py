"""The model choice of a tab (`elem_id` "<task>-model"): which of the tab's models (a pipelines.models.model_registry
ModelRegistry) the run and every panel use. Shown when the registry has more than one model; choosing another
model runs the review in the box again (viz/training_step.wire, which also resets the training-step slider), so the
same review is read by each model in turn."""

import html
import logging

import gradio as gr

from transformer import CheckpointError

from ..page.scripts import call

log = logging.getLogger(__name__)


def notes(models) -> str:
    """What each model offered is and what its heads do, in the words its metrics.json records (nothing borrowed;
    a training snapshot is not offered here, and what its model's note measured is not true of it)."""
    lines = [
        f"- **{html.escape(name)}**: {models.entries[name].note}" for name in models.names if models.entries[name].note
    ]
    head = "Another model reads the same text again: compare the outputs, the heads and the explanations."
    return "\n".join([head, *lines, *(f"- ⚠️ {html.escape(line)}" for line in unavailable(models))])


def unavailable(models) -> list[str]:
    """One line for each model of the choice that cannot load here, and why (a Hub model offline)."""
    return [models.entries[n].unavailable for n in models.names if getattr(models.entries[n], "unavailable", "")]


def choice(models, task: str) -> gr.Radio:
    """The choice (hidden when the registry has one model); what each model is goes under the prediction
    (choice_notes), so that on a phone the prediction comes right after the inputs."""
    several, info = len(models.names) > 1, " ".join(unavailable(models)) or None  # a Hub model offline, in one line
    return gr.Radio(
        models.names, value=models.default, label="Model", info=info, visible=several, elem_id=f"{task}-model",
        interactive=True,
    )  # fmt: skip


def choice_notes(models, task: str) -> gr.Markdown:
    """What each model of the choice is and what its heads do (hidden when the registry has one model)."""
    several = len(models.names) > 1
    return gr.Markdown(notes(models) if several else "", visible=several, elem_id=f"{task}-model-notes")


def resolve(models, name) -> tuple[object | None, str]:
    """(pipeline, its name) of the chosen model, or (None, a status line) when it cannot be loaded."""
    name = models.name_of(name)
    try:
        return models.get(name), name
    except CheckpointError as e:
        return None, f"⚠️ The model “{html.escape(name)}” could not be loaded: {html.escape(str(e))}"
    except Exception:
        log.exception("loading %s failed", name)
        return None, f"⚠️ The model “{html.escape(name)}” could not be loaded."


def sized(pipe, layer: int, head: int, asked: tuple[int, int] | None = None) -> tuple[gr.Radio, gr.Radio]:
    """The layer and head choices for this model's size. asked: the (layer, head) the run read; where the model has
    them, the choices keep whatever the page holds now (a layer or head picked while the run went on was put back
    to the one the run read, 18 of 18 tries in a browser); where it has not, the clamped (layer, head)."""
    layers = [(str(i + 1), i) for i in range(pipe.n_layers)]
    heads = [(str(i + 1), i) for i in range(pipe.n_heads)]
    if asked == (layer, head):
        return gr.Radio(choices=layers), gr.Radio(choices=heads)
    return gr.Radio(choices=layers, value=layer), gr.Radio(choices=heads, value=head)


def rerun_js(task: str) -> str:
    """Client-side: press the tab's button when there is text to read, as a click would (every panel follows)."""
    return call("rerun_tab.js", task)
