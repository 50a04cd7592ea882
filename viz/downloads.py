"""Downloads: the "download data" JSON file of a tab, and PNG + SVG buttons on every plotly figure (through
the page's one wrapper of Plotly.react, PLOTLY_JS, which also has each new figure drawn once).

The JSON is built by pipelines.export on demand (the model runs once more, on the text in the box), so no
analysis pays for an export nobody asked for. Files go to one temporary folder; Gradio copies each into its
own cache as the handler returns, so ours are removed two minutes later (at the next export).
"""

import json
import logging
import tempfile
import time
import uuid
from pathlib import Path

from pipelines.export import sentiment_record, translation_record

from .inputs import MAX_GERMAN_CHARS, MAX_REVIEW_CHARS, beam_width, check_text
from .theme import THEME_JS

log = logging.getLogger(__name__)
EXPORT_DIR = Path(tempfile.gettempdir()) / "attention-demo-exports"
KEEP_SECONDS = 120

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
    if (window.__attentionTheme) [args[1], args[2]] = window.__attentionTheme(gd, args[1], args[2]);  // viz.theme
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

# After the server wrote the file into the gr.File, click its link so the browser saves it right away
# (waiting until the link to this very file is drawn, not the one of an earlier download).
CLICK_DOWNLOAD_JS = """(file) => {
  const name = file && (file.orig_name || (file.path || '').split('/').pop());
  if (!name) return file;
  let tries = 0;
  const go = () => {
    const a = [...document.querySelectorAll('#%s a[download]')].find(a => decodeURIComponent(a.href).endsWith(name));
    if (a) a.click(); else if (++tries < 100) setTimeout(go, 50);
  };
  go();
  return file;
}"""


def _cleanup(now: float) -> None:
    for old in EXPORT_DIR.glob("*.json"):
        try:
            if now - old.stat().st_mtime > KEEP_SECONDS:
                old.unlink()
        except OSError:  # another request removed it first
            pass


def write_json(record: dict, task: str) -> str:
    """Write an export to a fresh file named after the task and time; returns its path."""
    EXPORT_DIR.mkdir(parents=True, exist_ok=True)
    now = time.time()
    _cleanup(now)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    path = EXPORT_DIR / f"attention-{task}-{stamp}-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps(record, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    return str(path)


def sentiment_download(pipe, review: str, method: str | None = None) -> tuple[str | None, str]:
    """(path of the JSON export for this review, message); the path is None when there is nothing to export."""
    checked = check_text(review, MAX_REVIEW_CHARS, "review")
    if checked.text is None:
        return None, checked.error or ""
    try:
        return write_json(sentiment_record(pipe, checked.text, method=method), "sentiment"), ""
    except ValueError:
        return None, "The model found no words to read in this text."
    except Exception:
        log.exception("sentiment export failed")
        return None, "Sorry, the data could not be exported for this text."


def translation_download(pipe, german: str, decoding: str = "beam search", beam_size=4) -> tuple[str | None, str]:
    """(path of the JSON export for this sentence and decoding, message)."""
    checked = check_text(german, MAX_GERMAN_CHARS, "German sentence")
    if checked.text is None:
        return None, checked.error or ""
    beam = beam_width(decoding, beam_size)
    try:
        return write_json(translation_record(pipe, checked.text, beam_size=beam), "translation"), ""
    except ValueError:
        return None, "The model found no words to read in this text."
    except Exception:
        log.exception("translation export failed")
        return None, "Sorry, the data could not be exported for this text."
