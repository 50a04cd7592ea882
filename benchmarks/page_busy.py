"""Seconds the app stays busy after one click on the longest input it accepts, in headless chromium.

    python -m benchmarks.page_busy [--tasks sentiment translation]

From the button's click until the server has had nothing queued or running for 0.5 s (the prediction, the
plots, the default explanation and its faithfulness, the head table), with a review of MAX_REVIEW_CHARS
characters or a German input near MAX_GERMAN_CHARS (benchmarks/view_times.py builds both). Also prints when
the first heatmap was drawn. The page is loaded and ready before the click.
"""

import argparse
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from benchmarks.app_latency import wait_quiet  # noqa: E402
from benchmarks.view_times import longest  # noqa: E402
from tests.support import browser  # noqa: E402
from viz.examples import GERMAN, LONG_REVIEW  # noqa: E402
from viz.inputs import MAX_GERMAN_CHARS, MAX_REVIEW_CHARS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=["sentiment", "translation"])
    args = ap.parse_args()
    from app import build_demo
    from viz.models.loading import load_models
    from viz.server import hosting

    hosting.set_torch_threads()
    sentiment, translation = load_models()
    demo = build_demo(sentiment.pipeline, translation.pipeline)
    url = browser.serve(demo)
    inputs = {
        "sentiment": ("Sentiment", longest([LONG_REVIEW], MAX_REVIEW_CHARS), browser.analyze_review),
        "translation": ("Translation", longest(GERMAN, MAX_GERMAN_CHARS), browser.translate),
    }
    try:
        with tempfile.TemporaryDirectory() as profile, browser.chromium_page(profile) as page:
            for task in args.tasks:
                tab, text, submit = inputs[task]
                browser.open_tab(page, url, tab)
                wait_quiet(demo)
                start = time.perf_counter()
                drawn = submit(page, text)
                wait_quiet(demo, timeout_s=600)
                busy = time.perf_counter() - start - 0.5  # wait_quiet waits 0.5 s of quiet
                print(
                    f"{task} ({len(text):,} characters): heatmap drawn {drawn:.2f} s after the click, "
                    f"app busy {busy:.1f} s"
                )
    finally:
        demo.close()


if __name__ == "__main__":
    main()
