"""Resident memory that stays flat in a long-running process (glibc): for the server and its model processes."""

import ctypes
import threading
import time

TRIM_EVERY_S = 0.5  # freed memory goes back to the system this often


def tame_malloc(arenas: int = 2, trim_every_s: float = TRIM_EVERY_S) -> bool:
    """glibc only: few malloc arenas (by default each busy thread gets its own and keeps what it freed), and
    every trim_every_s a malloc_trim(0) that hands freed pages back to the system, so resident memory stays
    flat under load. (A low mmap threshold did that too, but every batch then page-faulted its large
    tensors afresh: a quarter of the app's CPU time went to the kernel under 32 clients.) Call before the
    models load, once per process. False where it does not apply."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    M_ARENA_MAX = -8
    if not libc.mallopt(M_ARENA_MAX, arenas):
        return False

    def trim() -> None:
        while True:
            time.sleep(trim_every_s)
            libc.malloc_trim(0)

    threading.Thread(target=trim, name="malloc-trim", daemon=True).start()
    return True
