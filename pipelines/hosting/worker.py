"""The child side of pipelines.hosting.processes: `python -m pipelines.hosting.worker FD THREADS`.

Reads a pickled pipeline, answers (True, None) once it is loaded, then for each (method, args, kwargs) answers
(True, result) or (False, error) until its parent closes the connection (a socket it inherited). A callback among
the arguments (progress) is a stand-in that sends each of its calls to the parent
(pipelines.hosting.processes.loads_call).
"""

import pickle
import sys
from multiprocessing.connection import Connection

import torch

from pipelines.hosting.memory import tame_malloc
from pipelines.hosting.processes import dumps, loads_call, portable_error

# The parent is gone or closed the pipe (a server that ended while its model process started: ModelProcess.start_soon).
GONE = (EOFError, ConnectionResetError, BrokenPipeError)


def serve(link: Connection) -> None:
    try:
        data = link.recv_bytes()
    except GONE:
        return
    try:
        pipe = pickle.loads(data)
    except Exception as e:
        link.send_bytes(dumps((False, portable_error(e))))
        return
    link.send_bytes(dumps((True, None)))
    while True:
        try:
            method, args, kwargs = loads_call(link.recv_bytes(), link)
        except GONE:
            return
        try:
            answer = (True, getattr(pipe, method)(*args, **kwargs))
        except Exception as e:
            answer = (False, portable_error(e))
        link.send_bytes(dumps(answer))
        del answer  # not kept while waiting for the next call


def main(argv: list[str]) -> None:
    fd, threads = (int(a) for a in argv)
    tame_malloc()
    torch.set_num_threads(threads)
    serve(Connection(fd))


if __name__ == "__main__":
    main(sys.argv[1:])
