"""The training-step slider of a tab (`elem_id` "<task>-training-step"): when the tab's model has training
snapshots (entries "<model>@step-<N>" of the tab's pipelines.models.model_registry ModelRegistry), which of them the run
and every panel use, with that step's validation score beside it. The slider's right end is the trained model
itself. Moving it reads the input in the box again with that snapshot, as a click on the tab's button would, so
the label or translation, the heatmaps and the head table all follow; the API keeps the default model. Hidden for
a model without snapshots. Snapshots load on first use and leave memory as the registry's other models do."""

from dataclasses import dataclass

import gradio as gr

from ..server.events import PRIVATE
from .model_choice import rerun_js


def label(n: int) -> str:
    """The slider's label for a model with n snapshots: its number box shows a position, not a training step (the
    step is named beside it), so the label says which position is which."""
    return f"Training snapshot (0: where training started; {n}: the trained model; the step is named beside it)"


@dataclass
class TrainingStepUI:
    slider: gr.Slider
    info: gr.Markdown


def positions(models, model: str | None) -> list[str]:
    """The registry names along the slider: the model's snapshots by step, then the model itself."""
    model = models.model_of(model)
    return [e.name for e in models.snapshots(model)] + [model]


def chosen(models, model: str | None, position) -> str:
    """The registry name the tab runs: the snapshot of `model` at the slider's `position`, or the model itself (the
    right end; also for a position that is missing or out of this model's range)."""
    names = positions(models, model)
    try:
        index = int(position)
    except (TypeError, ValueError):
        return names[-1]
    return names[index] if 0 <= index < len(names) else names[-1]


def score_text(snapshot) -> str:
    """A snapshot's validation score in words: "validation accuracy 81.3%", "validation BLEU 12.40"."""
    if snapshot.score is None or not snapshot.metric:
        return "no validation score recorded"
    if "accuracy" in snapshot.metric and snapshot.score <= 1:
        return f"validation {snapshot.metric.replace('_', ' ')} {snapshot.score:.1%}"
    name = "BLEU" if snapshot.metric == "bleu" else snapshot.metric.replace("_", " ")
    return f"validation {name} {snapshot.score:.2f}"


def _when(entry) -> str:
    """How far a snapshot's training was, in words: "before fine-tuning: <weights>", "after 653 training steps"."""
    snap = entry.snapshot
    epoch = f", epoch {snap.epoch:.2f}" if snap.epoch is not None else ""
    start = f"before fine-tuning: {entry.started}" if entry.started else "before any training"
    return start if snap.step == 0 else f"after {snap.step:,} training steps{epoch}"


def noted(models, name: str, status: str) -> str:
    """A run's status, with a first line when `name` is a training snapshot: the result at the top of the page
    is then not the trained model's, and only the slider, far below, said so."""
    entry = models.entries.get(name)
    if entry is None or entry.snapshot is None:
        return status
    line = (
        f"**Training step {entry.snapshot.step:,}** ({_when(entry)}), not the trained model: the training-step "
        "slider (section *Training steps*, under the heatmap) moves it. Calibration and the out-of-domain check "
        "are the trained model's only."
    )
    return f"{line}\n\n{status}" if status else line


def describe(models, model: str | None, position) -> str:
    """What the slider's position shows, beside it: the step, how far training was, and the validation score."""
    entry = models.entries[chosen(models, model, position)]
    snap = entry.snapshot
    if snap is None:
        snaps = models.snapshots(model)
        if not snaps:
            return ""
        first, last = snaps[0].snapshot.step, snaps[-1].snapshot.step
        when = (
            f"step {first:,}"
            if len(snaps) == 1
            else f"{len(snaps)} points of its training, steps {first:,} to {last:,}"
        )
        return f"**The trained model**: move the slider left to see it at {when}."
    return f"**Step {snap.step:,}** ({_when(entry)}): {score_text(snap)}."


def reset(models, model: str | None, position: int | None = None) -> tuple[gr.Slider, gr.Markdown]:
    """The slider for `model` (a new model choice, or a link's): at `position`, by default its right end, the
    model itself; hidden without snapshots."""
    n = len(models.snapshots(model))
    value = n if position is None else position
    slider = gr.Slider(minimum=0, maximum=max(n, 1), value=value, step=1, label=label(n), visible=n > 0)
    return slider, gr.Markdown(describe(models, model, value), visible=n > 0)


def to_link(models, model: str | None, position) -> tuple[str | None, int | None]:
    """What a share link records of the model shown: (the model's name, None for the tab's default; the snapshot's
    training step, None for the trained model)."""
    entry = models.entries[chosen(models, model, position)]
    name = models.model_of(entry.name)
    return (None if name == models.default else name), (entry.snapshot.step if entry.snapshot else None)


def from_link(models, model: str | None, step: int | None) -> tuple[str | None, int | None, list[str]]:
    """What a link asks for, as the tab offers it: (the model to choose, None to keep the default; the slider's
    position, None for the trained model; the names of what the link held that this app does not offer)."""
    ignored = []
    if model is not None and model not in models.names:
        ignored.append("model")
        model = None
    steps = [e.snapshot.step for e in models.snapshots(model or models.default)]
    if step is not None and step not in steps:
        ignored.append("training step")
    return model, (steps.index(step) if step in steps else None), ignored


def build(models, task: str) -> TrainingStepUI:
    """Lay out the slider and its score for the tab's default model (inside a gr.Blocks context)."""
    n = len(models.snapshots(models.default))
    with gr.Row(equal_height=True, elem_classes=["view-options"]):  # stacked on a phone (viz/page/theme.py)
        slider = gr.Slider(
            0, max(n, 1), value=n, step=1, label=label(n), visible=n > 0, elem_id=f"{task}-training-step", scale=3
        )
        info = gr.Markdown(describe(models, models.default, n), visible=n > 0, elem_id=f"{task}-training-step-info")
    return TrainingStepUI(slider, info)


def wire(ui: TrainingStepUI, models, task: str, choice: gr.Radio | None = None) -> None:
    """Moving the slider (on release) reads the input again with that snapshot; a new model choice (when the tab
    has one) puts the slider at that model's right end, then reads the input again with it. Both follow the user's
    own moves only (release, input): a link that sets the model and the step itself presses the button once."""

    def step_info(model, position) -> str:
        return describe(models, model, position)

    def step_reset(model) -> tuple[gr.Slider, gr.Markdown]:
        return reset(models, model)

    model = choice if choice is not None else gr.State(models.default)
    ui.slider.change(step_info, [model, ui.slider], [ui.info], **PRIVATE)
    ui.slider.release(None, None, None, js=rerun_js(task), **PRIVATE)
    if choice is not None:
        reset_event = choice.input(step_reset, [choice], [ui.slider, ui.info], **PRIVATE)
        reset_event.then(None, None, None, js=rerun_js(task), **PRIVATE)
