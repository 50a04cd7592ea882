"""Seconds from clicking the button to a drawn heatmap, in headless chromium, on the bundled models.

    python -m benchmarks.app_latency [--runs 5] [--screenshots assets/]

Models come from $SENTIMENT_MODEL / $TRANSLATION_MODEL (Hub repo id or folder), else assets/sentiment and
assets/translation. Each task is timed on a one-sentence review, a ~300-word review and a 15-word German sentence:
one click after the page is ready (it loads the plotting library with it: viz/page/head.py), then --runs more
clicks whose median is reported, on the page's own clock (the button's click event to the first frame that finds
the new heatmap drawn) and, for comparison with older reports, on Playwright's (which adds its click and
polling). Before each click the app finishes what the previous one started (the explanation, the head table), as
it has when a visitor types a new review.
A first visit is timed too, on the app as `python app.py` serves it (build_demo(landing=True)): from navigation to
the drawn heatmap of the worked example the sentiment tab opens on, and to the end of everything that run starts.
With --screenshots DIR, saves there the attention views on a long review (--long-review FILE, a text file; else the
benchmark review twice over): screenshot-token-focus.png and screenshot-model-view.png. The tabs' own screenshots, in
the page's layout, are benchmarks.page_layout's (--screenshots).
"""

import argparse
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from tests.support import browser  # noqa: E402
from viz.examples import BENCH_GERMAN, BENCH_REVIEW, BENCH_SENTENCE, LANDING  # noqa: E402


def wait_quiet(demo, quiet_s: float = 0.5, timeout_s: float = 120) -> None:
    """Until the app has had no event queued or running for quiet_s: the work that follows a click (the
    explanation, the head table) is done, as it is when a visitor types a new review. Chained events are sent
    by the page one after another, so a short gap is not the end."""
    quiet_since, end = None, time.monotonic() + timeout_s
    while time.monotonic() < end:
        busy = len(demo._queue) > 0 or demo._queue.get_active_worker_count() > 0
        now = time.monotonic()
        quiet_since = None if busy else quiet_since or now
        if quiet_since is not None and now - quiet_since >= quiet_s:
            return
        time.sleep(0.05)


def time_clicks(submit, other, runs: int, quiet) -> tuple[tuple, list[tuple]]:
    """(first click after page load, `runs` more clicks), each as submit() returns it. Before each timed click
    an untimed `other` input is run: gradio does not redraw a plot whose figure did not change, so the same input
    twice draws nothing. quiet() waits for the app to finish what the click before started."""
    quiet()
    first = submit()
    times = []
    for _ in range(runs):
        quiet()
        other()
        quiet()
        times.append(submit())
    return first, times


def report(name: str, first: tuple, times: list[tuple]) -> None:
    """times: (seconds on the page's clock, seconds on Playwright's) per click."""
    page, outside = [t[0] for t in times], [t[1] for t in times]
    print(
        f"{name}: median {statistics.median(page):.2f} s from click to drawn heatmap over {len(times)} runs "
        f"(min {min(page):.2f}, max {max(page):.2f}; first click after page load {first[0]:.2f} s); "
        f"with Playwright's click and polling: median {statistics.median(outside):.2f} s"
    )


def typed(action, text: str):
    """One input on a page: page -> action(page, text) (browser.analyze_review or browser.translate)."""
    return lambda page: action(page, text)


def cases(sentiment: bool, translation: bool) -> list[tuple]:
    """(tab, submit, other input, name) for each timed input of the tabs that have a model."""
    review, german = partial(typed, browser.analyze_review), partial(typed, browser.translate)
    found = []
    if sentiment:
        words = len(BENCH_SENTENCE.split())
        found.append(
            (
                "Sentiment",
                review(BENCH_SENTENCE),
                review("A short review."),
                f"sentiment (one sentence, {words} words)",
            )
        )
        words = len(BENCH_REVIEW.split())
        found.append(("Sentiment", review(BENCH_REVIEW), review("A short review."), f"sentiment ({words}-word review)"))
    if translation:
        words = len(BENCH_GERMAN.split())
        name = f"translation ({words}-word sentence, default decoding)"
        found.append(("Translation", german(BENCH_GERMAN), german("Ein Hund."), name))
    return found


def bench_tab(page, demo, tab: str, submit, other, name: str, runs: int) -> None:
    """Time `submit` on one tab and print the line."""
    ready = browser.open_tab(page, demo.local_url, tab)
    print(f"{name}: page ready {ready:.2f} s after navigation (the plotting library loaded with it)")

    def timed() -> tuple[float, float]:
        outside = submit(page)
        return browser.page_seconds(page), outside

    first, times = time_clicks(timed, lambda: other(page), runs, lambda: wait_quiet(demo))
    report(name, first, times)


def first_visits(sentiment, translation, runs: int) -> None:
    """Open the landing app `runs` times: seconds from navigation to the worked example's drawn heatmap (the
    sentiment tab's, run as the page loads) and to the app going quiet (its explanation and head table done)."""
    from app import build_demo

    demo = build_demo(sentiment, translation, landing=True)
    url = browser.serve(demo)
    drawn, done = [], []
    try:
        with tempfile.TemporaryDirectory() as profile, browser.chromium_page(profile) as page:
            for _ in range(runs + 1):  # the first visit warms the browser's cache of the page's scripts: not timed
                wait_quiet(demo)
                start = time.perf_counter()
                page.goto(url)
                browser.wait_drawn(page, "sentiment-attention")
                drawn.append(time.perf_counter() - start)
                wait_quiet(demo)
                done.append(time.perf_counter() - start - 0.5)  # wait_quiet's half second of quiet is not work
    finally:
        demo.close()
    example, to_heatmap, to_end = LANDING["sentiment"], statistics.median(drawn[1:]), statistics.median(done[1:])
    print(
        f"first visit (landing on {example!r}): median {to_heatmap:.2f} s from navigation to its drawn heatmap, "
        f"{to_end:.2f} s to the end of what it runs (explanation, head table) over {runs} visits (uncached first "
        f"visit: {drawn[0]:.2f} s)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed clicks per task (after one first click)")
    parser.add_argument(
        "--screenshots", type=Path, help="save screenshot-token-focus.png / screenshot-model-view.png here"
    )
    parser.add_argument("--long-review", type=Path, help="a text file with the long review of the views' screenshots")
    args = parser.parse_args(argv)

    if reason := browser.chromium_missing():
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    from app import build_demo
    from viz.models.loading import load_models
    from viz.server import hosting

    hosting.set_torch_threads()  # as python app.py runs: one torch thread per model run
    sentiment, translation = load_models()
    for name, loaded in (("sentiment", sentiment), ("translation", translation)):
        if loaded.pipeline is None:
            print(f"{name} model not available, skipped: {loaded.error}", file=sys.stderr)
    if sentiment.pipeline is None and translation.pipeline is None:
        return 2
    if args.screenshots:
        args.screenshots.mkdir(parents=True, exist_ok=True)

    demo = build_demo(sentiment.pipeline, translation.pipeline)
    browser.serve(demo)
    try:
        with tempfile.TemporaryDirectory() as profile, browser.chromium_page(profile) as page:
            shots = args.screenshots
            for case in cases(sentiment.pipeline is not None, translation.pipeline is not None):
                bench_tab(page, demo, *case, args.runs)
            if shots and sentiment.pipeline is not None:
                long = args.long_review.read_text() if args.long_review else f"{BENCH_REVIEW}\n\n{BENCH_REVIEW}"
                for path in browser.views_screenshots(page, demo.local_url, long, shots):
                    print("saved", path)
    finally:
        demo.close()
    if sentiment.pipeline is not None:
        first_visits(sentiment.pipeline, translation.pipeline, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
