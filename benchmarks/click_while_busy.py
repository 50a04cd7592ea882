"""Seconds a visitor's next click waits while the app still works on their last one, in headless chromium.

    python -m benchmarks.click_while_busy [--runs 5] [--after 1.5]

After a review is analysed, the app goes on with work no one waits on: the default explanation's faithfulness and the
head table (@runs_model(background=True): pipelines.hosting.microbatch serves them after every other waiting call, of
any client, and runs the calls that come for the same model at their pause points, between passes). This times, on the
bundled models served as app.py serves them, what a visitor does next, `--after` seconds after the ~300-word
benchmark review's heatmap is drawn (viz/examples.py BENCH_REVIEW):
  - next review: a one-sentence review's click to its drawn heatmap;
  - inside one head: opening the accordion (after a click on a row of the long review's heatmap) to the drawn
    view (one model run records the heads);
and the same once the app is quiet after the long review (nothing queued or running). Prints each time and the
medians.
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from benchmarks.app_latency import wait_quiet  # noqa: E402
from tests.support import browser  # noqa: E402
from viz.examples import BENCH_REVIEW  # noqa: E402

SENTENCES = [
    "Not bad at all, I actually enjoyed it.",
    "A dull and lifeless film.",
    "It is long, yet never boring.",
    "Great cast, but a hollow story.",
    "A quiet, beautifully acted film that stays with you.",
]


def open_inside_head(page) -> float:
    """Click a row of the large heatmap, scroll to Inside one head and open it: seconds from that click to the drawn
    view."""
    browser.mark_plot(page, "sentiment-attention")
    browser.click_plot(page, "sentiment-attention", 0.5, 0.3)
    browser.wait_redrawn(page, "sentiment-attention")
    label = page.locator("#sentiment-inside-head-accordion .label-wrap")
    label.scroll_into_view_if_needed()  # scrolled to first: the plots it passes draw before the timed click
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    start = time.perf_counter()
    if browser.open_accordion(page, label) > 1:  # a click that missed is made again, timed from the first
        print("  (the click did not open the accordion: clicked again)")
    page.wait_for_selector("#sentiment-inside-head .ih-weights td", state="attached", timeout=120_000)
    return time.perf_counter() - start


def one_round(page, url: str, demo, sentence: str, after: float) -> dict[str, tuple[float, float]]:
    """{what: (seconds while busy, seconds when quiet)} for one sentence."""
    times = {}
    for what in ("next review", "inside one head"):
        pair = []
        for busy in (True, False):
            wait_quiet(demo, timeout_s=300)  # the last page's work done before it is left
            browser.open_tab(page, url, "Sentiment")  # a fresh page: the accordion closed, nothing recorded
            browser.analyze_review(page, BENCH_REVIEW)
            if busy:
                time.sleep(after)
            else:
                wait_quiet(demo)
            pair.append(browser.analyze_review(page, sentence) if what == "next review" else open_inside_head(page))
        times[what] = tuple(pair)
    wait_quiet(demo, timeout_s=300)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="sentences (at most 5)")
    ap.add_argument("--after", type=float, default=1.5, help="seconds after the long review's heatmap is drawn")
    args = ap.parse_args()
    from app import build_demo
    from viz.models.loading import load_models
    from viz.server import hosting

    hosting.set_torch_threads()
    sentiment, translation = load_models()
    demo = build_demo(sentiment.pipeline, translation.pipeline)
    url = browser.serve(demo)
    rounds = []
    try:
        with tempfile.TemporaryDirectory() as profile, browser.chromium_page(profile) as page:
            for sentence in SENTENCES[: args.runs]:
                rounds.append(one_round(page, url, demo, sentence, args.after))
    finally:
        demo.close()
    for what in ("next review", "inside one head"):
        busy, quiet = ([r[what][i] for r in rounds] for i in (0, 1))
        print(
            f"{what}: {args.after} s after the long review {[round(b, 2) for b in busy]} s, median "
            f"{statistics.median(busy):.2f} s; app quiet {[round(q, 2) for q in quiet]} s, median "
            f"{statistics.median(quiet):.2f} s"
        )


if __name__ == "__main__":
    main()
