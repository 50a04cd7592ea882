"""What to tell a visitor when running a model failed: what happened, never a blame on their text.

One place for every handler (prediction, translation, download): a known failure (busy, a model process
restarting, a full disk, NaN from damaged weights) is logged in one line; anything else with its traceback.
"""

import errno
import logging

from pipelines.hosting.microbatch import TooManyRequests
from pipelines.hosting.processes import ModelProcessDied
from pipelines.trust.finite import NonFiniteOutput

log = logging.getLogger(__name__)

BUSY = "You have many requests waiting already. Please wait for them to finish, then try again."
RESTARTING = "The model is restarting after a failure on the server. Please try again in a few seconds."
NO_SPACE = "The server is out of disk space, so this could not be done. Please try again later."
NO_MEMORY = "The server ran out of memory for this request. Please try again in a few seconds, or with a shorter text."
NOT_FINITE = (
    "The model computed invalid numbers (NaN) for this text, so there is no answer to show: its weights may be "
    "damaged. This has been logged for the maintainers."
)
UNKNOWN = "Something went wrong on the server (logged for the maintainers). Please try again in a few seconds."


def _caused_by(error: BaseException, kind: type) -> BaseException | None:
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, kind):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def out_of_space(error: BaseException) -> bool:
    os_error = _caused_by(error, OSError)
    return os_error is not None and os_error.errno in (errno.ENOSPC, errno.EDQUOT)


def failure_message(error: BaseException, doing: str) -> str:
    """The message for a failure while `doing` (for the log: "sentiment", "translation export"...)."""
    if isinstance(error, TooManyRequests):
        return BUSY
    known = [
        (_caused_by(error, ModelProcessDied) is not None, RESTARTING),
        (out_of_space(error), NO_SPACE),
        (_caused_by(error, MemoryError) is not None, NO_MEMORY),
        (_caused_by(error, NonFiniteOutput) is not None, NOT_FINITE),
    ]
    for matched, message in known:
        if matched:
            log.warning("%s failed: %s: %s", doing, type(error).__name__, error)
            return message
    log.exception("%s failed", doing)
    return UNKNOWN
