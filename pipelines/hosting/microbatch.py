"""A micro-batcher: model calls from many threads run in batches, fairly across clients.

The app's handlers run in Gradio's worker threads and call a pipeline as if alone; each call waits here while
a worker thread runs the pending calls that can share a batch. One model (runner) runs one batch at a time;
different models may run at the same time, on their own worker threads (`parallel`), so a review never waits
behind a batch of translations. Concurrent requests share the cost of a run, and the next batch always
starts with the client served least recently: one client's flood of long inputs cannot starve a short one.
Long analyses no one waits on (background calls) go last, and while one runs, the waiting calls of its model run
at its pause points (between its passes), in its thread: a click waits for one pass of it, not for all of it.
"""

import functools
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass, field

import torch

Runner = Callable[..., list]  # run(items, **options) -> one result (or Exception) per item, in order
# Set while a background batch runs in this context: serves the waiting calls of its runner (MicroBatcher._pause)
_PAUSE: ContextVar[Callable[[], None] | None] = ContextVar("pause", default=None)


def pause_point() -> None:
    """Called by a long computation between its model passes: where it runs as a background call of a batcher
    (in the server's process), the calls waiting for the same model run here first; elsewhere nothing happens."""
    pause = _PAUSE.get()
    if pause is not None:
        pause()


class TooManyRequests(RuntimeError):
    """This client already has as many calls waiting as it may."""


@dataclass
class _Call:
    group: tuple  # (runner, options as sorted (name, value) pairs, size bucket): calls that may share a batch
    item: object
    limit: int  # the most calls a batch with this one may hold
    background: bool = False  # work no one waits on to see a response: every waiting call of others goes first
    future: Future = field(default_factory=Future)


class MicroBatcher:
    """Runs calls of `runner(items, **options)` in batches of up to max_batch_size, on at most `parallel`
    worker threads, never two batches of the same runner at once."""

    def __init__(self, max_batch_size: int = 8, max_pending_per_client: int = 32, parallel: int = 1):
        self.max_batch_size, self.max_pending, self.parallel = max_batch_size, max_pending_per_client, parallel
        self._clients: OrderedDict[Hashable, deque[_Call]] = OrderedDict()  # first = served least recently
        self._cond = threading.Condition()
        self._running: set = set()  # runners with a batch in progress
        self._pausing: set = set()  # runners whose background batch is serving waiting calls at a pause point
        self._workers = 0  # worker threads alive (counted under the lock, so none is missed as it exits)
        self.batches_run = 0  # for tests and benchmarks
        self.largest_batch = 0

    def submit(
        self,
        runner: Runner,
        item,
        client: Hashable = None,
        bucket: Hashable = 0,
        max_batch: int = 0,
        background: bool = False,
        **options,
    ):
        """Run runner([item, ...], **options) in some batch and return this item's result (or raise its error).
        max_batch: a smaller cap than max_batch_size for this bucket's batches (long inputs: less memory).
        background: a long analysis that runs after a response (the head table), served after every other call
        waiting, of any client, so that a click does not wait behind it (a call already running is not stopped)."""
        limit = min(max_batch or self.max_batch_size, self.max_batch_size)
        call = _Call((runner, tuple(sorted(options.items())), bucket), item, limit, background)
        with self._cond:
            queue = self._clients.setdefault(client, deque())
            if len(queue) >= self.max_pending:
                raise TooManyRequests(f"{len(queue)} calls of this client are already waiting")
            queue.append(call)
            self._start_worker()
            self._cond.notify_all()
        return call.future.result()

    def _start_worker(self) -> None:
        """A worker for this call if every worker is busy and fewer than `parallel` run. Caller holds the lock."""
        if self._workers < min(self.parallel, len(self._running) + 1):
            self._workers += 1
            threading.Thread(target=self._work, name="micro-batcher", daemon=True).start()

    def _oldest(self, wanted: Callable[[_Call], bool]) -> _Call | None:
        """The oldest wanted call of the client served least recently that has one. Caller holds the lock."""
        return next((c for queue in self._clients.values() for c in queue if wanted(c)), None)

    def _first_ready(self) -> _Call | None:
        """The oldest call, of the client served least recently, whose runner is free; background calls only when
        no other call is ready. Caller holds the lock."""
        for background in (False, True):
            call = self._oldest(lambda c, b=background: c.background == b and c.group[0] not in self._running)
            if call is not None:
                return call
        return None

    def _next_batch(self, first: _Call) -> list[_Call]:
        """Calls for the next batch: `first`'s group (and background or not, as `first`), round robin over
        clients (one call each per round) in the order they were last served. Caller holds the lock."""
        group, limit = first.group, first.limit
        batch: list[_Call] = []
        served = []
        while len(batch) < limit:
            took = False
            for client, queue in self._clients.items():
                call = next((c for c in queue if c.group == group and c.background == first.background), None)
                if call is not None and len(batch) < limit:
                    queue.remove(call)
                    batch.append(call)
                    served.append(client)
                    took = True
            if not took:
                break
        for client in dict.fromkeys(served):  # served clients go to the back of the line
            self._clients.move_to_end(client)
            if not self._clients[client]:
                del self._clients[client]
        return batch

    def _work(self) -> None:
        while True:
            with self._cond:
                first = self._first_ready()
                while first is None:
                    if not self._cond.wait(timeout=60) and self._first_ready() is None:
                        self._workers -= 1  # idle for a minute: the thread ends, submit starts another
                        return
                    first = self._first_ready()
                batch = self._next_batch(first)
                self._running.add(first.group[0])
            try:
                self._run(batch)
            finally:
                with self._cond:
                    self._running.discard(first.group[0])
                    self._cond.notify_all()

    def _pause(self, runner: Runner) -> None:
        """At a pause point of `runner`'s background batch (its thread holds the runner): run the calls waiting
        for that runner that are not background, in batches as the workers would, until none is left. One thread
        at a time (the batch's passes may run on several), so they never run two batches of their own at once."""
        with self._cond:
            if runner in self._pausing:
                return
            self._pausing.add(runner)
        try:
            while True:
                with self._cond:
                    first = self._oldest(lambda c: c.group[0] == runner and not c.background)
                    if first is None:
                        return
                    batch = self._next_batch(first)
                with torch.enable_grad():  # as on a worker thread: the pause point may sit inside a no_grad block
                    self._run(batch)
        finally:
            with self._cond:
                self._pausing.discard(runner)

    def _run(self, batch: list[_Call]) -> None:
        runner, options, _ = batch[0].group
        self.batches_run += 1
        self.largest_batch = max(self.largest_batch, len(batch))
        # a background batch may serve waiting calls at its pause points; any other batch runs straight through
        pause = _PAUSE.set(functools.partial(self._pause, runner) if batch[0].background else None)
        try:
            results = runner([c.item for c in batch], **dict(options))
            assert len(results) == len(batch), "one result per item"
        except Exception as e:  # the whole batch failed: every caller gets the error
            results = [e] * len(batch)
        finally:
            _PAUSE.reset(pause)
        for call, result in zip(batch, results):
            if isinstance(result, Exception):
                call.future.set_exception(result)
            else:
                call.future.set_result(result)
