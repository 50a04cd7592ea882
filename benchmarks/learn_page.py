"""The Learn tab in chromium (issue 70), on the bundled models as `python app.py` serves them
(benchmarks.page_layout.bundled_demo): the first step drawn after the page's load (budget: 1 s on the from-scratch
models), Next and Back (budget: 300 ms each, from the click to the next step's figure drawn, on the page's own
clock), the time until every model's steps are there (the first model's show first), and each step's figure bytes
(budget: 200 KB).

    python -m benchmarks.learn_page [--smollm2] [--screenshot assets/screenshot-learn.png]

With --screenshot, saves the Learn tab at 1440x900 as it opens (its map, the first step, its figure, code and check).
"""

import argparse
import json
import statistics
import tempfile
from dataclasses import dataclass

from benchmarks.page_layout import bundled_demo
from tests.support import browser
from viz.server.hosting import set_torch_threads

BUDGETS = {"first_step_s": 1.0, "next_back_ms": 300, "figure_kb": 200}
AT_JS = "text => ((document.querySelector('#learn-progress') || {}).textContent || '').includes(text)"
WALKED_JS = "() => !((document.querySelector('#learn-status') || {}).textContent || '').includes('being walked')"
DRAWN_JS = "() => !!document.querySelector('#learn-figure .js-plotly-plot .main-svg')"
ARM_JS = """id => { window.__clicked = undefined; document.querySelector('#' + id).addEventListener('click',
  () => { window.__clicked = performance.now(); }, {once: true, capture: true}); }"""
# The figure's data differs from the one before (gradio calls Plotly.react on the same div): the next step is drawn
MARK_JS = "() => { window.__mark = (document.querySelector('#learn-figure .js-plotly-plot') || {}).data; }"
REDRAWN_JS = """() => { const gd = document.querySelector('#learn-figure .js-plotly-plot');
  return !!gd && gd.data !== window.__mark && !!gd._fullLayout; }"""


def _steps(page) -> int:
    text = page.locator("#learn-progress").text_content()
    return int(text.split(" of ")[1].split()[0])


# The page's own load, on its clock from the navigation's start: DOMContentLoaded (the HTML parsed) and load
# (every script and stylesheet fetched); gradio then builds the page and fires its load events (the walk)
LOADED_JS = """() => { const n = performance.getEntriesByType('navigation')[0];
  return [n.domContentLoadedEventEnd / 1000, n.loadEventEnd / 1000]; }"""


@dataclass(frozen=True)
class Opened:
    """One visit, in seconds on the page's clock from the navigation's start."""

    dom_loaded: float  # DOMContentLoaded
    loaded: float  # the load event
    shown: float  # the Learn tab's input box shown (gradio has built the page)
    drawn: float  # step 1's figure drawn

    def lines(self, who: str) -> list[str]:
        budget = BUDGETS["first_step_s"]
        return [f"{who}: DOMContentLoaded {self.dom_loaded:.2f} s, load event {self.loaded:.2f} s, the Learn tab's "
                f"box shown {self.shown:.2f} s, step 1 drawn {self.drawn:.2f} s after the navigation's start",
                f"{who}: first Learn step drawn {self.drawn - self.loaded:.2f} s after the page's load event "
                f"({self.drawn - self.dom_loaded:.2f} s after DOMContentLoaded; budget {budget} s)"]  # fmt: skip


def first_step(page, url: str) -> Opened:
    """A visit's times: the page's load, the Learn tab's box shown (before any walk), step 1's figure drawn."""
    page.goto(url)
    page.wait_for_selector("#learn-input textarea", state="visible")
    shown = page.evaluate("() => performance.now()") / 1000
    page.wait_for_function(AT_JS, arg="Step 1 of")
    page.wait_for_function(DRAWN_JS, polling="raf")
    drawn = page.evaluate("() => performance.now()") / 1000
    dom_loaded, loaded = page.evaluate(LOADED_JS)
    return Opened(dom_loaded, loaded, shown, drawn)


def press(page, button: str, step: int) -> float:
    """Milliseconds from the click on `button` to step `step` (1-based) shown with a new figure."""
    page.evaluate(MARK_JS)
    page.evaluate(ARM_JS, button)
    page.locator(f"#{button}").click()
    page.wait_for_function(AT_JS, arg=f"Step {step} of ", polling="raf")
    page.wait_for_function(REDRAWN_JS, polling="raf")
    return page.evaluate("() => performance.now() - window.__clicked")


def figure_bytes(page) -> int:
    """The bytes of the figure the page holds (its data and layout as JSON, what the server sent for it)."""
    return page.evaluate("""() => { const gd = document.querySelector('#learn-figure .js-plotly-plot');
      return JSON.stringify({data: gd.data, layout: gd.layout}).length; }""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smollm2", action="store_true", help="SmolLM2 as the next-word default, ours beside it")
    parser.add_argument("--screenshot", help="save the Learn tab at 1440x900 here")
    args = parser.parse_args()
    lm = None
    if args.smollm2:
        from viz.models.loading import smollm2_source

        lm = smollm2_source()
    set_torch_threads()  # one torch thread a model run, as `python app.py` sets before its models load
    demo = bundled_demo(lm)
    url = browser.serve(demo)
    try:
        with browser.chromium_page(tempfile.mkdtemp(), 1440, 900) as page:
            first = first_step(page, url)  # the first visitor: the example's walks run now
            page.wait_for_function(WALKED_JS)  # the other models' steps follow the first model's
            every = page.evaluate("() => performance.now()") / 1000 - first.loaded
        with browser.chromium_page(tempfile.mkdtemp(), 1440, 900) as page:
            later = first_step(page, url)  # a later visitor: the example's walks are kept
            page.wait_for_function(WALKED_JS)
            if args.screenshot:
                page.wait_for_timeout(500)
                page.mouse.move(0, 0)
                page.screenshot(path=args.screenshot, full_page=True)
            n, sizes, nexts = _steps(page), [figure_bytes(page)], []
            for k in range(2, n + 1):
                nexts.append(press(page, "learn-next", k))
                sizes.append(figure_bytes(page))
            backs = [press(page, "learn-back", k) for k in range(n - 1, max(n - 6, 0), -1)]
    finally:
        demo.close()
    report((first, later), every, nexts, backs, sizes)


def report(visits: tuple[Opened, Opened], every: float, nexts: list[float], backs: list[float], sizes: list[int]):
    for who, visit in zip(("first visitor", "later visitor"), visits, strict=True):
        print("\n".join(visit.lines(who)))
    print(f"first visitor: every model walked (all steps there) {every:.2f} s after the page's load event")
    for name, times in (("Next", nexts), ("Back", backs)):
        print(f"{name}: median {statistics.median(times):.0f} ms, max {max(times):.0f} ms over {len(times)} presses "
              f"(budget {BUDGETS['next_back_ms']} ms)")  # fmt: skip
    print("figure KB per step: " + json.dumps([round(s / 1000, 1) for s in sizes]))
    print(f"largest figure: {max(sizes) / 1000:.1f} KB (budget {BUDGETS['figure_kb']} KB)")


if __name__ == "__main__":
    main()
