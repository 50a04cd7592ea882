"""Independent model passes run at once, on the cores torch's own threads leave idle.

The app gives each model one torch thread (viz.server.hosting.TORCH_THREADS), so one of its calls uses one core. A
measurement made of many independent passes (the head table: one pass for each group of heads switched off) runs
them on Python threads instead, a pass each: torch gives the GIL up while it computes, so on 2 cores the passes take
about half the time (benchmarks/view_times.py). Grad mode is set per thread, so each pass runs under no_grad here.
"""

import contextvars
import functools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

from pipelines.hosting.microbatch import pause_point

T, R = TypeVar("T"), TypeVar("R")
MAX_AT_ONCE = 4  # passes at once at most, however many cores: each holds its own activations (pipelines.hosting.budget)


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def at_once(device="cpu", limit: int | None = None) -> int:
    """How many passes of a model on `device` to run at once: on the CPU, the cores over torch's threads a pass (1
    where torch already uses them all), at most `limit` (None: MAX_AT_ONCE); elsewhere 1 (an accelerator runs the
    passes one after another whatever threads send them)."""
    if torch.device(device).type != "cpu":
        return 1
    limit = MAX_AT_ONCE if limit is None else limit
    return max(1, min(limit, cores() // max(1, torch.get_num_threads())))


def run_passes(
    fn: Callable[[T], R], items: Sequence[T], passes: int = 1, progress: Callable[[int, int], None] | None = None
) -> list[R]:
    """[fn(item) for item in items] in that order, `passes` at once (each under torch.no_grad), with a pause point
    before each (pipelines.hosting.microbatch.pause_point); progress(done, len(items)) in this thread as the results
    come in, in order."""

    def one(item: T) -> R:
        pause_point()  # a background call lets the waiting calls of its model run first (pipelines.hosting.microbatch)
        with torch.no_grad():
            return fn(item)

    def collect(results) -> list[R]:
        out = []
        for result in results:
            out.append(result())
            if progress is not None:
                progress(len(out), len(items))
        return out

    if passes <= 1 or len(items) <= 1:
        return collect(functools.partial(one, item) for item in items)
    with ThreadPoolExecutor(min(passes, len(items)), thread_name_prefix="model-pass") as pool:
        # each pass in a copy of this thread's context: the batcher's pause point reaches the pool's threads
        futures = [pool.submit(contextvars.copy_context().run, one, item) for item in items]
        return collect(f.result for f in futures)
