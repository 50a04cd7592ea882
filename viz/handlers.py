"""Event handlers: small functions from inputs (and the last result) to values the app shows.

The model runs only in analyze_review and translate. Everything else (layer, head, step, highlighting)
redraws from the result kept in gr.State, so moving a control never re-runs the model.
"""

import html
import logging
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

import gradio as gr
import numpy as np

from pipelines.attention.attention_maps import AttentionMaps
from pipelines.kinds import CROSS, KINDS
from pipelines.models.tokenizers_io import unknown_token
from pipelines.tasks import SENTIMENT, TASKS, TRANSLATION, Task

from . import notices as notices_
from .attention import figures
from .attention import view_handlers as views
from .inputs import MAX_GERMAN_CHARS, MAX_REVIEW_CHARS, check_text, clamp, decoding_options, plural
from .server.failures import failure_message

log = logging.getLogger(__name__)
DECODING = ["beam search", "greedy"]
NO_WORDS = "The model found no words to read in this text."


def _status(lines: list[str], error: str | None = None) -> str:
    """Markdown for the status line: the error or the first line, then one bullet per further line."""
    first, rest = (f"⚠️ {error}", lines) if error else (lines[0], lines[1:])
    return "\n".join([first, *(f"- {line}" for line in rest)])


def _layer_head(n_layers: int, n_heads: int, layer, head) -> tuple[int, int]:
    """Clamp layer and head choices (ints, or strings from an API client) into range."""
    return clamp(layer, 0, n_layers - 1, 0), clamp(head, 0, n_heads - 1, 0)


# --- sentiment ------------------------------------------------------------------------------------------


@dataclass
class SentimentView:
    """One analysed review, kept in gr.State: the text the offsets point into, the result, axis labels."""

    text: str
    spans: list[tuple[int, int]]  # each token's characters in text
    maps: AttentionMaps  # the result's attention, float16 (its tokens name the axes)
    pool_weights: np.ndarray  # (T,)
    n_skipped: int  # tokens of a long review the model never saw
    cut_after: int | None  # the model read tokens [:cut_after] from the start and the rest from the end
    model: str | None = None  # which of the tab's models made it (its name in the tab's ModelRegistry)
    # (layer, head) of the large heatmap the run drew: a choice changed while it ran is drawn after it (views_panel)
    drawn_at: tuple[int, int] | None = None
    task: ClassVar[Task] = SENTIMENT


def _sentiment_view(text: str, result, cut_after: int | None, model: str | None) -> SentimentView:
    return SentimentView(
        text=text,
        spans=[(t.start, t.end) for t in result.tokens],
        maps=result.attention_maps().astype(np.float16),
        pool_weights=result.pool_weights.numpy(),
        n_skipped=result.n_tokens - len(result.tokens),
        cut_after=cut_after,
        model=model,
    )


def clamp_layer_head(pipe, layer, head) -> tuple[int, int]:
    """Layer and head choices clamped into this model's range (another model may have fewer)."""
    return _layer_head(pipe.n_layers, pipe.n_heads, layer, head)


def analyze_review(
    pipe, review: str, redraws: bool = True, model: str | None = None
) -> tuple[SentimentView | None, dict[str, float] | None, str]:
    """Run the classifier once: (state, label -> probability, status Markdown). redraws=False (an API call,
    which cannot redraw): no attention maps are computed or kept, and the state is None. model: the name of
    `pipe` in the tab's model registry, kept in the state for the panels that run the model again."""
    checked = check_text(review, MAX_REVIEW_CHARS, "review")
    if checked.text is None:
        return None, None, _status([], checked.error)
    try:
        # never a NaN: the pipeline raises NonFiniteOutput in its place (pipelines.trust.finite.guarded)
        result = pipe(checked.text) if redraws else pipe(checked.text, need_weights=False)
    except ValueError:
        return None, None, _status(checked.notices, NO_WORDS)
    except Exception as e:
        return None, None, _status(checked.notices, failure_message(e, "sentiment"))
    notices = list(checked.notices)
    cut_after = None
    if result.truncated:
        cut_after = pipe.head_tokens
        notices.append(
            f"The review has {result.n_tokens:,} tokens; the model reads {len(result.tokens):,}: the first "
            f"{cut_after:,} and the last {len(result.tokens) - cut_after:,}. The middle is skipped (marked below)."
        )
    notices += [n for n in [_vocabulary_notice(pipe, checked.text, result.tokens)] if n]
    view = _sentiment_view(checked.text, result, cut_after, model) if redraws else None
    summary = notices_.sentiment_summary(result.label, result.confidence, len(result.tokens))
    ood = notices_.sentiment_notice(result) or notices_.domain_note(pipe)
    # A wrong example says so plainly; any other review names what it holds that this model often misreads
    # (unless it is not an English review at all: a Spanish "no" is no English negation).
    weak = [] if result.out_of_domain else pipe.weak_spots(checked.text)
    wrong = notices_.example_notice(checked.text, result.label) or notices_.weak_spot_notice(weak)
    flags = [line for line in (wrong, ood) if line]
    return view, dict(result.probabilities), _status([summary, *flags, *notices])


def _vocabulary_notice(pipe, text: str, tokens) -> str | None:
    """notices.vocabulary_notice for the tokens (TokenSpans) `pipe` read of `text`: those read as its tokenizer's
    unknown token, by id, named by the text they cover; both tabs."""
    unk_id, unk = unknown_token(getattr(pipe, "tokenizer", None))
    unknown = [t.text for t in tokens if unk_id is not None and t.id == unk_id]
    return notices_.vocabulary_notice(text, unknown, unk)


# --- translation ----------------------------------------------------------------------------------------


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
        return None, "", _status([], checked.error)
    start_decoding, start_beam = default_decoding(pipe)
    decoding = start_decoding if decoding is None else decoding
    beam, error = decoding_options(decoding, start_beam if beam_size is None else beam_size, start_beam)
    if error:
        return None, "", _status([], error)
    try:
        light = {} if redraws else dict(need_weights=False)  # an API call: no maps
        result = pipe(checked.text, beam_size=beam, **light)  # never a NaN: the pipeline raises NonFiniteOutput
    except ValueError:
        return None, "", _status(checked.notices, NO_WORDS)
    except Exception as e:
        return None, "", _status(checked.notices, failure_message(e, "translation"))
    notices = list(checked.notices)
    if result.truncated:
        notices.append(
            f"The sentence is longer than the model reads: only its first {len(result.source_tokens) - 1:,} "
            "tokens were translated."
        )
    notices += [n for n in [_vocabulary_notice(pipe, checked.text, result.source_tokens)] if n]
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
    return view, result.translation, _status([summary, *([ood] if ood else []), *notices])


# --- the views of any task: its kinds of attention, its large heatmaps and small multiples ----------------------


def kinds(view) -> dict[str, views.KindMaps]:
    """A result's kinds of attention, by name (pipelines.kinds): the classifier's self-attention; the translator's
    encoder, decoder (self-attention) and cross-attention."""
    return views.kinds_of(view.maps, view.cut_after, view.n_skipped)


def heatmap(view, layer: int, head: int, scale="linear", hide=False, token=None, kind: str | None = None):
    """One head of one kind, large (None: the task's main kind; cross-attention: English steps (rows) by German
    tokens)."""
    if view is None:
        return None
    kind = kind or view.task.main
    return views.heatmap(kinds(view)[kind], layer, head, KINDS[kind].heatmap_title, scale, hide, token)


def overview(view, layer: int, scale="linear", hide=False):
    """Every head of the chosen layer of the task's main kind as small multiples."""
    if view is None:
        return None
    kind = view.task.main
    return views.overview(kinds(view)[kind], layer, KINDS[kind].overview_title, scale, hide)


def drawn_heatmap(view, layer: int, head: int, scale="linear", hide=False):
    """A run's large heatmap of its main kind, with (layer, head) noted in the view: a choice the visitor changes
    while the run goes on is drawn after it (viz.attention.views_panel), from the new result."""
    if view is not None:
        view.drawn_at = (layer, head)
    return heatmap(view, layer, head, scale, hide)


def large_figures(task: str, view, layer: int, head: int, scale="linear", hide=False, token=None) -> tuple:
    """The chosen head of every kind the task draws large, in its order (the translator: cross-attention, encoder
    and decoder self-attention): what a change of head redraws."""
    return tuple(heatmap(view, layer, head, scale, hide, token, kind) for kind in TASKS[task].shown)


def task_figures(task: str, view, layer: int, head: int, scale="linear", hide=False, token=None) -> tuple:
    """(every head of the main kind, then the large heatmaps) for the chosen layer and head."""
    return overview(view, layer, scale, hide), *large_figures(task, view, layer, head, scale, hide, token)


def translation_step(view: TranslationView | None, layer: int, step: int):
    """(every head's cross-attention over the source at this step, the top-k next tokens at this step)."""
    if view is None:
        return None, None
    steps, cross = view.steps, kinds(view)[CROSS.name]
    layer, _ = _layer_head(len(cross.maps), 1, layer, 0)
    t = clamp(step, 1, len(steps), 1) - 1
    produced = steps[t].token
    tok = html.escape(produced, quote=False)
    heat = figures.step_heatmap(
        cross.maps[layer][:, t, :],
        cross.k_labels,
        f"Step {t + 1} of {len(steps)} (produced “{tok}”): layer {layer + 1}, every head",
    )
    bar = figures.topk_bar(steps[t].top_k, produced, f"Step {t + 1}: the {len(steps[t].top_k)} most likely next tokens")
    return heat, bar


# The names by task, for the benchmarks written before the task registry.
sentiment_heatmap = heatmap
sentiment_figures = partial(task_figures, SENTIMENT.name)
translation_figures = partial(task_figures, TRANSLATION.name)
