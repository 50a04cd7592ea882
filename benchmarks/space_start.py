"""The Space's first minute: its cold start and its memory, from the assembled folder.

    python -m benchmarks.space_start [--python VENV/bin/python] [--out DIR]

Assembles the Space (`python -m training.publish space --dry-run`), starts `app.py` from its folder with the Space's
variables (offline: the bundled models, an empty Hub cache) and, in headless chromium opened beforehand, measures:
- the cold start: from the process's start to the first drawn heatmap (the worked example the sentiment tab opens
  on), with the moment the server first answered;
- the resident memory of the app's process tree (the server and its model processes: RSS, and PSS, which counts the
  pages they share once) after that first view, then with every bundled model a tab offers loaded (the sentiment
  tab's second model chosen, the translation and next-word tabs opened on their worked examples).
--python: the interpreter that runs the app (a fresh virtual environment with only the Space's requirements.txt, as
tests/app/test_space_venv.py builds); by default this one.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from tests.support import browser, space_folder  # noqa: E402
from tests.support.load_client import tree_memory_mb  # noqa: E402


def load_every_bundled_model(page) -> list[str]:
    """Choose each model of the sentiment tab in turn and open the other tabs on their worked examples; the tabs'
    choices (what was offered)."""
    offered = []
    for label in page.locator("#sentiment-model label").all()[1:]:
        offered.append(label.text_content().strip())
        browser.mark_plot(page, "sentiment-attention")
        label.click()
        browser.wait_redrawn(page, "sentiment-attention")
    page.get_by_role("tab", name="Translation (German → English)").click()
    browser.wait_drawn(page, "translation-attention")
    page.get_by_role("tab", name="Next word").click()
    page.wait_for_function("() => (document.querySelector('#lm-output textarea') || {}).value?.trim().length > 0")
    return offered


def measure(python: str, out: Path) -> dict:
    """Assemble, start, draw, load: the figures, in seconds and MB."""
    variables = space_folder.assemble(out / "space")
    port, log = browser.free_port(), out / "app.log"
    env = space_folder.space_env(variables, out / "home", port)
    url = f"http://127.0.0.1:{port}/"
    with browser.chromium_page(out / "chromium") as page:
        start = time.monotonic()
        proc = space_folder.start(python, out / "space", env, log)
        try:
            answered = space_folder.wait_ready(url, proc, log)
            page.goto(url)
            browser.wait_drawn(page, "sentiment-attention")
            cold = time.monotonic() - start
            first = tree_memory_mb(proc.pid)
            offered = load_every_bundled_model(page)
            time.sleep(2)  # what the last runs started (explanations, head tables) settles
            loaded = tree_memory_mb(proc.pid)
        finally:
            space_folder.stop(proc)
    return {
        "server answered s": round(answered, 1), "cold start to the drawn heatmap s": round(cold, 1),
        "first view RSS / PSS MB": [round(m) for m in first],
        "every bundled model RSS / PSS MB": [round(m) for m in loaded],
        "sentiment models chosen besides the default": offered, "variables": variables,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.space_start", description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs the Space's app.py")
    parser.add_argument("--out", type=Path, help="where to assemble the Space (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="space-start-") as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        print(json.dumps(measure(args.python, out), indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
