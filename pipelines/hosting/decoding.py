"""One language model's generations decoded together: continuous batching in the model's lane of the batcher.

Every stream (a click on Generate, a /generate call) becomes a Row of one DecodingLoop. While any row is left, the
loop's thread submits one step after another to the model's lane (pipelines.hosting.microbatch), each a batch of its
own, so the lane's other calls (an explanation, a lens, a head table's pause points) take turns with the steps. A
step feeds every decoding row its last token in one forward (transformer.batch_decoding.DecodingBatch), then lets
the waiting rows join (their prompts run together in one forward), at most `max_rows` rows at once, the clients
with the fewest rows decoding first. Each row chooses its tokens with its own options and generator (greedy, or
sampled with its seed), so its tokens are those it gets alone; it leaves at its end-of-text token, its length, or its
Stop (a closed stream), at the next step. docs/reference.md "How a request is scheduled".
"""

import queue
import threading
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

import torch

from pipelines.hosting.microbatch import TooManyRequests
from transformer.generation import LMStep, next_token

_DONE = object()  # a row's last message: it ended


@dataclass(eq=False)  # a row is itself (hashable by identity): the key of its place in the batch
class Row:
    """One generation in the loop: what it reads, how it decodes, and the queue its steps come through."""

    ids: list[int]  # the prompt, as the model reads it
    max_new_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    head_mask: torch.Tensor | None = None  # (L, H) multipliers, None: every head on
    client: Hashable = None
    made: int = 0  # tokens chosen so far
    token: int | None = None  # the last one, read at the next step
    stopped: threading.Event = field(default_factory=threading.Event)
    out: queue.Queue = field(default_factory=queue.Queue)  # LMStep after LMStep, then _DONE (or an Exception)

    def __post_init__(self):
        self.generator = torch.Generator().manual_seed(self.seed) if self.seed is not None else None

    def steps(self) -> Iterator[LMStep]:
        """Its steps as they come (as transformer.generation.lm_steps yields them alone); closing the iterator stops
        the row at the loop's next step."""
        try:
            while (item := self.out.get()) is not _DONE:
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            self.stopped.set()


class DecodingLoop:
    """The rows of one model (its adapter's decoding_batch) and the thread that steps them. submit(fn) runs fn() as
    one batch in the model's lane and returns its result."""

    def __init__(self, adapter, submit: Callable[[Callable[[], None]], None], max_rows: int = 32, per_client=32):
        self.adapter, self.submit, self.max_rows, self.per_client = adapter, submit, max_rows, per_client
        self.batch = adapter.decoding_batch()
        self.decoding: list[Row] = []  # in the batch
        self.waiting: list[Row] = []  # to join at the next step, in order of arrival
        self._lock = threading.Lock()
        self._running = False  # the stepping thread is alive
        self.steps_run = 0  # for tests and benchmarks
        self.widest = 0  # the most rows one step decoded

    def start(self, row: Row) -> Row:
        """Queue `row` to join at the next step (TooManyRequests where its client already has per_client rows)."""
        with self._lock:
            mine = sum(r.client == row.client for r in self.decoding + self.waiting)
            if row.client is not None and mine >= self.per_client:
                raise TooManyRequests(f"{mine} generations of this client are already running")
            self.waiting.append(row)
            if not self._running:
                self._running = True
                threading.Thread(target=self._loop, name="decoding-loop", daemon=True).start()
        return row

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self.decoding and not self.waiting:
                    self._running = False
                    return
            try:
                self.submit(self._step)
            except Exception as e:  # the step failed as a whole: its rows get the error, the batch starts afresh
                self._fail(e)

    def _fail(self, error: Exception) -> None:
        with self._lock:
            failed, self.decoding = self.decoding, []
            self.batch = self.adapter.decoding_batch()
        for row in failed:
            row.out.put(error)

    def _step(self) -> None:
        """One step, in the model's lane: the stopped rows leave, the decoding ones read their last token, the
        waiting ones join."""
        for row in [r for r in self.decoding if r.stopped.is_set()]:
            self._leave(row)
        if self.decoding:
            logits = self.batch.step({row: row.token for row in self.decoding})
            for row in list(self.decoding):
                self._emit(row, logits[row])
        joining = self._joining()
        if joining:
            logits = self.batch.join({r: r.ids for r in joining}, {r: r.head_mask for r in joining})
            with self._lock:
                self.decoding += joining
            for row in joining:
                self._emit(row, logits[row])
        self.steps_run += 1
        self.widest = max(self.widest, len(self.batch))

    def _joining(self) -> list[Row]:
        """The waiting rows that join now (the stopped ones dropped): up to max_rows in all, the clients with the
        fewest rows decoding first, then by arrival."""
        with self._lock:
            self.waiting = [r for r in self.waiting if not r.stopped.is_set()]
            room = self.max_rows - len(self.decoding)
            counts: dict[Hashable, int] = {}
            for r in self.decoding:
                counts[r.client] = counts.get(r.client, 0) + 1
            chosen = []
            for _ in range(max(room, 0)):
                if not (left := [r for r in self.waiting if r not in chosen]):
                    break
                row = min(left, key=lambda r: counts.get(r.client, 0))  # the first of the least served client
                counts[row.client] = counts.get(row.client, 0) + 1
                chosen.append(row)
            self.waiting = [r for r in self.waiting if r not in chosen]
        return chosen

    def _emit(self, row: Row, logits: torch.Tensor) -> None:
        """Row's next token from its logits (V,), handed over; the row leaves after its last."""
        logits = logits.to("cpu", copy=True)
        row.token = next_token(logits, row.temperature, row.top_p, row.generator)
        row.made += 1
        row.out.put(LMStep(row.token, logits))
        if row.token == self.adapter.eos_id or row.made >= row.max_new_tokens:
            row.out.put(_DONE)
            self._leave(row)

    def _leave(self, row: Row) -> None:
        self.batch.leave(row)
        with self._lock:
            self.decoding.remove(row)
