"""Module hooks that act for one thread only.

A hook is registered on a module every thread shares: the server's model runs passes of a head table on several
threads at once (pipelines.attention.passes), and a waiting call of the same model runs at one of their pause points
(pipelines.hosting.microbatch). What a `transformers` model's adapter records under the core's hook names, or the
heads it switches off for one run (pipelines.models.hf_adapter), must not reach the runs of the other threads:
measured, a recording raised "ran twice" when a head table's pass ran beside it, and heads switched off for one pass
would have been off in the others too. Our own models need none of this: their active hooks are a context variable
(transformer/hooks.py), and a call served at a pause point runs in a fresh context. These hooks are set around one
forward only, which no pause point interrupts.
"""

import functools
import threading
from collections.abc import Callable


def this_thread_only(hook: Callable) -> Callable:
    """`hook` for the calls made on the thread that wraps it; other threads' calls pass unchanged (None: a forward
    hook leaves the output, a pre-hook the input, as they were)."""
    owner = threading.get_ident()

    @functools.wraps(hook)
    def guarded(module, *args):
        return hook(module, *args) if threading.get_ident() == owner else None

    return guarded
