"""The training-step slider of a tab (`elem_id` "<task>-training-step"): when the tab's model has training
snapshots (entries "<model>@step-<N>" of the tab's pipelines.model_registry ModelRegistry), which of them the run
and every panel use, with that step's validation score beside it. The slider's right end is the trained model
itself. Moving it reads the input in the box again with that snapshot, as a click on the tab's button would, so
the label or translation, the heatmaps and the head table all follow; the API keeps the default model. Hidden for
a model without snapshots. Snapshots load on first use and leave memory as the registry's other models do."""

from dataclasses import dataclass

import gradio as gr

from .model_choice import PRIVATE, rerun_js

LABEL = "Training step (left: where training started; right end: the trained model)"


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


def describe(models, model: str | None, position) -> str:
    """What the slider's position shows, beside it: the step, how far training was, and the validation score."""
    entry = models.entries[chosen(models, model, position)]
    snap = entry.snapshot
    if snap is None:
        n = len(models.snapshots(model))
        steps = f"{n} steps" if n != 1 else "one step"
        return f"**The trained model**: move the slider left to see it at {steps} of its training." if n else ""
    epoch = f", epoch {snap.epoch:.2f}" if snap.epoch is not None else ""
    start = f"before fine-tuning: {entry.started}" if entry.started else "before any training"
    when = start if snap.step == 0 else f"after {snap.step:,} training steps{epoch}"
    return f"**Step {snap.step:,}** ({when}): {score_text(snap)}."


def reset(models, model: str | None) -> tuple[gr.Slider, gr.Markdown]:
    """The slider for `model` (a new model choice): at its right end, the model itself; hidden without snapshots."""
    n = len(models.snapshots(model))
    slider = gr.Slider(minimum=0, maximum=max(n, 1), value=n, step=1, visible=n > 0)
    return slider, gr.Markdown(describe(models, model, n), visible=n > 0)


def build(models, task: str) -> TrainingStepUI:
    """Lay out the slider and its score for the tab's default model (inside a gr.Blocks context)."""
    n = len(models.snapshots(models.default))
    with gr.Row(equal_height=True, elem_classes=["view-options"]):  # stacked on a phone (viz/page/theme.py)
        slider = gr.Slider(
            0, max(n, 1), value=n, step=1, label=LABEL, visible=n > 0, elem_id=f"{task}-training-step", scale=3
        )
        info = gr.Markdown(describe(models, models.default, n), visible=n > 0, elem_id=f"{task}-training-step-info")
    return TrainingStepUI(slider, info)


def wire(ui: TrainingStepUI, models, task: str, choice: gr.Radio | None = None) -> None:
    """Moving the slider (on release) reads the input again with that snapshot; a new model choice (when the tab
    has one) puts the slider at that model's right end, then reads the input again with it."""

    def step_info(model, position) -> str:
        return describe(models, model, position)

    def step_reset(model) -> tuple[gr.Slider, gr.Markdown]:
        return reset(models, model)

    model = choice if choice is not None else gr.State(models.default)
    ui.slider.change(step_info, [model, ui.slider], [ui.info], **PRIVATE)
    ui.slider.release(None, None, None, js=rerun_js(task), **PRIVATE)
    if choice is not None:
        reset_event = choice.change(step_reset, [choice], [ui.slider, ui.info], **PRIVATE)
        reset_event.then(None, None, None, js=rerun_js(task), **PRIVATE)
