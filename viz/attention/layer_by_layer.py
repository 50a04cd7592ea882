"""The "Layer by layer" section of a tab: what each layer already predicts (the logit lens) and what each head and
feed-forward layer writes toward the answer (direct logit attribution), for the result shown, computed on a click by
the model that made it (pipelines/lens through the served pipeline: one pass with the hook points it needs)."""

import html
from dataclasses import dataclass

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from pipelines.kinds import CAUSAL, CROSS, DECODER, SELF
from pipelines.tasks import LM, SENTIMENT, TRANSLATION

from ..inputs import step_chosen, step_shown
from ..numbers import correlations
from ..page.landing import page_step
from ..page.progress import reporter
from ..page.theme import waiting_plot
from ..server import hosting
from ..server.events import FOLLOW_UP, PRIVATE
from ..server.stops import Stops
from .figures import COLORSCALE

MAX_TEXT_COLUMNS = 40  # a lens grid names its cells' top tokens up to this many positions (a long review: colour only)
HELP = (
    "**What would the model say if it stopped after each layer?** The grid reads each layer's residual stream out "
    "through the model's own output layer (the *logit lens*): a cell names the most likely output there, its colour "
    "is that output's probability. Below, **what each head and feed-forward layer writes straight into the answer's "
    "logit** (*direct logit attribution*, every norm's scale frozen at its value): the terms add up to the model's "
    "own logit (or the difference to the token named under *against*). A head's direct part is not its whole effect: "
    "*Switch each head off* measures each head's whole effect on the same logit, beside its direct part: where the "
    "two differ, the difference is what later heads and layers do with that head's output."
)
# how the Next word tab's lens reads a state (pipelines.lens.tuned.LENS_KINDS): as it is, or through the tuned lens
READ_OUT_WITH = {"logit lens": "logit", "tuned lens": "tuned"}
TUNED_TASKS = (LM.name,)  # the tasks whose models have tuned lenses (python -m training.tuned_lens)
PROGRESS = gr.Progress()
SWITCHING = Stops()  # Stop: a client's heads switched off end after the layer they are at


@dataclass
class LayerByLayerUI:
    contrast: gr.Textbox
    kind: gr.Radio | gr.State  # READ_OUT_WITH's choice, where the task offers it
    read: gr.State  # what the section read (a Read), None before the first click: a step moved then redraws it
    submit: gr.Button
    lens: gr.Plot
    by_layer: gr.Plot
    attribution: gr.Plot
    notes: gr.Markdown
    switch: "SwitchUI | None" = None  # each head's whole effect beside its direct part, where the task has it


def build(task: str) -> LayerByLayerUI:
    gr.Markdown(HELP)
    with gr.Row():
        contrast = gr.Textbox(label="against (optional): another output, as the top tokens show it, or a label",
                              max_lines=1, elem_id=f"{task}-lens-contrast")  # fmt: skip
        if task in TUNED_TASKS:
            kind = gr.Radio(list(READ_OUT_WITH), value="logit lens", label="read out with", elem_id=f"{task}-lens-kind")
        else:
            kind = gr.State("logit lens")
        submit = gr.Button("Read it layer by layer", elem_id=f"{task}-lens-submit")
    notes = gr.Markdown(elem_id=f"{task}-lens-notes")
    lens = waiting_plot(f"{task}-lens")
    by_layer = waiting_plot(f"{task}-lens-by-layer")
    attribution = waiting_plot(f"{task}-dla")
    switch = build_switch(task)
    read = gr.State(None, time_to_live=hosting.STATE_TTL_S)
    return LayerByLayerUI(contrast, kind, read, submit, lens, by_layer, attribution, notes, switch)


@dataclass
class SwitchUI:
    submit: gr.Button
    stop: gr.Button
    grid: gr.Plot
    notes: gr.Markdown


def build_switch(task: str) -> SwitchUI:
    with gr.Row():
        submit = gr.Button("Switch each head off: its whole effect", size="sm", elem_id=f"{task}-dla-total-submit")
        stop = gr.Button("Stop", size="sm", variant="stop", elem_id=f"{task}-dla-total-stop")
    notes = gr.Markdown(elem_id=f"{task}-dla-total-notes")
    return SwitchUI(submit, stop, waiting_plot(f"{task}-dla-total"), notes)


def shown_step(view, step) -> int:
    """The library's step (from 0) of the step the page shows: the one place the page's count from 1 is converted (the
    step slider's value, else the view's own step; a review has one step, 0)."""
    return step_chosen(step or getattr(view, "step", None))


def _output(view):
    """The result the view shows, to read its steps from (a review has none to pass: its pipeline reads the text)."""
    return getattr(view, "result", None)


# task -> the kind of attention of the attribution grids' columns: "h" its heads, "x" the cross-attention heads; a click
# on one opens its map in the tab's large heatmaps
OPENS: dict[str, dict[str, str]] = {
    SENTIMENT.name: {"h": SELF.name},
    TRANSLATION.name: {"h": DECODER.name, "x": CROSS.name},
    LM.name: {"h": CAUSAL.name},
}


@dataclass(frozen=True)
class Read:
    """What the section read for one result (that very object), contrast and lens kind: each step's LayerByLayer
    (pipelines.lens.operations), kept in the visitor's state so that a redraw runs no model."""

    result: object
    contrast: str | None
    kind: str
    steps: list

    def fits(self, view, contrast: str | None, kind: str) -> bool:
        return self.result is _result(view) and self.contrast == contrast and self.kind == kind


def _result(view):
    return getattr(view, "result", view)


def lens_figure(lens, position: int | None = None) -> go.Figure:
    """Layers x positions: the top output's probability, named in the cell (short inputs), the top 5 on hover."""
    z = np.array([[p[0] for p in row] for row in lens.top_probs])  # (L + 1, T)
    hover = [[" · ".join(f"{t} {p:.2f}" for t, p in zip(ts, ps)) for ts, ps in zip(tr, pr)]
             for tr, pr in zip(lens.top_tokens, lens.top_probs)]  # fmt: skip
    text = [[ts[0] for ts in row] for row in lens.top_tokens] if z.shape[1] <= MAX_TEXT_COLUMNS else None
    x = [f"{i}: {t}" for i, t in enumerate(lens.tokens)]
    fig = go.Figure(go.Heatmap(z=z, x=x, y=lens.layers, zmin=0, zmax=1, colorscale=COLORSCALE, text=text,
                               texttemplate="%{text}" if text else None, customdata=hover,
                               hovertemplate="%{y}, %{x}<br>%{customdata}<extra></extra>"))  # fmt: skip
    fig.update_layout(title=f"What each layer predicts at each position ({lens.kind} lens)", height=140 + 28 * len(z),
                      margin=dict(l=90, r=20, t=50, b=80), xaxis=dict(tickangle=-45))  # fmt: skip
    return fig


def by_layer_figure(lens) -> go.Figure:
    fig = go.Figure()
    fig.add_scatter(x=lens.layers, y=lens.final_prob, name=f"P({lens.final_token!s}) at the last position")
    fig.add_scatter(x=lens.layers, y=lens.kl, name=f"KL from the final distribution (nats, {lens.kind} lens)",
                    yaxis="y2")  # fmt: skip
    if lens.logit_kl is not None:  # a tuned lens: the logit lens's KL beside it
        fig.add_scatter(x=lens.layers, y=lens.logit_kl, name="KL, logit lens", yaxis="y2", line=dict(dash="dash"))
    fig.update_layout(
        title="By layer: the final answer's probability, and how far from the end",
        height=300,
        yaxis=dict(title="probability", range=[0, 1]),
        yaxis2=dict(title="KL", overlaying="y", side="right"),
        legend=dict(orientation="h", y=-0.3),
        margin=dict(l=60, r=60, t=50, b=40),
    )
    return fig


def attribution_figure(a, kinds: dict | None = None) -> go.Figure:
    """Layers x (heads, cross-attention heads, the feed-forward layer): each part's direct share of the logit. kinds:
    the kind of attention of the "h" and "x" columns (OPENS): a click on a head opens its map (plot_clicks.js)."""
    parts = [a.heads] + ([a.cross] if a.cross is not None else []) + [a.mlps[:, None]]
    z = np.concatenate(parts, axis=1)  # (L, H [+ H] + 1)
    H = a.heads.shape[1]
    x = [f"h{h}" for h in range(H)] + ([f"x{h}" for h in range(H)] if a.cross is not None else []) + ["MLP"]
    top = float(np.abs(z).max()) or 1.0
    what = f"{a.target} − {a.contrast}" if a.contrast else a.target
    fig = go.Figure(go.Heatmap(z=z, x=x, y=[f"layer {i}" for i in range(len(z))], zmin=-top, zmax=top, zmid=0,
                               colorscale="RdBu", texttemplate="%{z:.2f}", meta={"open": kinds or {}},
                               hovertemplate="%{y}, %{x}: %{z:.3f}<extra></extra>"))  # fmt: skip
    fig.update_layout(title=f"What each part writes into the logit of {what} (direct logit attribution)",
                      height=140 + 30 * len(z), margin=dict(l=70, r=20, t=50, b=40))  # fmt: skip
    return fig


def notes(lens, a) -> str:
    what = (
        f"the logit of **{a.target}** minus that of **{a.contrast}**" if a.contrast else f"the logit of **{a.target}**"
    )
    cross = f" + cross-attention heads {a.cross.sum():.3f}" if a.cross is not None else ""
    lines = [
        f"Attributed: {what} = **{a.total:.3f}** (the model's own forward). Heads {a.heads.sum():.3f}{cross} + "
        f"feed-forward layers {a.mlps.sum():.3f} + embeddings and biases {a.rest:.3f} = {a.terms_sum:.3f}.",
        f"Left over: {a.unexplained:.2g}"
        + (" (float error: the sum is exact)." if a.exact else " (the BERT pooler's tanh: linearised at this input)."),
        lens.note,
    ]
    return "\n\n".join(lines)


def _whole(x) -> np.ndarray:
    """(L, H [+ H]) the self-attention heads' grid, the cross-attention heads' beside it where there are."""
    return np.concatenate([x.heads] + ([x.cross] if x.cross is not None else []), axis=1)


def effects_figure(off, kinds: dict | None = None) -> go.Figure:
    """Layers x heads (then cross-attention heads): each head's whole effect (switched off alone), diverging at 0;
    kinds as attribution_figure's."""
    grid = _whole(off)
    finite = np.isfinite(grid)
    z = np.where(finite, grid, 0.0).astype(object)
    z[~finite] = None  # rows a Stop left out: blank, never NaN
    top = float(np.abs(grid[finite]).max()) if finite.any() else 1.0
    H = off.heads.shape[1]
    x = [f"h{h}" for h in range(H)] + ([f"x{h}" for h in range(H)] if off.cross is not None else [])
    what = f"{off.target} − {off.contrast}" if off.contrast else off.target
    top = top or 1.0
    hover = "%{y}, %{x}: %{z:.3f}<extra></extra>"
    fig = go.Figure(go.Heatmap(z=z.tolist(), x=x, y=[f"layer {i}" for i in range(len(z))],
                               zmin=-top, zmax=top, zmid=0, colorscale="RdBu", hoverongaps=False,
                               texttemplate="%{z:.2f}", hovertemplate=hover, meta={"open": kinds or {}}))  # fmt: skip
    fig.update_layout(title=f"Each head switched off: its whole effect on the logit of {what}",
                      height=140 + 30 * len(z), margin=dict(l=70, r=20, t=50, b=40))  # fmt: skip
    return fig


def switch_notes(off, a) -> str:
    """How far each head's direct part goes toward its whole effect, on this input."""
    whole, direct = _whole(off), _whole(a)
    both = np.isfinite(whole)
    if both.sum() < 3:
        return "Stopped before enough heads were switched off to compare."
    corr = correlations(direct, whole)
    far = np.unravel_index(np.argmax(np.where(both, np.abs(whole - direct), -1)), whole.shape)
    H = off.heads.shape[1]
    name = f"head {far[1]}" if far[1] < H else f"cross-attention head {far[1] - H}"
    return (
        f"Direct part against whole effect, over the heads switched off: {corr}. Furthest apart: layer {far[0]} "
        f"{name}, direct {direct[far]:+.3f}, whole {whole[far]:+.3f}: the difference is what the later heads and "
        "layers do with that head's output."
    )


def compute_switch(models, task: str, view, step, contrast: str | None, progress=None, stop=None):
    """(whole-effect grid, notes) for the view, by the model that made it."""
    if view is None:
        return None, "Run the model first: this section reads the result shown."
    pipe = models.get(getattr(view, "model", None))
    how = dict(contrast=(contrast or "").strip() or None, step=shown_step(view, step), result=_output(view))
    off = pipe.switch_off(view.text, progress=progress, stop=stop, **how)
    return effects_figure(off, OPENS[task]), switch_notes(off, pipe.direct_logit_attribution(view.text, **how))


def compute(models, task: str, view, step, contrast: str | None, kind: str = "logit lens", read: Read | None = None):
    """(lens grid, by-layer lines, attribution grid, notes, the Read they come from) for the view's step, by the
    model that made it, or from `read` where it was read for this view already; kind: a choice of READ_OUT_WITH."""
    if view is None:
        return None, None, None, "Run the model first: this section reads the result shown.", read
    contrast, how, at = (contrast or "").strip() or None, READ_OUT_WITH[kind], shown_step(view, step)
    if read is None or not read.fits(view, contrast, how):  # every step of the view, from one pass
        pipe = models.get(getattr(view, "model", None))
        steps = pipe.layer_by_layer_steps(view.text, contrast=contrast, result=_output(view), kind=how)
        read = Read(_result(view), contrast, how, steps)
    if not 0 <= at < len(read.steps):
        raise ValueError(f"step {step_shown(at)} is not one of this result's steps (1..{len(read.steps)})")
    lens, a = read.steps[at].lens, read.steps[at].attribution
    if a is None:  # this step's tokens do not name the contrast: the lens stands
        why = html.escape(read.steps[at].why_not)
        return lens_figure(lens), by_layer_figure(lens), None, f"{why}\n\n{lens.note}", read
    return lens_figure(lens), by_layer_figure(lens), attribution_figure(a, OPENS[task]), notes(lens, a), read


def section(page, models, task: str, state, step=None, drawn=None) -> LayerByLayerUI:
    """The tab's "Layer by layer" section (page: viz.page.layout.TaskPage), built and wired; drawn: the tab's event
    after a new result is shown, when a share link with `layers=1` reads it layer by layer."""
    with page.section("Layer by layer"):
        ui = build(task)
    wire(ui, models, task, state, step, drawn)
    if drawn is not None:
        drawn.then(None, None, None, js=page_step("press_linked_lens.js", task), **PRIVATE)
    return ui


def wire(ui: LayerByLayerUI, models, task: str, state, step=None, drawn=None) -> None:
    """The button reads the result shown (the step shown, where there are steps) layer by layer; once drawn, moving
    the step slider or the lens choice redraws it, from what it read (every step at once), and a new result shown
    (`drawn`: another input, model or training step) is read again."""
    slider = step
    step = gr.State(None) if step is None else step

    def run(view, step, contrast, kind, read=None, request: gr.Request = None):
        try:
            return hosting.run_as(request, compute, models, task, view, step, contrast, kind, read)
        except Exception as e:  # the page says so; the other views are unaffected
            return None, None, None, f"Could not read it layer by layer: {html.escape(str(e))}", gr.skip()

    def follow(view, step, contrast, kind, read, request: gr.Request = None):
        """run's, where the section was drawn (from what it read, where that holds the step); nothing changes before
        the first click."""
        return run(view, step, contrast, kind, read, request) if read is not None else (gr.skip(),) * 5

    inputs, outputs = [state, step, ui.contrast, ui.kind], [ui.lens, ui.by_layer, ui.attribution, ui.notes, ui.read]
    ui.submit.click(run, inputs, outputs, **PRIVATE)
    for changed in [c for c in (slider, ui.kind) if isinstance(c, (gr.Slider, gr.Radio))]:
        changed.input(follow, inputs + [ui.read], outputs, trigger_mode="always_last", **PRIVATE)
    if drawn is not None:  # what a layer predicted at training step 223, or by the other model: read when shown
        drawn.then(follow, inputs + [ui.read], outputs, **FOLLOW_UP)
    if ui.switch is not None:
        wire_switch(ui.switch, models, task, [state, step, ui.contrast])


def wire_switch(ui: SwitchUI, models, task: str, inputs: list) -> None:
    """The button switches each head off (in the background queue, with progress and a Stop)."""

    def run(view, step, contrast, request: gr.Request = None, progress=PROGRESS):
        report = reporter(progress, "Switching heads off", "layers")
        try:
            with SWITCHING.watch(request) as stopped:
                return hosting.run_as(request, compute_switch, models, task, view, step, contrast, report, stopped)
        except Exception as e:  # the page says so; the rest of the section stands
            return None, f"Could not switch the heads off: {html.escape(str(e))}"

    ui.submit.click(run, inputs, [ui.grid, ui.notes], trigger_mode="always_last", **PRIVATE)
    ui.stop.click(SWITCHING.press, None, None, concurrency_limit=None, **PRIVATE)
