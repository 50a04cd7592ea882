"""The Space's first minute: its cold start and its memory, from the assembled folder.

    python -m benchmarks.space_start [--python VENV/bin/python] [--out DIR] [--clone] [--hub-unset]

Assembles the Space (`python -m training.publish space --dry-run`), starts `app.py` from its folder with the Space's
variables (offline: the bundled models, an empty Hub cache) and, in headless chromium opened beforehand, measures:
- the cold start: from the process's start to the Learn tab's first step drawn (the landing tab; the worked example
  the sentiment tab opens on is drawn after), with the moment the server first answered;
- the resident memory of the app's process tree (the server and its model processes: RSS, and PSS, which counts the
  pages they share once) after that first view, then with every bundled model a tab offers loaded (the sentiment
  tab's second model chosen, the translation and next-word tabs opened on their worked examples).
--python: the interpreter that runs the app (a fresh virtual environment with only the Space's requirements.txt, as
tests/app/test_space_venv.py builds); by default this one.
--clone: start `app.py` from a fresh `git clone` of this checkout's last commit, with its defaults (no Space
variables), instead of the assembled Space.
--hub-unset: leave HF_HUB_OFFLINE unset; where the Hub cannot be reached, the app finds that out itself.
"""

import argparse
import json
import subprocess
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


def app_folder(out: Path, clone: bool) -> tuple[Path, dict[str, str]]:
    """(the folder app.py starts from, the variables set): the assembled Space and its variables, or (clone) a fresh
    clone of this checkout's last commit and none."""
    if not clone:
        return out / "space", space_folder.assemble(out / "space")
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(out / "clone")], check=True, timeout=600)
    return out / "clone", {}


def measure(python: str, out: Path, clone: bool = False, hub_unset: bool = False) -> dict:
    """Assemble (or clone), start, draw, load: the figures, in seconds and MB."""
    folder, variables = app_folder(out, clone)
    port, log = browser.free_port(), out / "app.log"
    env = space_folder.space_env(variables, out / "home", port)
    if hub_unset:
        env.pop("HF_HUB_OFFLINE")
    url = f"http://127.0.0.1:{port}/"
    with browser.chromium_page(out / "chromium") as page:
        start = time.monotonic()
        proc = space_folder.start(python, folder, env, log)
        try:
            answered = space_folder.wait_ready(url, proc, log)
            page.goto(url)
            browser.wait_drawn(page, "learn-figure")  # the landing tab: Learn's first step
            cold = time.monotonic() - start
            browser.open_tab(page, url, "Sentiment")  # its worked example runs when the tab is first opened
            browser.wait_drawn(page, "sentiment-attention")
            first = tree_memory_mb(proc.pid)
            offered = load_every_bundled_model(page)
            time.sleep(2)  # what the last runs started (explanations, head tables) settles
            loaded = tree_memory_mb(proc.pid)
        finally:
            space_folder.stop(proc)
    return {
        "server answered s": round(answered, 1), "cold start to the first Learn step drawn s": round(cold, 1),
        "first view RSS / PSS MB": [round(m) for m in first],
        "every bundled model RSS / PSS MB": [round(m) for m in loaded],
        "sentiment models chosen besides the default": offered, "variables": variables,
        "started from": "a fresh clone" if clone else "the assembled Space",
        "HF_HUB_OFFLINE": env.get("HF_HUB_OFFLINE"),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.space_start", description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs the Space's app.py")
    parser.add_argument("--out", type=Path, help="where to assemble the Space (default: a temporary folder)")
    parser.add_argument("--clone", action="store_true", help="start from a fresh clone of the last commit instead")
    parser.add_argument("--hub-unset", action="store_true", help="leave HF_HUB_OFFLINE unset (the app finds out)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="space-start-") as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        print(json.dumps(measure(args.python, out, args.clone, args.hub_unset), indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
