"""The export store: the "download data" JSON files on the server, and their route (ServeExports).

Files go to a folder of this app instance's own, inside gradio's temporary folder; each is removed KEEP_SECONDS
later (at the next export), and all of them hold at most MAX_EXPORT_BYTES: a flood of downloads cannot fill the disk.
The page gets a relative address, exports/NAME (ServeExports answers it; NAME holds 128 random bits), never a server
path: a gr.File would send the file's path. What goes in a file: viz.share.downloads.
"""

import atexit
import json
import re
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from starlette.responses import FileResponse, PlainTextResponse

from pipelines.hosting.budget import ModelSize, export_bytes

from ..tasks import TASKS

KEEP_SECONDS = 120
# Exports on disk at once, at most: the budget's share, room for two of the largest (budget.export_bytes; a
# 20,000-character review's export is about 17 MB on a 2 x 4 model); the app sizes it to its models (size_for).
MAX_EXPORT_BYTES = export_bytes([])
EXPIRED = "This download has expired (files are kept for two minutes): press “Download data” again."
_folder: Path | None = None
_SERVED = re.compile(rf"/exports/(attention-(?:{'|'.join(TASKS)})-\d{{8}}-\d{{6}}-[0-9a-f]{{32}}\.json)$")


def size_for(pipes) -> int:
    """Size the exports' cap to the models the app serves; returns it."""
    global MAX_EXPORT_BYTES
    MAX_EXPORT_BYTES = export_bytes([ModelSize.of(p) for p in pipes])
    return MAX_EXPORT_BYTES


class ExportsFull(RuntimeError):
    """The export folder holds MAX_EXPORT_BYTES already."""


def export_dir() -> Path:
    """This app instance's export folder (made at the first export, removed when the process ends), inside
    gradio's temporary folder ($GRADIO_TEMP_DIR): another instance on the machine has its own."""
    global _folder
    if _folder is None or not _folder.is_dir():
        from gradio.utils import get_upload_folder

        base = Path(get_upload_folder())
        base.mkdir(parents=True, exist_ok=True)
        _folder = Path(tempfile.mkdtemp(prefix="attention-demo-exports-", dir=base))
        atexit.register(shutil.rmtree, _folder, True)
    return _folder


def _cleanup(folder: Path, now: float) -> int:
    """Remove exports older than KEEP_SECONDS; returns the bytes of those that stay."""
    kept = 0
    for old in folder.glob("*.json"):
        try:
            stat = old.stat()
            if now - stat.st_mtime > KEEP_SECONDS:
                old.unlink()
            else:
                kept += stat.st_size
        except OSError:  # another request removed it first
            pass
    return kept


def write_json(record: dict, task: str) -> str:
    """Write an export to a fresh file named after the task and time; returns its path. ExportsFull when the
    folder holds MAX_EXPORT_BYTES; a file that could not be written whole (a full disk) is removed."""
    folder = export_dir()
    now = time.time()
    if _cleanup(folder, now) >= MAX_EXPORT_BYTES:
        raise ExportsFull(f"{MAX_EXPORT_BYTES:,} bytes of exports are waiting to be fetched")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    path = folder / f"attention-{task}-{stamp}-{uuid.uuid4().hex}.json"
    try:
        path.write_text(json.dumps(record, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return str(path)


def export_url(path: str) -> str:
    """The address the page fetches an export from, relative to the page (ServeExports answers it)."""
    return f"exports/{Path(path).name}"


class ServeExports:
    """ASGI middleware: GET exports/NAME sends that export as a file download (404 once it was removed)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        wanted = scope["type"] == "http" and scope["method"] in ("GET", "HEAD")
        match = _SERVED.search(scope["path"]) if wanted else None
        if match is None:
            return await self.app(scope, receive, send)
        path = export_dir() / match.group(1)
        if path.is_file():
            response = FileResponse(path, media_type="application/json", filename=match.group(1))
        else:
            response = PlainTextResponse(EXPIRED, status_code=404)
        return await response(scope, receive, send)
