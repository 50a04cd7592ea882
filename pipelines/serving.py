"""Pipelines for a server: calls from many request threads go through one fair MicroBatcher.

The stand-ins behave like the pipelines they wrap (same call, same results, other attributes passed
through), so handlers written for a pipeline work unchanged. Who is calling comes from `calling_client`.
"""

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .microbatch import MicroBatcher

_CLIENT: ContextVar[Hashable] = ContextVar("client", default=None)
SHORT_REVIEW = 128  # tokens: reviews up to this share batches with each other, longer ones with longer ones
SHORT_SENTENCE = 32


@contextmanager
def calling_client(key: Hashable) -> Iterator[None]:
    """Calls made inside this block are queued as `key`'s (a session): the batcher is fair between keys."""
    token = _CLIENT.set(key)
    try:
        yield
    finally:
        _CLIENT.reset(token)


class _Served:
    def __init__(self, pipe, batcher: MicroBatcher):
        self.pipe, self.batcher = pipe, batcher

    def __getattr__(self, name):
        return getattr(self.pipe, name)


class ServedSentiment(_Served):
    """A SentimentPipeline whose calls run in batches (pipe.analyze_many)."""

    def __call__(self, text: str, head_mask=None):
        if head_mask:  # a what-if run with heads switched off (rare): not batched
            return self.pipe(text, head_mask)
        long = self.pipe.tokens_read(text) > SHORT_REVIEW
        return self.batcher.submit(self.pipe.analyze_many, text, client=_CLIENT.get(), bucket=long)


class ServedTranslation(_Served):
    """A TranslationPipeline whose calls run in batches (pipe.explain_many) of one beam size."""

    def __call__(
        self, text: str, beam_size: int | None = None, alpha: float | None = None, top_k: int = 5, head_mask=None
    ):
        if head_mask:  # a what-if run with heads switched off (rare): not batched
            return self.pipe(text, beam_size, alpha, top_k, head_mask)
        n = len(self.pipe.encode_source([text])[0][0])
        return self.batcher.submit(
            self.pipe.explain_many,
            text,
            client=_CLIENT.get(),
            bucket=n > SHORT_SENTENCE,
            beam_size=self.pipe.beam_size if beam_size is None else beam_size,
            alpha=self.pipe.alpha if alpha is None else alpha,
            top_k=top_k,
        )


def served(sentiment, translation, batcher: MicroBatcher) -> tuple:
    """(sentiment, translation) stand-ins sharing one batcher (None stays None): each model one batch at a time."""
    return (
        None if sentiment is None else ServedSentiment(sentiment, batcher),
        None if translation is None else ServedTranslation(translation, batcher),
    )
