"""Pipelines for a server: calls from many request threads go through one fair MicroBatcher.

The stand-ins behave like the pipelines they wrap (same call, same results, other attributes passed
through), so handlers written for a pipeline work unchanged. Every call that runs the model (the model run,
a run with heads switched off, explanations, faithfulness, the head table, scoring) goes through the batcher
to the model's one runner, pipe.run_batch, in the model's own process where it has one; only cheap attributes
(tokenizing, sizes, names) are read from the pipeline here. Who is calling comes from `calling_client`.
"""

import functools
import logging
import queue
import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pipelines.common import declared_background, declared_runs_model
from pipelines.hosting.budget import ModelSize, review_batch
from pipelines.hosting.microbatch import MicroBatcher
from pipelines.hosting.processes import ModelProcess, remote

log = logging.getLogger(__name__)
_CLIENT: ContextVar[Hashable] = ContextVar("client", default=None)
# Who is calling when no calling_client block says so: a server sets this (viz.server.hosting: the request's session).
client_source: Callable[[], Hashable] | None = None
SHORT_REVIEW = 128  # tokens: reviews up to this share batches with each other, longer ones with longer ones
# Long reviews run in batches as large as the memory budget allows for this model (budget.review_batch): a batch of
# 8 reviews of 361 tokens on a 2 x 4 model peaked 81-87 MB above the model's resting memory against 41 MB for 4.
SHORT_SENTENCE = 32


@contextmanager
def calling_client(key: Hashable) -> Iterator[None]:
    """Calls made inside this block are queued as `key`'s (a session): the batcher is fair between keys."""
    token = _CLIENT.set(key)
    try:
        yield
    finally:
        _CLIENT.reset(token)


def current_client() -> Hashable:
    """The key the batcher queues this call under (see calling_client and client_source)."""
    key = _CLIENT.get()
    return client_source() if key is None and client_source is not None else key


class _Served:
    batch_method = ""  # the pipeline's method that runs a batch of model runs

    def __init__(self, pipe, batcher: MicroBatcher, process: ModelProcess | None = None):
        """process: a ModelProcess holding a copy of pipe, to run the batches in (None: in this process)."""
        self.pipe, self.batcher, self.process = pipe, batcher, process
        # One runner per model: the batcher never runs two batches of one runner at once.
        self.run_batch = pipe.run_batch if process is None else remote(process, "run_batch")

    def _one(self, name: str, /, *args, **kwargs):
        """pipe.name(*args, **kwargs) as a batch of its own on the model's runner. `name` is positional-only: the
        pipelines' own keywords (explain's `method`) pass through in kwargs."""
        item, client, background = (args, kwargs), current_client(), declared_background(type(self.pipe), name)
        return self.batcher.submit(
            self.run_batch, item, client=client, bucket=name, max_batch=1, background=background, name=name
        )

    def __getattr__(self, name):
        value = getattr(self.pipe, name)  # AttributeError for what the pipeline lacks, as the pipeline would
        # a method declared @runs_model (pipelines.common) is one call a batch on the model's runner
        return functools.partial(self._one, name) if declared_runs_model(type(self.pipe), name) else value


class ServedSentiment(_Served):
    """A SentimentPipeline whose calls run in batches (pipe.analyze_many)."""

    batch_method = "analyze_many"

    def __init__(self, pipe, batcher: MicroBatcher, process: ModelProcess | None = None):
        super().__init__(pipe, batcher, process)
        self.long_batch = review_batch(ModelSize.of(pipe))  # long reviews at once, at most

    def __call__(self, text: str, head_mask=None, need_weights: bool = True):
        if head_mask:  # a what-if run with heads switched off (rare): a batch of its own
            return self._one("__call__", text, head_mask, need_weights)
        long = self.pipe.tokens_read(text) > SHORT_REVIEW
        limit = self.long_batch if long and need_weights else 0  # the maps are what takes the memory
        return self.batcher.submit(
            self.run_batch,
            text,
            client=current_client(),
            bucket=long,
            max_batch=limit,
            name=self.batch_method,
            need_weights=need_weights,
        )


class ServedTranslation(_Served):
    """A TranslationPipeline whose calls run in batches (pipe.explain_many) of one beam size."""

    batch_method = "explain_many"

    def __call__(
        self, text: str, beam_size: int | None = None, alpha: float | None = None, top_k: int = 5, head_mask=None
    ):
        if head_mask:  # a what-if run with heads switched off (rare): a batch of its own
            return self._one("__call__", text, beam_size, alpha, top_k, head_mask)
        n = len(self.pipe.encode_source([text])[0][0])
        return self.batcher.submit(
            self.run_batch,
            text,
            client=current_client(),
            bucket=n > SHORT_SENTENCE,
            name=self.batch_method,
            beam_size=self.pipe.beam_size if beam_size is None else beam_size,
            alpha=self.pipe.alpha if alpha is None else alpha,
            top_k=top_k,
        )


class ServedLM(_Served):
    """A LanguageModelPipeline whose runs go through the batcher one at a time (a generation is a loop of its own,
    no batch); stream() runs the decoding in the batcher's worker and hands each partial result over as it comes."""

    batch_method = "__call__"

    def __call__(self, prompt: str, *args, **kwargs):
        return self._one("__call__", prompt, *args, **kwargs)

    def stream(self, prompt: str, *args, **kwargs):
        """pipe.stream's results, decoded in a batcher worker (fair between clients, like every other call). Closing
        the generator (a Stop button, a closed page) stops the decoding at the next token."""
        results: queue.Queue = queue.Queue()
        stopped = threading.Event()
        client = current_client()

        def decode(*a, **kw):
            for result in self.pipe.stream(*a, **kw):
                results.put(result)
                if stopped.is_set():
                    break

        def run() -> None:
            try:
                self.batcher.submit(self._stream_runner(decode), ((prompt, *args), kwargs), client=client, max_batch=1)
                results.put(StopIteration())
            except Exception as e:  # the caller raises it
                results.put(e)

        threading.Thread(target=run, name="lm-stream", daemon=True).start()
        try:
            while not isinstance(item := results.get(), StopIteration):
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            stopped.set()

    @staticmethod
    def _stream_runner(decode):
        """A runner (run_batch's protocol) for one stream: its (args, kwargs) item decoded, partial results handed
        over by `decode` as they come. A runner of its own: two streams may decode side by side (parallel_models)."""

        def stream_batch(items: list, **_):
            out = []
            for args, kwargs in items:
                try:
                    out.append(decode(*args, **kwargs))
                except Exception as e:
                    out.append(e)
            return out

        return stream_batch


SERVED = {"sentiment": ServedSentiment, "translation": ServedTranslation, "lm": ServedLM}  # task -> its stand-in


def serve(task: str, pipe, batcher: MicroBatcher, own_process: tuple[str, ...] = ()):
    """The stand-in of one task's pipeline (None stays None) on the shared batcher: each model one batch at a time.
    own_process: the tasks whose batches run in a ModelProcess of their own."""
    if pipe is None:
        return None
    process = None
    if task in own_process:
        try:
            process = ModelProcess(pipe, name=task).start()
        except Exception:  # the app still works, with this model in the server's own process
            log.exception("could not start the %s model's process; it runs in this one", task)
    return SERVED[task](pipe, batcher, process)


def served(sentiment, translation, batcher: MicroBatcher, own_process: tuple[str, ...] = ()) -> tuple:
    """(sentiment, translation) stand-ins sharing one batcher (serve)."""
    return serve("sentiment", sentiment, batcher, own_process), serve("translation", translation, batcher, own_process)
