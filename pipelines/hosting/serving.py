"""Pipelines for a server: calls from many request threads go through one fair MicroBatcher.

Each task's served class (its Task.served, pipelines.tasks) has the methods of its pipeline, with the same parameters
(tests/pipelines/test_contracts.py holds them to it), so handlers written for a pipeline work unchanged: the model
run written out here (it batches), every other method the pipeline declares @runs_model served as
`alone(ThePipeline.method)` by ServedPipeline.__init_subclass__. Every
call that runs the model (the model run, a run with heads switched off, explanations, faithfulness, the head table,
scoring: the methods declared @runs_model) goes through the batcher to the model's one runner, pipe.run_batch, in the
model's own process where it has one; only cheap attributes (tokenizing, sizes, names) are read from the pipeline here.
A language model's generations decode together, step by step, in its lane (pipelines.hosting.decoding), in this
process. Who is calling comes from `calling_client`. Given a ResultCache (pipelines.hosting.cache), a call identical
to a recent one (same model, input and options) is answered from it without running the model; a sampled generation
only when it is seeded (the same seed, the same text).
"""

import functools
import inspect
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

from pipelines.attention.heads import HeadKey
from pipelines.hosting.budget import ModelSize, review_batch
from pipelines.hosting.cache import MISSING, ResultCache, model_key
from pipelines.hosting.decoding import DecodingLoop, Row
from pipelines.hosting.microbatch import MicroBatcher
from pipelines.hosting.processes import ModelProcess, remote
from pipelines.language_model import Decoding, LanguageModelPipeline
from pipelines.pipeline import declared_runs_model, in_background
from pipelines.sentiment import SentimentPipeline, SentimentResult
from pipelines.translation import TranslationPipeline

_CLIENT: ContextVar[Hashable] = ContextVar("client", default=None)
# Who is calling when no calling_client block says so: a server sets this (viz.server.hosting: the request's session).
client_source: Callable[[], Hashable] | None = None
SHORT_REVIEW = 128  # tokens: reviews up to this share batches with each other, longer ones with longer ones
# Long reviews run in batches as large as the memory budget allows for this model (budget.review_batch): a batch's
# peak memory grows with its reviews.
SHORT_SENTENCE = 32
# Generations decoding together at most: a step of many rows costs far less than a step each (benchmarks/
# batched_decoding.py, benchmarks/RESULTS.md), and the rows' key/value caches bound how many.
MAX_ROWS = 32
DECODING_CLIENT = "decoding"  # the decoding loop's steps queue in the model's lane as this client's
T = TypeVar("T")


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


class Forwarded(Generic[T]):
    """A served pipeline's cheap attribute, read from its pipeline: `max_len: Forwarded[int] = Forwarded()` in the
    class body reads served.pipe.max_len (AttributeError where the pipeline has no such attribute, as the pipeline
    would). Read-only, like the pipeline's own properties seen from here."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, served, owner: type | None = None) -> T:
        if served is None:  # on the class: the descriptor itself
            return self  # type: ignore[return-value]
        return getattr(served.pipe, self.name)

    def __set__(self, served, value) -> None:
        raise AttributeError(f"{self.name} is the pipeline's: set it there")


def alone(method: Callable[..., T]) -> Callable[..., T]:
    """A served pipeline's method that runs the pipeline's `method` (named where it is used: "go to definition" leads
    to it) as a batch of its own on the model's runner, with `method`'s own parameters and text (functools.wraps)."""

    @functools.wraps(method)
    def run_alone(self: "ServedPipeline", *args, **kwargs) -> T:
        return self._alone(method, *args, **kwargs)

    return run_alone


class ServedPipeline:
    """What every served pipeline shares: the model's one runner on the batcher, and the pipeline's cheap attributes
    (Forwarded: read from the pipeline). A subclass names its pipeline's class (`class ServedX(ServedPipeline,
    pipeline=XPipeline)`): every method that class declares @runs_model and the subclass does not write itself is
    served as alone(method)."""

    def __init_subclass__(cls, pipeline: type | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in dir(pipeline) if pipeline is not None else ():
            if declared_runs_model(pipeline, name) and name not in vars(cls):
                setattr(cls, name, alone(getattr(pipeline, name)))

    def __init__(
        self, pipe, batcher: MicroBatcher, process: ModelProcess | None = None, cache: ResultCache | None = None
    ):
        """process: a ModelProcess holding a copy of pipe, to run the batches in (None: in this process). cache:
        where identical calls are answered from (None: every call runs)."""
        self.pipe, self.batcher, self.process, self.cache = pipe, batcher, process, cache
        # One runner per model, its lane on the batcher: never two batches of one model at once.
        self.run_batch = pipe.run_batch if process is None else remote(process, "run_batch")
        self.model_key = model_key(pipe)

    def _alone(self, method: Callable, /, *args, **kwargs):
        """method(pipe, *args, **kwargs) (a method of the pipeline's class) as a batch of its own on the model's
        runner; in the background queue when it is declared @runs_model(background=True). From the cache when an
        identical call's result is there."""
        run = lambda: self._batched((args, kwargs), method, method, 1, in_background(method), one_by_one=True)  # noqa: E731
        return self._cached(self._key(method, args, kwargs), run)

    def _key(self, method: Callable, args: tuple, kwargs: dict):
        """The cache key of method(pipe, *args, **kwargs); None: not cached (no cache, or not deterministic)."""
        if self.cache is None or not self._deterministic(method, args, kwargs):
            return None
        return self.cache.key(self.model_key, method, args, kwargs)

    def _deterministic(self, method: Callable, args: tuple, kwargs: dict) -> bool:
        """Whether the same call always gives the same result (a sampled generation without a seed does not)."""
        return True

    def _cached(self, key, compute: Callable[[], T]) -> T:
        """The result kept under `key`, else compute()'s, kept, or that of an identical call being computed (key
        None: computed, not kept)."""
        return compute() if key is None else self.cache.computed(key, compute)

    def _batched(self, item, method: Callable, bucket: Hashable, max_batch: int = 0, background=False, **options):
        """One input (tokenized) in a batch with others of its `bucket` on the model's runner, at most max_batch of
        them (0: the batcher's limit): method(pipe, items, **options) runs them together."""
        return self.batcher.submit(
            self.run_batch, item, current_client(), bucket, max_batch, background, pipeline_method=method, **options
        )

    adapter: Forwarded[Any] = Forwarded()
    tokenizer: Forwarded[Any] = Forwarded()
    head_layers: Forwarded[dict[str, int]] = Forwarded()
    n_layers: Forwarded[int] = Forwarded()
    n_heads: Forwarded[int] = Forwarded()
    explanation_methods: Forwarded[tuple[str, ...]] = Forwarded()
    source: Forwarded[Any] = Forwarded()
    revision: Forwarded[Any] = Forwarded()
    metrics: Forwarded[dict] = Forwarded()


class ServedSentiment(ServedPipeline, pipeline=SentimentPipeline):
    """A SentimentPipeline whose runs go through the batcher in batches (SentimentPipeline.analyze_inputs)."""

    pipe: SentimentPipeline

    def __init__(self, pipe: SentimentPipeline, batcher: MicroBatcher, process: ModelProcess | None = None, cache=None):
        super().__init__(pipe, batcher, process, cache)
        self.long_batch = review_batch(ModelSize.of(pipe))  # long reviews at once, at most

    def __call__(
        self, text: str, head_mask: dict[HeadKey, float] | None = None, need_weights: bool = True
    ) -> SentimentResult:
        if head_mask:  # a what-if run with heads switched off (rare): a batch of its own
            return self._alone(SentimentPipeline.__call__, text, head_mask, need_weights)
        key = self._key(SentimentPipeline.__call__, (text,), dict(need_weights=need_weights))
        return self._cached(key, lambda: self._analyzed(text, need_weights))

    def _analyzed(self, text: str, need_weights: bool) -> SentimentResult:
        review = self.pipe.encode(text)  # tokenized once: it sizes the batch here and runs in it
        long = len(review.ids) > SHORT_REVIEW
        limit = self.long_batch if long and need_weights else 0  # the maps are what takes the memory
        return self._batched(review, SentimentPipeline.analyze_inputs, long, limit, need_weights=need_weights)

    def weak_spots(self, text: str):
        return self.pipe.weak_spots(text)  # a text search: no model run

    default_explanation: Forwarded[dict] = Forwarded()
    head_tokens: Forwarded[int] = Forwarded()
    max_len: Forwarded[int] = Forwarded()
    labels: Forwarded[list[str]] = Forwarded()
    domain: Forwarded[Any] = Forwarded()


class ServedTranslation(ServedPipeline, pipeline=TranslationPipeline):
    """A TranslationPipeline whose runs go through the batcher in batches of one beam size
    (TranslationPipeline.explain_inputs)."""

    pipe: TranslationPipeline

    def __call__(self, text: str, beam_size=None, alpha=None, top_k=5, head_mask=None, need_weights=True):
        """TranslationPipeline.__call__ (its parameters), served: from the cache, or batched with other sentences."""
        if head_mask:  # a what-if run with heads switched off (rare): a batch of its own
            return self._alone(TranslationPipeline.__call__, text, beam_size, alpha, top_k, head_mask, need_weights)
        beam_size = self.pipe.beam_size if beam_size is None else beam_size
        alpha = self.pipe.alpha if alpha is None else alpha
        key = self._key(TranslationPipeline.__call__, (text, beam_size, alpha, top_k), dict(need_weights=need_weights))
        return self._cached(key, lambda: self._translated(text, beam_size, alpha, top_k, need_weights))

    def _translated(self, text: str, beam_size: int, alpha: float, top_k: int, need_weights: bool):
        source = self.pipe.source_input(text)  # tokenized once: it sizes the batch here and runs in it
        long = len(source.ids) > SHORT_SENTENCE
        method = TranslationPipeline.explain_inputs
        options = dict(beam_size=beam_size, alpha=alpha, top_k=top_k, need_weights=need_weights)
        return self._batched(source, method, long, **options)

    beam_size: Forwarded[int] = Forwarded()
    alpha: Forwarded[float] = Forwarded()
    max_src: Forwarded[int] = Forwarded()
    domain: Forwarded[Any] = Forwarded()


class ServedLM(ServedPipeline, pipeline=LanguageModelPipeline):
    """A LanguageModelPipeline whose generations (clicks, /generate, __call__) decode together, step by step, in the
    model's lane (pipelines.hosting.decoding: continuous batching); its other runs go through the batcher alone."""

    pipe: LanguageModelPipeline

    def __init__(self, pipe: LanguageModelPipeline, batcher: MicroBatcher, process=None, cache=None):
        super().__init__(pipe, batcher, process, cache)
        self.decoding = DecodingLoop(pipe.adapter, self._in_lane, MAX_ROWS, batcher.max_pending)

    # the pipeline's own: its Decoding from the options, through this class's generate (decoded with the others)
    __call__ = LanguageModelPipeline.__call__

    def generate(self, prompt: str, decoding: Decoding | None = None, head_mask=None, need_weights: bool = True):
        """LanguageModelPipeline.generate: stream's complete result (or an identical generation's, as _cached)."""
        key = self._generation_key(prompt, decoding, head_mask, need_weights)
        return self._cached(key, lambda: self._last(self._decoded(prompt, decoding, head_mask, need_weights)))

    def _generation_key(self, prompt: str, decoding, head_mask, need_weights: bool):
        """The cache key of a generation (generate's and stream's one), None where it is not kept."""
        return self._key(LanguageModelPipeline.generate, (prompt, decoding, head_mask, need_weights), {})

    @staticmethod
    def _last(stream):
        *_, result = stream
        return result

    default_explanation: Forwarded[dict] = Forwarded()

    def stream(self, prompt: str, decoding: Decoding | None = None, head_mask=None, need_weights: bool = True):
        """pipe.stream's results, the tokens decoded in one batch with the other generations of the moment (each
        as it decodes alone), the maps' pass through the batcher. Closing the generator (a Stop button, a closed
        page) takes the row out at the next step. A continuation in the cache (greedy or seeded, as `generate` keys
        it) comes as its complete result alone, with no partial ones."""
        key = self._generation_key(prompt, decoding, head_mask, need_weights)
        hit = MISSING if key is None else self.cache.get(key)
        if hit is not MISSING:
            return self._replayed(hit)
        return self._kept(key, self._decoded(prompt, decoding, head_mask, need_weights))

    @staticmethod
    def _replayed(result):
        """A cached continuation as a stream: its complete result."""
        yield result

    def _kept(self, key, stream):
        """stream's results; its complete one kept under `key` (None: not kept)."""
        for result in stream:
            if key is not None and result.complete:
                self.cache.put(key, result)
            yield result

    def _deterministic(self, method: Callable, args: tuple, kwargs: dict) -> bool:
        """False for a sampled generation without a seed: __call__'s temperature above 0 and no seed, or a Decoding
        argument (generate, stream, head_table) that is sampled and has no seed."""
        try:
            given = inspect.signature(method).bind(None, *args, **kwargs).arguments
        except TypeError:
            return False
        decoding = given.get("decoding")
        if isinstance(decoding, Decoding):
            given = dict(temperature=decoding.temperature, seed=decoding.seed)
        temperature = given.get("temperature", 0.0)
        return given.get("seed") is not None or not (temperature and temperature > 0)

    def _decoded(self, prompt: str, decoding: Decoding | None, head_mask, need_weights: bool):
        start = self.pipe.begin(prompt, decoding, head_mask)  # PromptError before anything is queued
        row = self.decoding.start(Row(start.ids, *start.options, start.head_mask, current_client()))
        try:
            result = start.result
            for step in row.steps():
                result = self.pipe.extended(result, step)
                yield result
        finally:
            row.stopped.set()  # a closed stream (Stop, a closed page) leaves at the next step
        # the maps' pass runs the model, in its lane; without it (an API call) nothing waits for a turn there
        yield self.finish(result, start.masks, True) if need_weights else self.pipe.finish(result, None, False)

    def _in_lane(self, step: Callable[[], None]) -> None:
        """step() as one batch in the model's lane, queued as the decoding loop's (a client of its own)."""
        self.batcher.submit(_each, step, client=DECODING_CLIENT, max_batch=1, lane=self.run_batch)


def _each(calls: list) -> list:
    """A runner (run_batch's protocol) of plain calls: each one's result."""
    return [call() for call in calls]


def serve(
    task, pipe, batcher: MicroBatcher, own_process: tuple[str, ...] = (), cache: ResultCache | None = None
) -> ServedPipeline | None:
    """The served class of a task (a pipelines.tasks.Task: its .served) over its pipeline (None stays None), on the
    shared batcher: each model its own lane, one batch at a time. own_process: the names of the tasks whose batches
    run in a ModelProcess of their own. cache: the results identical calls are answered from (None: none)."""
    if pipe is None:
        return None
    # the child starts while the server does; where it cannot, the model runs in this process
    process = ModelProcess(pipe, name=task.name).start_soon() if task.name in own_process else None
    return task.served(pipe, batcher, process, cache)
