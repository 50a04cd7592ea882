"""The translation tab's handlers: a German sentence to its translation, its status line and the view kept in
gr.State; the decoding choice it starts on, and the step slider's redraws.

The model runs only in translate. Everything else (layer, head, step) redraws from the view kept in gr.State
(viz.attention.task_views), so moving a control never re-runs the model.
"""

import html
from dataclasses import dataclass
from typing import ClassVar

import gradio as gr
import numpy as np

from pipelines.attention.attention_maps import AttentionMaps
from pipelines.kinds import CROSS
from pipelines.tasks import TRANSLATION, Task

from .. import notices as notices_
from ..attention import figures
from ..attention.task_views import kinds
from ..inputs import MAX_GERMAN_CHARS, check_text, decoding_options, layer_head, plural, step_chosen, step_shown
from ..notices import NO_WORDS, status, tokens_notice
from ..server.failures import failure_message


@dataclass
class TranslationView:
    """One translation, kept in gr.State."""

    steps: list  # pipelines.DecodingStep per produced token: the token and the top-k next tokens
    maps: AttentionMaps  # encoder (Ts, Ts), decoder (Tt, Tt, causal), cross (Tt, Ts) attention, float16
    text: str = ""  # the sentence translated
    # The pipeline's TranslationResult: the explanation, the head table and the download reuse it, so a Translate
    # click decodes once (a sentence's maps in float32: at most a few hundred kB).
    result: object = None
    model: str | None = None  # which of the tab's models made it (its name in the tab's ModelRegistry)
    # (layer, head) of the large heatmap the run drew: a choice changed while it ran is drawn after it (views_panel)
    drawn_at: tuple[int, int] | None = None
    cut_after: ClassVar[None] = None  # a sentence is cut at its end, never in the middle
    n_skipped: ClassVar[int] = 0
    task: ClassVar[Task] = TRANSLATION


def step_slider(view: TranslationView | None) -> gr.Slider:
    """The decoding-step slider over the steps of this translation (1-based; gradio needs maximum > minimum)."""
    n = len(view.steps) if view is not None else 1
    return gr.Slider(minimum=1, maximum=max(n, 2), value=1, step=1, interactive=n > 1)


def default_decoding(pipe) -> tuple[str, int]:
    """(decoding, beam size) the app starts with: what the model was evaluated with (the slider starts at 2)."""
    beam = getattr(pipe, "beam_size", 4)
    return ("beam search" if beam > 1 else "greedy"), max(2, beam)


def translate(
    pipe,
    german_text: str,
    decoding: str | None = None,
    beam_size: int | None = None,
    model: str | None = None,
    redraws: bool = True,
):
    """Run the translator once: (state, English text, status Markdown). decoding / beam_size None: the app's
    defaults; values the app does not take (from an API client) get a message. model: the name of `pipe` in the
    tab's model registry (a training snapshot's, "<model>@step-<N>"), kept in the state for the panels.
    redraws=False (an API call): the decoding alone, no maps or value norms computed, and the state is None."""
    checked = check_text(german_text, MAX_GERMAN_CHARS, "German sentence")
    if checked.text is None:
        return None, "", status([], checked.error)
    start_decoding, start_beam = default_decoding(pipe)
    decoding = start_decoding if decoding is None else decoding
    beam, error = decoding_options(decoding, start_beam if beam_size is None else beam_size, start_beam)
    if error:
        return None, "", status([], error)
    try:
        light = {} if redraws else dict(need_weights=False)  # an API call: no maps
        result = pipe(checked.text, beam_size=beam, **light)  # never a NaN: the pipeline raises NonFiniteOutput
    except ValueError:
        return None, "", status(checked.notices, NO_WORDS)
    except Exception as e:
        return None, "", status(checked.notices, failure_message(e, "translation"))
    notices = list(checked.notices)
    if result.truncated:
        notices.append(
            f"The sentence is longer than the model reads: only its first {len(result.source_tokens) - 1:,} "
            "tokens were translated."
        )
    notices += [n for n in [tokens_notice(pipe, checked.text, result.source_tokens)] if n]
    if not result.translation:  # an untrained snapshot writes <s> after <s>
        notices.append(
            "The model produced no words for this sentence: only special tokens (step by step, below, shows them)."
        )
    if not result.target_tokens or result.target_tokens[-1] != "</s>":
        notices.append("The model stopped at its length limit before finishing the sentence.")
    view = None
    if redraws:
        maps = result.attention_maps().astype(np.float16)
        view = TranslationView(steps=result.steps, maps=maps, text=checked.text, result=result, model=model)
    how = "greedy decoding" if beam == 1 else f"beam search, {beam} beams"
    # how sure it was of its words; of no words (special tokens alone) there is nothing to be sure of
    sure = f"; {notices_.translation_confidence(result.mean_logprob)}" if result.translation else ""
    summary = f"{plural(len(result.steps), 'step')}, {how}{sure}"
    ood = notices_.translation_notice(result, checked.text) or notices_.domain_note(pipe)
    return view, result.translation, status([summary, *([ood] if ood else []), *notices])


def translation_step(view: TranslationView | None, layer: int, step: int):
    """(every head's cross-attention over the source at this step, the top-k next tokens at this step)."""
    if view is None:
        return None, None
    steps, cross = view.steps, kinds(view)[CROSS.name]
    layer, _ = layer_head(len(cross.maps), 1, layer, 0)
    t = step_chosen(step, len(steps))
    produced = steps[t].token
    tok = html.escape(produced, quote=False)
    heat = figures.step_heatmap(
        cross.maps[layer][:, t, :],
        cross.k_labels,
        f"Step {step_shown(t)} of {len(steps)} (produced “{tok}”): layer {layer + 1}, every head",
    )
    bar = figures.topk_bar(
        steps[t].top_k, produced, f"Step {step_shown(t)}: the {len(steps[t].top_k)} most likely next tokens"
    )
    return heat, bar
