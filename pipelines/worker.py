"""The child side of pipelines.processes: `python -m pipelines.worker READ_FD WRITE_FD THREADS`.

Reads a pickled pipeline, answers (True, None) once it is loaded, then for each (method, args, kwargs) answers
(True, result) or (False, error) until its parent closes the pipe.
"""

import ctypes
import pickle
import sys
import time
from multiprocessing.connection import Connection

import torch

from pipelines.processes import dumps, portable_error

TRIM_EVERY_S = 2.0  # freed memory goes back to the system at most this often (glibc's malloc_trim)


def _trimmer():
    """A function that hands freed heap pages back to the system when TRIM_EVERY_S has passed (glibc only)."""
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    last = [time.monotonic()]

    def maybe_trim() -> None:
        if time.monotonic() - last[0] >= TRIM_EVERY_S:
            trim(0)
            last[0] = time.monotonic()

    return maybe_trim


def serve(read: Connection, write: Connection) -> None:
    try:
        pipe = pickle.loads(read.recv_bytes())
    except Exception as e:
        write.send_bytes(dumps((False, portable_error(e))))
        return
    write.send_bytes(dumps((True, None)))
    maybe_trim = _trimmer()
    while True:
        try:
            method, args, kwargs = pickle.loads(read.recv_bytes())
        except EOFError:  # the parent is gone or closed the pipe
            return
        try:
            answer = (True, getattr(pipe, method)(*args, **kwargs))
        except Exception as e:
            answer = (False, portable_error(e))
        write.send_bytes(dumps(answer))
        del answer
        maybe_trim()


def main(argv: list[str]) -> None:
    read_fd, write_fd, threads = (int(a) for a in argv)
    torch.set_num_threads(threads)
    serve(Connection(read_fd, writable=False), Connection(write_fd, readable=False))


if __name__ == "__main__":
    main(sys.argv[1:])
