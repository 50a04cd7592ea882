"""The sentiment tab's run handler: a review to the prediction, its status line and the view kept in gr.State.

The model runs only in analyze_review. Everything else (layer, head, highlighting) redraws from the view kept in
gr.State (viz.attention.task_views), so moving a control never re-runs the model.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pipelines.attention.attention_maps import AttentionMaps
from pipelines.tasks import SENTIMENT, Task

from .. import notices as notices_
from ..inputs import MAX_REVIEW_CHARS, check_text
from ..notices import NO_WORDS, status, tokens_notice
from ..server.failures import failure_message


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


def analyze_review(
    pipe, review: str, redraws: bool = True, model: str | None = None
) -> tuple[SentimentView | None, dict[str, float] | None, str]:
    """Run the classifier once: (state, label -> probability, status Markdown). redraws=False (an API call,
    which cannot redraw): no attention maps are computed or kept, and the state is None. model: the name of
    `pipe` in the tab's model registry, kept in the state for the panels that run the model again."""
    checked = check_text(review, MAX_REVIEW_CHARS, "review")
    if checked.text is None:
        return None, None, status([], checked.error)
    try:
        # never a NaN: the pipeline raises NonFiniteOutput in its place (pipelines.trust.finite.guarded)
        result = pipe(checked.text) if redraws else pipe(checked.text, need_weights=False)
    except ValueError:
        return None, None, status(checked.notices, NO_WORDS)
    except Exception as e:
        return None, None, status(checked.notices, failure_message(e, "sentiment"))
    notices = list(checked.notices)
    cut_after = None
    if result.truncated:
        cut_after = pipe.head_tokens
        notices.append(
            f"The review has {result.n_tokens:,} tokens; the model reads {len(result.tokens):,}: the first "
            f"{cut_after:,} and the last {len(result.tokens) - cut_after:,}. The middle is skipped (marked below)."
        )
    notices += [n for n in [tokens_notice(pipe, checked.text, result.tokens)] if n]
    view = _sentiment_view(checked.text, result, cut_after, model) if redraws else None
    summary = notices_.sentiment_summary(result.label, result.confidence, len(result.tokens))
    ood = notices_.sentiment_notice(result) or notices_.domain_note(pipe)
    # A wrong example says so plainly; any other review names what it holds that this model often misreads
    # (unless it is not an English review at all: a Spanish "no" is no English negation).
    weak = [] if result.out_of_domain else pipe.weak_spots(checked.text)
    wrong = notices_.example_notice(checked.text, result.label) or notices_.weak_spot_notice(weak)
    flags = [line for line in (wrong, ood) if line]
    return view, dict(result.probabilities), status([summary, *flags, *notices])
