"""A micro-batcher: model calls from many threads run in batches, one batch at a time, fairly across clients.

The app's handlers run in Gradio's worker threads and call a pipeline as if alone; each call waits here while
a single worker thread runs the pending calls that can share a batch. So one model run happens at a time (the
2 cores are not split between runs), concurrent requests share the cost of a run, and the next batch always
starts with the client served least recently: one client's flood of long inputs cannot starve a short one.
"""

import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field

Runner = Callable[..., list]  # run(items, **options) -> one result (or Exception) per item, in order


class TooManyRequests(RuntimeError):
    """This client already has as many calls waiting as it may."""


@dataclass
class _Call:
    group: tuple  # (runner, options as sorted (name, value) pairs, size bucket): calls that may share a batch
    item: object
    future: Future = field(default_factory=Future)


class MicroBatcher:
    """Runs calls of `runner(items, **options)` in batches of up to max_batch_size on one worker thread."""

    def __init__(self, max_batch_size: int = 8, max_pending_per_client: int = 32):
        self.max_batch_size, self.max_pending = max_batch_size, max_pending_per_client
        self._clients: OrderedDict[Hashable, deque[_Call]] = OrderedDict()  # first = served least recently
        self._cond = threading.Condition()
        self._worker: threading.Thread | None = None
        self.batches_run = 0  # for tests and benchmarks
        self.largest_batch = 0

    def submit(self, runner: Runner, item, client: Hashable = None, bucket: Hashable = 0, **options):
        """Run runner([item, ...], **options) in some batch and return this item's result (or raise its error)."""
        call = _Call((runner, tuple(sorted(options.items())), bucket), item)
        with self._cond:
            queue = self._clients.setdefault(client, deque())
            if len(queue) >= self.max_pending:
                raise TooManyRequests(f"{len(queue)} calls of this client are already waiting")
            queue.append(call)
            self._start_worker()
            self._cond.notify()
        return call.future.result()

    def _start_worker(self) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._work, name="micro-batcher", daemon=True)
            self._worker.start()

    def _next_batch(self) -> list[_Call]:
        """Calls for the next batch: the group of the oldest call of the client served least recently, then
        round robin over clients (one call each per round) within that group. Caller holds the lock."""
        first = next(iter(self._clients.values()))
        group = first[0].group
        batch: list[_Call] = []
        served = []
        while len(batch) < self.max_batch_size:
            took = False
            for client, queue in self._clients.items():
                call = next((c for c in queue if c.group == group), None)
                if call is not None and len(batch) < self.max_batch_size:
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
                while not self._clients:
                    if not self._cond.wait(timeout=60):
                        if not self._clients:  # idle for a minute: the thread ends, submit restarts it
                            self._worker = None
                            return
                batch = self._next_batch()
            self._run(batch)

    def _run(self, batch: list[_Call]) -> None:
        runner, options, _ = batch[0].group
        self.batches_run += 1
        self.largest_batch = max(self.largest_batch, len(batch))
        try:
            results = runner([c.item for c in batch], **dict(options))
            assert len(results) == len(batch), "one result per item"
        except Exception as e:  # the whole batch failed: every caller gets the error
            results = [e] * len(batch)
        for call, result in zip(batch, results):
            if isinstance(result, Exception):
                call.future.set_exception(result)
            else:
                call.future.set_result(result)
