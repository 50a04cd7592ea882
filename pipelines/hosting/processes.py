"""A pipeline in a process of its own, for a server: its own interpreter, so its own GIL.

Decoding runs thousands of small torch operations per batch, each of which gives Python's GIL up and takes it
back. In one process with a web server, that takes turns with everything else the server does in Python, and
under load a translation batch spent more time waiting for the GIL than computing. In a child process it waits
for nothing. The child holds a copy of the pipeline; `ModelProcess.call(method, *args)` runs `pipe.method` there
and returns what it returned (or raises what it raised). One call at a time: the caller (the MicroBatcher)
already runs one batch of a model at a time.

The child is `python -m pipelines.hosting.worker`, not multiprocessing's spawn (which would import the app's `__main__`,
gradio and all, into it); messages are pickles over a socket pair, tensors as numpy arrays (torch's own pickling of a
4 MB attention map is five times slower). A child that dies is started again at the next call.

A function made inside another (a closure, a lambda: a progress callback) cannot be pickled: it stays with the
parent, and the child gets a stand-in that sends each of its calls back, ("callback", n, args, kwargs), for the
parent to run while it waits for the answer. Such a call's return value is not sent back (progress has none).
"""

import functools
import io
import logging
import multiprocessing
import os
import pickle
import subprocess
import sys
import threading
import types
from multiprocessing.connection import Connection
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]  # where `pipelines` can be imported from
log = logging.getLogger(__name__)


class _Pickler(pickle.Pickler):
    """Plain tensors travel as numpy arrays (a memory copy), everything else as pickle does it."""

    def reducer_override(self, obj):
        if type(obj) is torch.Tensor and not obj.requires_grad and obj.device.type == "cpu":
            return torch.from_numpy, (obj.contiguous().numpy(),)
        return NotImplemented


def dumps(obj) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


CALLBACK = "callback"  # a message from the child: run the parent's callback n with these arguments


def _local_function(obj) -> bool:
    """A function pickle cannot send by name: one defined inside another, or a lambda."""
    qualname = getattr(obj, "__qualname__", "") if isinstance(obj, types.FunctionType) else ""
    return "<locals>" in qualname or "<lambda>" in qualname


class _CallPickler(_Pickler):
    """A call's arguments: local functions are kept in `callbacks` and sent as their number."""

    def __init__(self, buffer, callbacks: list):
        super().__init__(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self.callbacks = callbacks

    def persistent_id(self, obj):
        if _local_function(obj):
            self.callbacks.append(obj)
            return (CALLBACK, len(self.callbacks) - 1)
        return None


def dumps_call(obj) -> tuple[bytes, list]:
    """(the pickled call, the local functions in it, which stay here), for loads_call in the child."""
    buffer, callbacks = io.BytesIO(), []
    _CallPickler(buffer, callbacks).dump(obj)
    return buffer.getvalue(), callbacks


def loads_call(data: bytes, link: Connection):
    """A call pickled by dumps_call, its callbacks replaced by stand-ins that send each call back over `link`."""

    class _CallUnpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            kind, n = pid
            if kind != CALLBACK:
                raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
            return lambda *args, **kwargs: link.send_bytes(dumps((CALLBACK, n, args, kwargs)))

    return _CallUnpickler(io.BytesIO(data)).load()


def portable_error(error: BaseException) -> BaseException:
    """The error itself when it survives pickling, else a RuntimeError that names it."""
    try:
        pickle.loads(dumps(error))
        return error
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")


class ModelProcessDied(RuntimeError):
    """The child ended during a call (killed, out of memory); the next call starts a new one."""


class ModelProcess:
    """Runs methods of a copy of `pipe` in a child process with `threads` torch threads."""

    def __init__(self, pipe, threads: int = 1, name: str = "model"):
        self.pipe, self.threads, self.name = pipe, threads, name
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self.starts = 0  # how many children were started (1 unless one died)
        self.here = False  # the calls run in this process: the child could not start (start_soon)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def start(self) -> "ModelProcess":
        """Start the child now (else the first call does), so that no request waits for it to load."""
        with self._lock:
            if self.pid is None:
                self._restart()
        return self

    def start_soon(self) -> "ModelProcess":
        """Start the child in a thread of its own, so that the caller (a server starting) does not wait the seconds
        the child takes to import torch and receive the pipeline; a call made meanwhile waits for it. Where the child
        cannot start, the calls run in this process, on `pipe` (the server still works)."""
        started = threading.Event()

        def start() -> None:
            with self._lock:
                started.set()
                try:
                    if self.pid is None:
                        self._restart()
                except Exception:
                    log.exception("could not start the %s model's process; it runs in this one", self.name)
                    self.here = True

        threading.Thread(target=start, name=f"{self.name}-process-start", daemon=True).start()
        started.wait()  # the lock is the thread's: every call waits for the start
        return self

    def _restart(self) -> None:
        """A new child in place of the old one, if any (caller holds the lock)."""
        self._stop()
        try:
            self._start()
        except BaseException:
            self._stop()
            raise

    def _start(self) -> None:
        """Start the child and hand it the pipeline (caller holds the lock)."""
        self._conn, child_end = multiprocessing.Pipe()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        fd = child_end.fileno()
        argv = [sys.executable, "-m", "pipelines.hosting.worker", str(fd), str(self.threads)]
        self._proc = subprocess.Popen(argv, pass_fds=(fd,), env=env, stdin=subprocess.DEVNULL)
        child_end.close()
        self._conn.send_bytes(dumps(self.pipe))
        self._receive()  # the child's "ready" (or why it could not load the pipeline)
        self.starts += 1

    def _receive(self, callbacks: list = ()):
        """The child's answer; meanwhile, the calls it sends back of `callbacks` (progress) are run here."""
        while True:
            message = pickle.loads(self._conn.recv_bytes())
            if message[0] == CALLBACK:
                _, n, args, kwargs = message
                try:
                    callbacks[n](*args, **kwargs)
                except Exception:  # a progress bar that fails must not fail the call
                    log.exception("a callback of the %s process failed", self.name)
                continue
            ok, value = message
            if not ok:
                raise value
            return value

    def call(self, method: str, *args, **kwargs):
        """pipe.method(*args, **kwargs), run in the child (here where it could not start)."""
        with self._lock:
            if self.here:
                return getattr(self.pipe, method)(*args, **kwargs)
            try:
                if self.pid is None:
                    self._restart()
                data, callbacks = dumps_call((method, args, kwargs))
                self._conn.send_bytes(data)
                return self._receive(callbacks)
            except (EOFError, OSError) as e:  # the child died (killed, out of memory): a new one next time
                self._stop()
                raise ModelProcessDied(f"the {self.name} process ended unexpectedly") from e

    def _stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """End the child (it also ends by itself when this process does: its pipe closes)."""
        with self._lock:
            self._stop()


def remote(process: ModelProcess, method: str):
    """process.call(method, ...) as a function: a batch runner for the MicroBatcher (one per model, so that the
    batcher tells models apart)."""
    return functools.partial(process.call, method)
