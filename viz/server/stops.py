"""Stop buttons: which clients pressed Stop during a job of theirs that is running (a generation, exact patching,
heads switched off). A job asks a stop() of its own, True once its client pressed Stop; the press is forgotten when
the job starts and when it ends, so it never stops the next one."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import gradio as gr

from . import hosting


class Stops:
    """One kind of job's Stop button, by client (hosting.client_key)."""

    def __init__(self):
        self._pressed: set = set()

    def press(self, request: gr.Request = None) -> None:
        """The Stop button's handler (gradio passes the request by this annotation)."""
        self._pressed.add(hosting.client_key(request))

    @contextmanager
    def watch(self, request: gr.Request = None) -> Iterator[Callable[[], bool]]:
        """stop() for the job `request` runs while the block runs."""
        key = hosting.client_key(request)
        self._pressed.discard(key)
        try:
            yield lambda: key in self._pressed
        finally:
            self._pressed.discard(key)
