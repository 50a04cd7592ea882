"""Downloads: the "download data" JSON file of a tab, built by pipelines.export on demand (the model runs once more,
on the text in the box), so no analysis pays for an export nobody asked for. The files are kept, and served, by
viz.share.export_store; the browser saves one with viz/page/js/save_download.js.
"""

import logging

from pipelines.tasks import SENTIMENT, TRANSLATION

from ..inputs import beam_width, check_text
from ..notices import NO_WORDS
from ..server.failures import failure_message
from ..tasks import TASKS
from .export_store import ExportsFull, write_json

log = logging.getLogger(__name__)
FULL = "Too many downloads are waiting to be fetched on the server. Please try again in a minute or two."


def _failed(error: Exception, task: str) -> tuple[None, str]:
    if isinstance(error, ValueError):
        return None, NO_WORDS
    if isinstance(error, ExportsFull):
        log.warning("%s export refused: %s", task, error)
        return None, FULL
    return None, failure_message(error, f"{task} export")


def download(task: str, pipe, text: str, **options) -> tuple[str | None, str]:
    """(path of the JSON export of this input, message); the path is None when there is nothing to export.
    options: the task's record's (pipelines.tasks: a review's explanation method, a sentence's beam size)."""
    spec = TASKS[task]
    checked = check_text(text, spec.max_chars, spec.unit)
    if checked.text is None:
        return None, checked.error or ""
    try:
        return write_json(spec.task.record(pipe, checked.text, **options), task), ""
    except Exception as e:
        return _failed(e, task)


def sentiment_download(pipe, review: str, method: str | None = None) -> tuple[str | None, str]:
    """(path of the JSON export for this review, message)."""
    return download(SENTIMENT.name, pipe, review, method=method)


def translation_download(pipe, german: str, decoding: str = "beam search", beam_size=4) -> tuple[str | None, str]:
    """(path of the JSON export for this sentence and decoding, message)."""
    return download(TRANSLATION.name, pipe, german, beam_size=beam_width(decoding, beam_size))
