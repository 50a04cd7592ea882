"""The next-word explanation of one step, for the page: which step is explained (the step slider's: token s of the
continuation, read from the prompt and the s - 1 tokens written before it), and those earlier tokens shaded by their
own scores (Explanation.prefix_scores) on the prompt's colour scale. The prompt itself is shaded by attributions.py."""

import html

import numpy as np

from pipelines.explanations.words import word_scores

from ..inputs import plural, step_shown
from .attributions import _rgba

HINT = "Move the step slider, then press <i>Explain this step</i>, to explain another token."


def shared_scale(expl) -> float:
    """The top of one colour scale for the prompt's words and the tokens written before the step."""
    words = np.abs(word_scores(np.asarray(expl.scores, dtype=np.float64), np.asarray(expl.words)))
    prefix = np.abs(np.asarray(expl.prefix_scores if expl.prefix_scores is not None else [], dtype=np.float64))
    return float(max(words.max(initial=0.0), prefix.max(initial=0.0)))


def caption(view, expl) -> str:
    """Which step is explained, and what the model had read then."""
    s, n = step_shown(expl.at_step), len(view.steps)
    read = "the prompt" if s == 1 else f"the prompt and the {plural(s - 1, 'token')} it wrote before"
    token = html.escape(expl.target)
    against = expl.contrast.get(expl.at_step)
    rather = f" rather than “{html.escape(against)}” (blue: toward the first)" if against else ""
    skipped = expl.contrast_not_applied.get(expl.at_step)
    if skipped:
        rather = (f" (not against “{html.escape(skipped)}”: this method reads attention, the same whatever the "
                  "alternative)")  # fmt: skip
    return (
        f'<p class="explained-step" data-step="{s}" style="margin:0 0 4px"><b>Step {s} of {n} explained</b>: what '
        f"drives “{token}” (p = {expl.probability:.1%}){rather}, read from {read}. {HINT}</p>"
    )


def prefix_html(view, expl, scale: float) -> str:
    """The tokens written before the step, each shaded by its score (nothing at step 1)."""
    if not expl.prefix_ids:
        return ""
    signed = bool(expl.signed)
    cells = []
    for step, score in zip(view.steps[: len(expl.prefix_ids)], expl.prefix_scores):
        tip = f"{score:+.3f}" if signed else f"{100 * score:.2f}%"
        cells.append(
            f'<span class="tok" title="{tip}" style="background:{_rgba(float(score), scale)};border-radius:3px;'
            f'padding:1px 2px">{html.escape(step.token)}</span>'
        )
    return (
        '<div class="explained-prefix" style="margin:6px 0 0;font-size:0.9em;line-height:1.9">'
        f"<b>Written before this step</b> (read too, on the same scale; never deleted when faithfulness is measured): "
        f"{' '.join(cells)}</div>"
    )


def faithfulness_note(expl) -> str:
    """What stays in place while a later step's faithfulness is measured ('' at the first step)."""
    if not getattr(expl, "at_step", None):
        return ""
    n = len(expl.prefix_ids)
    return (
        f"\n\nStep {step_shown(expl.at_step)}: the {plural(n, 'token')} written before it stay in place; the "
        "prompt's tokens are deleted or kept, as for the first token."
    )
