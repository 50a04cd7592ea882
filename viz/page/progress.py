"""A slow view's progress in the page: gradio's progress bar with what is done and an estimate of what is left."""

import time
from collections.abc import Callable


def reporter(progress, what: str, unit: str) -> Callable[[int, int], None]:
    """A progress(done, total) callback for the pipelines that moves a gr.Progress bar, described as
    '<what>: 120 of 400 words, about 3 s left' (the estimate from the pace so far)."""
    start = time.perf_counter()

    def report(done: int, total: int) -> None:
        elapsed = time.perf_counter() - start
        left = elapsed / done * (total - done) if done else None
        estimate = f", about {left:.0f} s left" if left is not None and done < total else ""
        progress((done, total), desc=f"{what}: {done:,} of {total:,} {unit}{estimate}", unit=unit)

    return report
