"""A micro-batcher: model calls from many threads run in batches, fairly across clients.

The app's handlers run in Gradio's worker threads and call a pipeline as if alone; each call waits here while
a worker thread runs the pending calls that can share a batch. Calls queue in lanes, one per model (a call's
`lane`: its runner unless it names one, as a generation's stream names its model's): each lane has its own queue
and runs one batch at a time; different lanes run at the same time, each on a worker thread of its own (up to
`parallel` at once), so a review never waits behind a generation or a batch of translations, only shares the
cores with them. Concurrent requests share the cost of a run, and a lane's next batch always starts with the
client that lane served least recently: one client's flood of long inputs cannot starve a short one.
Long analyses no one waits on (background calls) go last, and while one runs, the waiting calls of its model run
at its pause points (between its passes), in its thread: a click waits for one pass of it, not for all of it. Each
call served at a pause point runs in a fresh context (contextvars), as on a worker thread of its own: nothing the
paused analysis has set in its context (the model's active hooks, transformer/hooks.py; its pause state) reaches it.
"""

import contextvars
import functools
import itertools
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
    lane: Hashable = None  # the model whose queue it waits in: one batch of a lane runs at a time
    seq: int = 0  # order of arrival: a free worker takes the lane whose first call came earliest
    future: Future = field(default_factory=Future)


class MicroBatcher:
    """Runs calls of `runner(items, **options)` in batches of up to max_batch_size, in lanes (one per model): on at
    most `parallel` worker threads, never two batches of the same lane at once."""

    def __init__(self, max_batch_size: int = 8, max_pending_per_client: int = 32, parallel: int = 1):
        self.max_batch_size, self.max_pending, self.parallel = max_batch_size, max_pending_per_client, parallel
        # lane -> its clients' waiting calls, the client that lane served least recently first
        self._lanes: dict[Hashable, OrderedDict[Hashable, deque[_Call]]] = {}
        self._cond = threading.Condition()
        self._arrivals = itertools.count()
        self._running: set = set()  # lanes with a batch in progress
        self._pausing: set = set()  # lanes whose background batch is serving waiting calls at a pause point
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
        lane: Hashable = None,
        **options,
    ):
        """Run runner([item, ...], **options) in some batch and return this item's result (or raise its error).
        max_batch: a smaller cap than max_batch_size for this bucket's batches (long inputs: less memory).
        background: a long analysis that runs after a response (the head table), served after every other call
        waiting in its lane, of any client, so that a click does not wait behind it (a call already running is not
        stopped). lane: the queue it waits in (None: the runner's own), one batch of a lane at a time."""
        limit = min(max_batch or self.max_batch_size, self.max_batch_size)
        lane = runner if lane is None else lane
        group = (runner, tuple(sorted(options.items())), bucket)
        call = _Call(group, item, limit, background, lane, next(self._arrivals))
        with self._cond:
            waiting = sum(len(clients.get(client, ())) for clients in self._lanes.values())
            if waiting >= self.max_pending:
                raise TooManyRequests(f"{waiting} calls of this client are already waiting")
            self._lanes.setdefault(lane, OrderedDict()).setdefault(client, deque()).append(call)
            self._start_worker()
            self._cond.notify_all()
        return call.future.result()

    def waiting(self, lane: Hashable) -> int:
        """How many calls someone waits on (not background) wait in `lane` (a runner, or the lane a call named)."""
        with self._cond:
            return sum(not c.background for queue in self._lanes.get(lane, {}).values() for c in queue)

    def _start_worker(self) -> None:
        """A worker for this call if every worker is busy and fewer than `parallel` run. Caller holds the lock."""
        if self._workers < min(self.parallel, len(self._running) + 1):
            self._workers += 1
            threading.Thread(target=self._work, name="micro-batcher", daemon=True).start()

    def _oldest(self, lane: Hashable, wanted: Callable[[_Call], bool]) -> _Call | None:
        """The oldest wanted call in `lane` of the client it served least recently that has one. Caller holds the
        lock."""
        return next((c for queue in self._lanes.get(lane, {}).values() for c in queue if wanted(c)), None)

    def _first_ready(self) -> _Call | None:
        """The next call of a lane with no batch running: in each such lane, the oldest call of the client it served
        least recently; of those, the one that came first; background calls only when no other call is ready.
        Caller holds the lock."""
        free = [lane for lane in self._lanes if lane not in self._running]
        for background in (False, True):
            heads = (self._oldest(lane, lambda c, b=background: c.background == b) for lane in free)
            ready = [c for c in heads if c is not None]
            if ready:
                return min(ready, key=lambda c: c.seq)
        return None

    def _next_batch(self, first: _Call) -> list[_Call]:
        """Calls for the next batch of `first`'s lane: its group (and background or not, as `first`), round robin
        over the lane's clients (one call each per round) in the order it last served them. Caller holds the
        lock."""
        group, limit, clients = first.group, first.limit, self._lanes[first.lane]
        batch: list[_Call] = []
        served = []
        while len(batch) < limit:
            took = False
            for client, queue in clients.items():
                call = next((c for c in queue if c.group == group and c.background == first.background), None)
                if call is not None and len(batch) < limit:
                    queue.remove(call)
                    batch.append(call)
                    served.append(client)
                    took = True
            if not took:
                break
        for client in dict.fromkeys(served):  # served clients go to the back of the lane's line
            clients.move_to_end(client)
            if not clients[client]:
                del clients[client]
        if not clients:  # an empty lane goes (a stream's own runner makes a lane of its own)
            del self._lanes[first.lane]
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
                self._running.add(first.lane)
            try:
                self._run(batch)
            finally:
                with self._cond:
                    self._running.discard(first.lane)
                    self._cond.notify_all()

    def _pause(self, lane: Hashable) -> None:
        """At a pause point of `lane`'s background batch (its thread holds the lane): run the calls waiting in that
        lane that are not background, in batches as the workers would, until none is left. One thread at a time
        (the batch's passes may run on several), so they never run two batches of their own at once. Each batch runs
        in a fresh context: the paused batch's context variables (its hooks, its pause state) are not the served
        calls'."""
        with self._cond:
            if lane in self._pausing:
                return
            self._pausing.add(lane)
        try:
            while True:
                with self._cond:
                    first = self._oldest(lane, lambda c: not c.background)
                    if first is None:
                        return
                    batch = self._next_batch(first)
                with torch.enable_grad():  # as on a worker thread: the pause point may sit inside a no_grad block
                    contextvars.Context().run(self._run, batch)
        finally:
            with self._cond:
                self._pausing.discard(lane)

    def _run(self, batch: list[_Call]) -> None:
        runner, options, _ = batch[0].group
        self.batches_run += 1
        self.largest_batch = max(self.largest_batch, len(batch))
        # a background batch may serve waiting calls at its pause points; any other batch runs straight through
        pause = _PAUSE.set(functools.partial(self._pause, batch[0].lane) if batch[0].background else None)
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
