"""Driving the app in headless chromium with Playwright: shared by tests/app/test_browser.py and
benchmarks/app_latency.py. Waits are on selectors and on plotly's own state, never on network idle
(Gradio keeps a connection open)."""

import os
import re
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"  # $CHROMIUM wins
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 60_000  # generous: CI machines and a shared CPU are slow; nothing here is a timed assertion

# A plot counts as redrawn when plotly holds a data array other than the one recorded before the action
# (gradio calls Plotly.react on the same div) and the heatmap image is drawn.
_MARK_JS = """id => {
  window.__plotMarks = window.__plotMarks || {};
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  window.__plotMarks[id] = gd ? gd.data : null;
}"""
_REDRAWN_JS = """id => {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  const drawn = !!gd && !!gd.data && gd.data !== (window.__plotMarks || {})[id] && !!gd._fullLayout
    && gd.querySelector('.heatmaplayer image, .barlayer .point') !== null;
  if (drawn && window.__clickedAt !== undefined && window.__drawnAt === undefined) window.__drawnAt = performance.now();
  return drawn;
}"""
# The page's own clock: from the button's click event to the first animation frame that finds the new plot drawn
# (wait_redrawn polls on animation frames), without Playwright's own time before the click and after the frame.
_ARM_CLICK_JS = """id => {
  delete window.__clickedAt; delete window.__drawnAt;
  document.querySelector('#' + id).addEventListener('click', () => { window.__clickedAt = performance.now(); },
    {once: true, capture: true});
}"""


def chromium_missing() -> str | None:
    """Why a browser run cannot happen here, or None when chromium and playwright are installed."""
    if not Path(CHROMIUM).exists():
        return f"chromium is not installed at {CHROMIUM} (apt-get install chromium, or set $CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_local(demo, tries: int = 3, **options) -> str:
    """demo.launch() on a free local port without blocking; returns its URL. Close with demo.close().

    Gradio's launch asks the new server for its page once with a 3 s timeout (gradio.networking.url_ok) and gives up
    with "localhost is not accessible" when that one request is slow: under the full suite on 2 cores another
    worker's model run can hold it past 3 s (seen once in .ci/run). A refused launch is closed and tried again."""
    for attempt in range(tries):
        try:
            _, url, _ = demo.launch(
                server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True, **options
            )
            return url
        except ValueError as error:
            demo.close()
            if "localhost is not accessible" not in str(error) or attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


def serve(demo) -> str:
    """Launch a built demo as app.py does (viz.server.hosting) on a free local port without blocking; returns its URL.
    Close with demo.close()."""
    from viz.server.hosting import launch_options

    return launch_local(demo, **launch_options(demo))


@contextmanager
def serve_app(sentiment, translation) -> Iterator[str]:
    """The app built on these two pipelines (app.build_demo), served on a free local port; yields its URL and
    closes it after."""
    from app import build_demo

    demo = build_demo(sentiment, translation)
    try:
        yield serve(demo)
    finally:
        demo.close()


@contextmanager
def chromium_page(profile_dir: str | Path, width: int = 1400, height: int = 1000) -> Iterator:
    """A Playwright page in headless chromium whose config and cache stay in profile_dir."""
    from playwright.sync_api import sync_playwright

    profile = Path(profile_dir)
    env = {**os.environ, "XDG_CONFIG_HOME": str(profile / "config"), "XDG_CACHE_HOME": str(profile / "cache")}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, env=env)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(TIMEOUT_MS)
            yield page
        finally:
            browser.close()


def open_tab(page, url: str, tab: str) -> float:
    """Load the app, switch to the tab whose name starts with `tab` ('Sentiment', 'Translation') and wait until
    the page is ready (the plotting library it loads with the page included: viz.page.html_head). Returns the seconds
    from navigation to ready."""
    start = time.perf_counter()
    page.goto(url)
    page.get_by_role("tab", name=re.compile(f"^{tab}")).click()
    page.wait_for_selector(f"#{tab.lower()}-input textarea", state="visible")
    page.wait_for_function("() => document.readyState === 'complete'", timeout=TIMEOUT_MS)
    page.evaluate("() => window.__plotlyPreload")  # awaits the promise when the page started one
    return time.perf_counter() - start


def mark_plot(page, elem_id: str) -> None:
    """Remember what a plot shows now, so wait_redrawn can tell when it changes (its section opened first)."""
    reveal(page, elem_id)
    page.evaluate(_MARK_JS, elem_id)


def wait_redrawn(page, elem_id: str, timeout_ms: int = TIMEOUT_MS) -> None:
    reveal(page, elem_id)
    page.wait_for_function(_REDRAWN_JS, arg=elem_id, timeout=timeout_ms, polling="raf")


def _submit_and_time(page, task: str, text: str, plot_id: str) -> float:
    # Waits for a new figure: the same input twice gives the same figure, which gradio does not redraw.
    page.locator(f"#{task}-input textarea").fill(text)
    mark_plot(page, plot_id)
    page.evaluate(_ARM_CLICK_JS, f"{task}-submit")
    start = time.perf_counter()
    page.locator(f"#{task}-submit").click()
    wait_redrawn(page, plot_id)
    return time.perf_counter() - start


_PAST_EDGE_JS = """id => { const svg = document.querySelector('#' + id + ' .main-svg');
  const right = svg.getBoundingClientRect().right;
  return Array.from(document.querySelectorAll('#' + id + ' .gtitle, #' + id + ' .gtitle-subtitle, #' + id
    + ' .legendtext, #' + id + ' .xtitle')).filter(e => e.getBoundingClientRect().right > right + 1)
    .map(e => e.textContent); }"""


def text_past_right_edge(page, elem_id: str) -> list[str]:
    """The titles and legend entries of a drawn plot that run past its right edge (cut off on the page)."""
    return page.evaluate(_PAST_EDGE_JS, elem_id)


def page_seconds(page) -> float:
    """The last timed submit on the page's own clock: its button's click event to the frame that found the plot
    drawn (the seconds analyze_review and translate return also count Playwright's click and polling)."""
    return page.evaluate("() => (window.__drawnAt - window.__clickedAt) / 1000")


def analyze_review(page, text: str) -> float:
    """Type a review, press the button; seconds from the click to the drawn single-head heatmap."""
    return _submit_and_time(page, "sentiment", text, "sentiment-attention")


def translate(page, text: str, decoding: str | None = None) -> float:
    """Type a German sentence (optionally pick 'greedy' or 'beam search'), translate; seconds from the
    click to the drawn cross-attention heatmap."""
    if decoding:
        choose(page, "translation-decoding", decoding)
    return _submit_and_time(page, "translation", text, "translation-attention")


def choose(page, elem_id: str, label: str, redraws: tuple[str, ...] = ()) -> None:
    """Click the radio option `label` of a gr.Radio and wait until the given plots are redrawn."""
    for plot_id in redraws:
        mark_plot(page, plot_id)
    reveal(page, elem_id)
    page.locator(f"#{elem_id}").get_by_label(label, exact=True).check()
    for plot_id in redraws:
        wait_redrawn(page, plot_id)


def step_forward(page, n: int = 1) -> None:
    """Move the decoding-step slider right n times with the keyboard, as a user would, waiting for each redraw."""
    reveal(page, "translation-step")
    page.wait_for_function(
        "() => { const s = document.querySelector('#translation-step input[type=range]'); return s && !s.disabled; }"
    )
    slider = page.locator("#translation-step input[type=range]")
    for _ in range(n):
        mark_plot(page, "translation-step-heads")
        slider.press("ArrowRight")
        wait_redrawn(page, "translation-step-heads")


def click_slider(page, elem_id: str, fx: float) -> None:
    """Click a gr.Slider's track at a fraction fx of its width, as a user would (the value jumps there, and the
    slider's release event fires)."""
    reveal(page, elem_id)
    track = page.locator(f"#{elem_id} input[type=range]")
    box = track.bounding_box()
    # Relative to the track and through the locator: Playwright waits until the track stands still and is what the
    # pointer would hit, so plots drawn above it while the page fills in do not move it from under the click.
    x = 2 + min(max(fx, 0.0), 1.0) * (box["width"] - 4)  # fx 0 and 1: the ends, inside the track
    track.click(position={"x": x, "y": box["height"] / 2}, timeout=TIMEOUT_MS)


def wait_heads_measured(page, task: str) -> str:
    """Wait for the heads panel of a tab to report its measurement (the grid shows dashes until then); its status."""
    status = f"{task}-heads-status"
    reveal(page, status)
    page.wait_for_function(
        "id => ((document.querySelector('#' + id) || {}).textContent || '').includes('heads measured')",
        arg=status,
        timeout=TIMEOUT_MS,
    )
    return page.locator(f"#{status}").text_content()


SHOWN_JS = """selector => {
  const e = document.querySelector(selector);
  return !!e && e.checkVisibility({contentVisibilityAuto: true});
}"""


# What a page shows when a wait fails: each tab's input and status, and gradio's toasts (errors, warnings)
_STATE_JS = """() => Object.fromEntries([
  ...['sentiment', 'translation'].flatMap(t => [
    [t + '-input', (document.querySelector('#' + t + '-input textarea') || {}).value],
    [t + '-status', (document.querySelector('#' + t + '-status') || {}).innerText]]),
  ['toasts', Array.from(document.querySelectorAll('.toast-body')).map(e => e.innerText)],
  ['pending', document.querySelectorAll('.pending, .generating').length]])"""


def page_state(page) -> dict:
    """Each tab's input and status and the page's toasts: what a failed wait reports (a test that timed out said
    only which selector it waited for)."""
    try:
        return {"url": page.url, **page.evaluate(_STATE_JS)}
    except Exception as e:  # a page that cannot answer says so
        return {"url": page.url, "error": repr(e)}


def wait_drawn(page, elem_id: str, part: str = ".heatmaplayer image") -> None:
    """Wait until the plot elem_id shows `part` on screen, scrolled to as a visitor would: every plot but a tab's
    first heatmap is laid out and painted only near the screen (viz.page.theme.skip_off_screen), and Playwright
    counts what the browser skips as hidden. A wait that times out says what the page showed (see page_state). A plot in
    a section (viz.page.layout) is waited for with its section open."""
    reveal(page, elem_id)
    try:
        page.wait_for_selector(f"#{elem_id} {part}", state="attached")
    except Exception as e:
        raise AssertionError(f"#{elem_id} {part} never came; the page showed {page_state(page)}") from e
    page.locator(f"#{elem_id}").scroll_into_view_if_needed()
    # The browser updates what it skips at its next frames, not at the scroll; Playwright's visible-wait can pass
    # before (it measures a forced layout), so wait for the skipping itself to end.
    page.wait_for_function(SHOWN_JS, arg=f"#{elem_id} {part}", polling="raf")
    page.wait_for_selector(f"#{elem_id} {part}")


def plot_title(page, elem_id: str) -> str:
    reveal(page, elem_id)
    return page.locator(f"#{elem_id} .gtitle").first.text_content() or ""


def hover_heatmap(page, elem_id: str, fx: float = 0.5, fy: float = 0.5) -> str:
    """Hover a heatmap at a fraction (fx, fy) of its plot area; the tooltip's text."""
    reveal(page, elem_id)
    area = page.locator(f"#{elem_id} .nsewdrag").first
    area.scroll_into_view_if_needed()
    box = area.bounding_box()
    x, y = box["x"] + fx * box["width"], box["y"] + fy * box["height"]
    page.mouse.move(x - 3, y - 3)
    page.mouse.move(x, y, steps=3)
    hover = page.locator(f"#{elem_id} .hoverlayer .hovertext").first
    hover.wait_for(state="attached")
    return hover.text_content() or ""


@contextmanager
def _every_plot_drawn(page) -> Iterator[None]:
    """For a picture of the whole page, not only of the screen: the plots the browser skips off screen
    (viz.page.theme.skip_off_screen) are laid out and painted meanwhile, else they came out blank."""
    from viz.page.theme import OFF_SCREEN

    style = page.add_style_tag(content=f".{OFF_SCREEN} {{ content-visibility: visible !important; }}")
    try:
        yield
    finally:
        style.evaluate("e => e.remove()")


def screenshot(page, path: str | Path) -> Path:
    page.mouse.move(0, 0)  # no tooltip in the picture
    with _every_plot_drawn(page):
        page.screenshot(path=str(path), full_page=True)
    return Path(path)


def click_plot(page, elem_id: str, fx: float = 0.5, fy: float = 0.5, subplot: str = "xy") -> None:
    """Click a plot's (sub)plot area at a fraction (fx, fy) of it: a heatmap cell, a thumbnail of the model view."""
    reveal(page, elem_id)
    area = page.locator(f'#{elem_id} .nsewdrag[data-subplot="{subplot}"]').first
    area.scroll_into_view_if_needed()
    box = area.bounding_box()
    page.mouse.click(box["x"] + fx * box["width"], box["y"] + fy * box["height"])


def open_accordion(page, label) -> int:
    """Click an accordion's label (a locator of its .label-wrap button) until it is open, at most 3 times: a click
    that lands while the plots above it still change size can miss it (the layout moves between the press and the
    release; CI saw an accordion stay closed). Returns the clicks made; the caller's wait for the content reports a
    label that never opened."""
    for clicks in range(1, 4):
        label.click()
        try:
            page.wait_for_function("el => el.classList.contains('open')", arg=label.element_handle(), timeout=5_000)
            return clicks
        except Exception:  # noqa: BLE001 (playwright's TimeoutError): the click missed; once more
            continue
    return clicks


def open_model_view(page, task: str) -> None:
    """Open the tab's model view (an accordion in its "All heads" section, drawn on opening) and wait for its
    thumbnails."""
    reveal(page, f"{task}-model-view")
    open_accordion(page, page.locator(".label-wrap", has_text="Model view: every layer").filter(visible=True).first)
    wait_drawn(page, f"{task}-model-view")


def screenshot_between(page, path: str | Path, first: str, last: str) -> Path:
    """A picture of the page from the top of element `first` to the bottom of element `last` (CSS selectors)."""
    page.mouse.move(0, 0)
    with _every_plot_drawn(page):  # the plots between at their drawn heights
        top = page.locator(first).first.evaluate("e => e.getBoundingClientRect().top + window.scrollY")
        bottom = page.locator(last).first.evaluate("e => e.getBoundingClientRect().bottom + window.scrollY")
        clip = dict(x=0, y=top - 8, width=page.viewport_size["width"], height=bottom - top + 16)
        page.screenshot(path=str(path), full_page=True, clip=clip)
    return Path(path)


# Where a token is drawn on the large map: the fraction of the way down its rows (the last row of the word wanted).
_ROW_OF_JS = """([id, words]) => {
  const y = Array.from(document.querySelector('#' + id + ' .js-plotly-plot')._fullData[0].y);
  const tokens = y.map(l => l.split(':')[1]);
  for (const w of words) { const i = tokens.lastIndexOf(w); if (i >= 0) return (i + 0.5) / y.length; }
  return 0.9;
}"""
VERDICT_WORDS = ["avoid", "worst", "waste", "boring", "recommend", "best", "great"]


def _views_of(page, url: str, review: str) -> None:
    """A long review analysed, the large map on the log scale with the row of a verdict word clicked."""
    open_tab(page, url, "Sentiment")
    analyze_review(page, review)
    wait_drawn(page, "sentiment-overview")
    choose(page, "sentiment-scale", "log", redraws=("sentiment-attention",))
    mark_plot(page, "sentiment-token-focus")
    click_plot(page, "sentiment-attention", 0.5, page.evaluate(_ROW_OF_JS, ["sentiment-attention", VERDICT_WORDS]))
    wait_redrawn(page, "sentiment-token-focus")


def views_screenshots(page, url: str, review: str, folder: Path) -> list[Path]:
    """The attention views on a long review: the large map (log colour scale) with a token's row and column and
    that token's focus, and the model view. Saved as screenshot-token-focus.png and screenshot-model-view.png (the
    tabs' own screenshots, the phone's included, are benchmarks.page_layout's)."""
    _views_of(page, url, review)
    shots = [screenshot_between(page, folder / "screenshot-token-focus.png", "#sentiment-attention",
                                "#sentiment-token-focus")]  # fmt: skip
    open_model_view(page, "sentiment")
    shots.append(screenshot_between(page, folder / "screenshot-model-view.png", "#sentiment-model-view",
                                    "#sentiment-model-view"))  # fmt: skip
    return shots


def open_section(page, task: str, name: str) -> None:
    """Open a section of a tab's sections (viz.page.layout: "All heads", "Inside one head", "What each head does",
    "Compare", "Training steps") by clicking its button, as a visitor would, and wait until it shows."""
    from viz.page.layout import section_id

    _open_section(page, section_id(task, name))


def _open_section(page, elem_id: str, tries: int = 3) -> None:
    """Click the section's button until the section shows: under the full suite's load on 2 cores a click that came
    before the page's handlers were ready left the section shut (seen once in .ci/run), as a visitor would click
    again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    button = page.locator(f"#{elem_id}-button")
    for _ in range(tries - 1):
        if button.get_attribute("aria-selected") != "true":
            button.click()
        try:
            page.wait_for_selector(f"#{elem_id}", state="visible", timeout=TIMEOUT_MS // tries)
            return
        except PlaywrightTimeout:
            continue
    if button.get_attribute("aria-selected") != "true":
        button.click()
    page.wait_for_selector(f"#{elem_id}", state="visible")


# The sections (viz.page.layout) an element is in, from the page's own layout (window.gradio_config): the parts of a
# closed section are not on the page at all until it is opened, so the page cannot be searched for them.
_SECTIONS_OF_JS = """elemId => {
  const config = window.gradio_config;
  const byId = new Map(config.components.map(c => [c.id, c]));
  const trail = (node, path) => {
    const c = byId.get(node.id);
    const here = c ? [...path, c] : path;
    if (c && c.props && c.props.elem_id === elemId) return here;
    for (const child of node.children || []) { const found = trail(child, here); if (found) return found; }
    return null;
  };
  return (trail(config.layout, []) || []).filter(c => c !== undefined && c.props && c.props.elem_id)
    .filter(c => /-section-/.test(c.props.elem_id) || c.type === 'accordion').map(c => [c.type, c.props.elem_id]);
}"""


def reveal(page, elem_id: str) -> None:
    """Open the section an element is in (viz.page.layout), and the accordions with an elem_id around it (the
    explanation's faithfulness), as a visitor would to see it; nothing for an element in sight already."""
    for kind, around in page.evaluate(_SECTIONS_OF_JS, elem_id):
        if kind == "accordion":
            label = page.locator(f"#{around} > .label-wrap, #{around} .label-wrap").first
            try:  # a section may open its accordion itself (viz.page.layout.TaskPage.opens): a click would close it
                page.wait_for_function("el => el.classList.contains('open')", arg=label.element_handle(), timeout=2_000)
            except Exception:  # noqa: BLE001 (playwright's TimeoutError): closed, then
                open_accordion(page, label)
        else:
            _open_section(page, around)


# The figures of issue 57 for a tab's page as it stands: its height, where its main heatmap starts, the checkboxes
# a visitor sees (in the open tab and section, not in one hidden), and whether the page scrolls sideways.
_PAGE_FIGURES_JS = """task => {
  const top = document.querySelector('#' + task + '-attention').getBoundingClientRect().top + window.scrollY;
  const boxes = Array.from(document.querySelectorAll('input[type=checkbox]')).filter(e => e.checkVisibility());
  const root = document.documentElement;
  return {height: root.scrollHeight, heatmap_top: Math.round(top), checkboxes: boxes.length,
          heads_off_checkboxes: boxes.filter(e => e.closest('#' + task + '-heads-off')).length,
          sideways: root.scrollWidth > root.clientWidth};
}"""


def page_figures(page, task: str) -> dict:
    """{'height', 'heatmap_top' (px from the page's top), 'checkboxes' in sight (of which 'heads_off_checkboxes':
    the heads panel's switch-off boxes), 'sideways' (the page scrolls sideways)} of the open tab."""
    return page.evaluate(_PAGE_FIGURES_JS, task)
