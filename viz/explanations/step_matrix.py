"""Every generated token attributed, on the Next word tab under the explanation: on a click, one row a new token
explained (the panel's method) over the tokens read before it, each row's faithfulness in its label
(pipelines.explanations.steps through the served pipeline, in the background queue, with progress)."""

import html
from dataclasses import dataclass

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from pipelines import explanations

from ..page.progress import reporter
from ..page.theme import waiting_plot
from ..server import hosting
from ..server.events import PRIVATE

PROGRESS = gr.Progress()
MAX_TEXT_CELLS = 900  # cells named by their score up to this many (a long continuation: colour and hover only)


@dataclass
class StepMatrixUI:
    submit: gr.Button
    matrix: gr.Plot
    notes: gr.Markdown


def build() -> StepMatrixUI:
    gr.Markdown(
        "**Every new token, explained.** One row a generated token: what the method above gives each token the model "
        "had read when it chose it (the prompt, then the tokens it wrote before). Each row's label says how faithful "
        "that row is: comprehensiveness − sufficiency, beside random rankings of the same tokens (higher is better)."
    )
    submit = gr.Button("Explain every new token", size="sm", elem_id="lm-explain-steps-submit")
    notes = gr.Markdown(elem_id="lm-explain-steps-notes")
    return StepMatrixUI(submit, waiting_plot("lm-explain-steps"), notes)


def figure(steps) -> go.Figure:
    """Generated tokens x read tokens: each row's scores, blank where the row had not read the token yet."""
    z = np.where(steps.read(), steps.matrix(), np.nan).astype(object)
    z[~steps.read()] = None  # plotly leaves None cells blank; no NaN goes to the page
    faith = steps.faithfulness
    rows = [f"{s + 1}: {t!s}" + (f" ({f[0] - f[1]:+.2f} / random {f[2] - f[3]:+.2f})" if faith else "")
            for s, (t, f) in enumerate(zip(steps.outputs, faith or [None] * len(steps.outputs)))]  # fmt: skip
    x = [f"{i}: {t}" for i, t in enumerate(steps.tokens)]
    top = float(np.abs(steps.matrix()).max()) or 1.0
    fig = go.Figure(go.Heatmap(
        z=z.tolist(), x=x, y=rows, zmid=0 if steps.signed else None, zmin=-top if steps.signed else 0, zmax=top,
        colorscale="RdBu" if steps.signed else "Blues", hoverongaps=False,
        texttemplate="%{z:.2f}" if z.size <= MAX_TEXT_CELLS else None,
        hovertemplate="chose %{y}<br>read %{x}: %{z:.3f}<extra></extra>",
    ))  # fmt: skip
    fig.update_layout(title=f"Every new token attributed ({explanations.label('lm', steps.method)})",
                      height=160 + 26 * len(rows), margin=dict(l=160, r=20, t=50, b=90),
                      yaxis=dict(autorange="reversed"), xaxis=dict(tickangle=-45))  # fmt: skip
    return fig


def notes(steps) -> str:
    n = len(steps.outputs)
    line = f"{n} new token{'s' if n != 1 else ''} explained in {steps.seconds:.1f} s."
    if steps.faithfulness:
        f = np.array(steps.faithfulness)  # (S, 4)
        ours, rand = f[:, 0] - f[:, 1], f[:, 2] - f[:, 3]
        line += (f" Faithfulness by row (comprehensiveness − sufficiency): mean {ours.mean():+.3f} against "
                 f"{rand.mean():+.3f} for random rankings; the method beats random on {int((ours > rand).sum())} of "
                 f"{len(ours)} rows.")  # fmt: skip
    return line


def compute(models, view, method, progress=None):
    """(figure, notes) for the continuation in `view`, by the model that made it."""
    if view is None or not getattr(view, "steps", None):
        return None, "Generate a continuation first: this explains each of its new tokens."
    pipe = models.get(getattr(view, "model", None))
    steps = pipe.explain_steps(view.result, method or None, faithfulness=True, progress=progress)
    return figure(steps), notes(steps)


def wire(ui: StepMatrixUI, models, state, method) -> None:
    def run(view, method, request: gr.Request = None, progress=PROGRESS):
        report = reporter(progress, "Explaining every new token", "tokens")
        try:
            return hosting.run_as(request, compute, models, view, method, report)
        except Exception as e:  # the page says so; the rest of the tab is unaffected
            return None, f"Could not explain every new token: {html.escape(str(e))}"

    ui.submit.click(run, [state, method], [ui.matrix, ui.notes], trigger_mode="always_last", **PRIVATE)
