"""Downloads: the "download data" JSON file of a tab, and PNG + SVG buttons on every plotly figure (through
the page's one wrapper of Plotly.react, PLOTLY_JS, which also has each new figure drawn once).

The JSON is built by pipelines.export on demand (the model runs once more, on the text in the box), so no
analysis pays for an export nobody asked for. Files go to a folder of this app instance's own, inside gradio's
temporary folder; each is removed KEEP_SECONDS later (at the next export), and all of them hold at most
MAX_EXPORT_BYTES: a flood of downloads cannot fill the disk. The page gets a relative address, exports/NAME
(ServeExports answers it; NAME holds 128 random bits), never a server path: a gr.File would send the file's path.
"""

import atexit
import json
import logging
import re
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from starlette.responses import FileResponse, PlainTextResponse

from pipelines.hosting.budget import ModelSize, export_bytes
from pipelines.tasks import SENTIMENT, TRANSLATION

from ..inputs import beam_width, check_text
from ..page.theme import THEME_JS
from ..server.failures import failure_message
from ..tasks import TASKS

log = logging.getLogger(__name__)
KEEP_SECONDS = 120
# Exports on disk at once, at most: the budget's share, room for two of the largest (budget.export_bytes; a
# 20,000-character review's export is about 17 MB on a 2 x 4 model); the app sizes it to its models (size_for).
MAX_EXPORT_BYTES = export_bytes([])
FULL = "Too many downloads are waiting to be fetched on the server. Please try again in a minute or two."
NO_WORDS = "The model found no words to read in this text."
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


# Plotly's own mode bar, on every figure of the page: the camera button saves a PNG (at twice the size, for
# slides), and a second button saves an SVG. Gradio draws figures with window.Plotly.react(gd, data, layout,
# config); wrapping react adds the buttons to that config. It all runs in the browser, so it works offline.
# The wrapper also draws each figure once: for a new figure, gradio's plot first redraws its old plotly div, then
# replaces that div with a new one and draws the figure again (60-90 ms each for a long review's heatmap). Drawn
# in the next animation frame instead, only into divs still on the page and only the last figure given to each,
# a new heatmap is drawn once, just before the browser paints.
PLOTLY_JS = (
    THEME_JS
    + """
(() => {
  if (window.__attentionDemoPlotly) return;
  window.__attentionDemoPlotly = true;
  const name = gd => ((gd.closest('[id]') || {}).id || 'attention') + '';
  const svgButton = {
    name: 'downloadSvg', title: 'Download plot as SVG',
    icon: {width: 1000, height: 1000, path: 'M420 50h160v350h170l-250 300l-250-300h170zM100 800h800v150h-800z'},
    click: gd => window.Plotly.downloadImage(gd, {format: 'svg', filename: name(gd)}),
  };
  const pending = new Map();  // div -> {args, done}: the last figure given to it, drawn at the next frame
  const draw = (P, react, gd) => {
    const {args, done} = pending.get(gd);
    pending.delete(gd);
    if (!gd.isConnected) return done(gd);  // replaced before it was drawn: nothing to show
    if (window.__attentionTheme) [args[1], args[2]] = window.__attentionTheme(gd, args[1], args[2]);  // viz.page.theme
    Promise.resolve(react.apply(P, args)).then(done, done);
  };
  const patch = P => {
    if (!P || P.__withDownloads) return P;
    const react = P.react;
    P.react = (gd, data, layout, config) => {
      const args = [gd, data, layout, Object.assign({}, config, {
        displaylogo: false, modeBarButtonsToAdd: [svgButton],
        toImageButtonOptions: {format: 'png', scale: 2, filename: name(gd)},
      })];
      const waiting = pending.get(gd);
      if (waiting) { waiting.args = args; return waiting.promise; }
      const entry = {args};
      entry.promise = new Promise(resolve => { entry.done = resolve; });
      pending.set(gd, entry);
      requestAnimationFrame(() => draw(P, react, gd));
      return entry.promise;
    };
    P.__withDownloads = true;
    return P;
  };
  let current = patch(window.Plotly);
  Object.defineProperty(window, 'Plotly', {configurable: true, get: () => current, set: v => { current = patch(v); }});
})();
"""
)

# After the server wrote the file, have the browser save it: a link to its address (export_url), clicked once.
CLICK_DOWNLOAD_JS = """(url) => {
  if (!url || !url.startsWith('exports/')) return url;
  const a = document.createElement('a');
  a.href = url;
  a.download = url.split('/').pop();
  document.body.appendChild(a);
  a.click();
  a.remove();
  return url;
}"""


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
