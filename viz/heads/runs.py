"""What differs between tasks in the heads panel: how a task's model is run to measure its heads (a label, a
decoding, a continuation) and run again with heads switched off. viz.tasks gives each task one HeadRuns."""

from collections.abc import Callable
from dataclasses import dataclass

from .comparisons import lm_comparison, sentiment_comparison, switched_off_names, translation_comparison


@dataclass(frozen=True)
class HeadRuns:
    """One task's runs for the heads panel."""

    measure: Callable  # (pipe, text, beam or None, the tab's last result or None, progress) -> (rows, result kept)
    switch_off: Callable  # (pipe, heads: measure.HeadsView, mask {(kind, layer, head): 0.0}) -> comparison HTML


def _same_input(result, text: str, beam: int | None):
    """The result when it is a decoding of this very text with this beam width (the tab's last run), else None."""
    if result is None or getattr(result, "beam_size", None) != beam:
        return None
    return result if getattr(result, "text", None) == text else None


def measure_label(pipe, text: str, beam: int | None, result, progress=None):
    """A classifier: nothing to keep (switching heads off predicts again); one batch, no progress to report."""
    return pipe.head_table(text), None


def measure_decoded(pipe, text: str, beam: int | None, result, progress=None):
    """A decoder: the tab's last decoding of this text and beam width, else decoded now (no progress reported)."""
    result = _same_input(result, text, beam) or pipe(text, beam_size=beam)
    return pipe.head_table(text, beam_size=beam, result=result), result


def measure_continued(pipe, text: str, beam: int | None, result, progress=None):
    """A language model: the tab's last result of this prompt (its decoding options with it), else greedy now;
    progress(layers done, layers) as its heads' effects come (270 heads of SmolLM2 take seconds)."""
    if result is None or getattr(result, "prompt", None) != text or not result.generated_ids:
        result = pipe(text)
    return pipe.head_table(text, result=result, progress=progress), result


def label_off(pipe, heads, mask: dict) -> str:
    """A classifier: the prediction with and without the heads."""
    names = switched_off_names(mask, pipe.head_layers, pipe.n_heads)
    return sentiment_comparison(pipe(heads.text), pipe(heads.text, head_mask=mask), names)


def decoded_off(pipe, heads, mask: dict) -> str:
    """A decoder: decoded again without the heads, and the intact output scored without them."""
    intact = heads.result or pipe(heads.text, beam_size=heads.beam_size)
    off = pipe(heads.text, beam_size=heads.beam_size, head_mask=mask)
    old_logp_off = pipe.score(heads.text, intact.target_ids, head_mask=mask)
    names = switched_off_names(mask, pipe.head_layers, pipe.n_heads)
    return translation_comparison(intact, off, old_logp_off, names)


def continued_off(pipe, heads, mask: dict) -> str:
    """A language model: the prompt continued again without the heads, with the intact run's options."""
    intact = heads.result or pipe(heads.text)
    options = dict(temperature=intact.temperature, top_p=intact.top_p, seed=intact.seed, chat=intact.chat)
    off = pipe(heads.text, max(1, len(intact.steps)), head_mask=mask, **options)
    names = switched_off_names(mask, pipe.head_layers, pipe.n_heads)
    return lm_comparison(intact, off, names)


LABEL = HeadRuns(measure_label, label_off)  # a classifier
DECODED = HeadRuns(measure_decoded, decoded_off)  # a translator
CONTINUED = HeadRuns(measure_continued, continued_off)  # a language model
