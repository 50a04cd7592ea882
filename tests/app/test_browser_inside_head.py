"""Inside one head in a real headless chromium, on the tiny models, in both tabs: nothing is recorded until the
accordion is opened; then the softmax weights the view prints equal the large heatmap's row shown for the token
picked by a click (opened with none picked, a row of its own), and follow the next click and the head; the norm
colour scale changes the large map; on a phone (390x844) the view fits the screen."""

import browser
import gradio as gr
import numpy as np
import pytest
from page_probes import FIT_JS, TRACE_JS, WEIGHTS_JS

from viz.attention import inside_head_panel
from viz.examples import BENCH_GERMAN
from viz.server import hosting

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(bool(browser.chromium_missing()), reason=f"{browser.chromium_missing()}"),
]
REVIEW = "A warm, funny and beautifully acted film about two brothers who finally talk."
# What the view shows: [layer, head, query row] (positions from 0), or null before it draws.
SHOWN_JS = """id => { const d = document.querySelector('#' + id + ' .inside-head');
  return d ? [d.dataset.layer, d.dataset.head, d.dataset.query].map(Number) : null; }"""


@pytest.fixture
def recordings(monkeypatch):
    """The request of every inside-one-head recording the app makes (each one a model run, queued as that page's
    client's: viz.server.hosting.run_as), in order."""
    calls = []
    run_as = hosting.run_as

    def counted(request, handler, *args):
        if handler is inside_head_panel.record:
            calls.append(request)
        return run_as(request, handler, *args)

    monkeypatch.setattr(hosting, "run_as", counted)
    return calls


def run_input(page, url: str, task: str) -> None:
    """Load the tab and run its input; wait until the token list of token focus is filled."""
    browser.open_tab(page, url, task.title())
    if task == "sentiment":
        browser.analyze_review(page, REVIEW)
    else:
        browser.translate(page, BENCH_GERMAN, decoding="greedy")
    browser.reveal(page, f"{task}-overview")  # the "All heads" section, with token focus
    page.wait_for_function(
        "id => document.querySelector('#' + id + '-token input') !== null && "
        "document.querySelector('#' + id + '-overview .heatmaplayer image') !== null",
        arg=task,
    )


def click_row(page, task: str, fy: float) -> int:
    """Click a row of the large heatmap (token focus picks its token); the row's position."""
    browser.mark_plot(page, f"{task}-attention")
    browser.click_plot(page, f"{task}-attention", 0.5, fy)
    browser.wait_redrawn(page, f"{task}-attention")
    return int(page.locator(f"#{task}-token input").input_value().split(":")[0])


# What the page shows when the view does not draw: the accordion's state, the view's text, the controls it reads.
STATE_JS = """task => { const view = document.getElementById(task + '-inside-head');
  const label = document.querySelector('#' + task + '-inside-head-accordion .label-wrap');
  const value = id => document.querySelector('#' + task + '-' + id + ' input')?.value;
  return {open: label && label.classList.contains('open'), view: view && view.innerText.slice(0, 300),
          token: value('token'), step: value('step'), busy: document.querySelectorAll('[aria-busy=true]').length}; }"""


def open_inside_head(page, task: str) -> None:
    """Open the tab's "Inside one head" section, which opens the view's accordion (viz.page.layout.TaskPage.opens),
    and wait until the view is drawn; CI once saw its view never made."""
    browser.open_section(page, task, "Inside one head")
    label = page.locator(f"#{task}-inside-head-accordion .label-wrap")
    page.wait_for_function("el => el.classList.contains('open')", arg=label.element_handle())
    try:
        page.wait_for_selector(f"#{task}-inside-head .ih-weights td", state="attached")
    except Exception as e:  # noqa: BLE001 (playwright's TimeoutError): say what the page showed instead
        raise AssertionError(f"the view did not draw: {page.evaluate(STATE_JS, task)}") from e
    browser.wait_drawn(page, f"{task}-inside-head-heads", ".barlayer .point")


def wait_view_of(page, task: str, row: int, head: int = 0) -> None:
    """Wait until the view shows that row of that head (layer 1)."""
    page.wait_for_function(
        f"([id, want]) => JSON.stringify(({SHOWN_JS})(id)) === JSON.stringify(want)",
        arg=[f"{task}-inside-head", [0, head, row]],
    )


def assert_weights_are_the_row_shown(page, task: str, row: int) -> None:
    """The softmax weights the view prints (3 decimals) are the large heatmap's row (whole thousandths of the
    weights, 1.000 drawn as 0.999) on the linear colour scale."""
    labels, z = page.evaluate(TRACE_JS, f"{task}-attention")
    assert labels[row].startswith(f"{row}:")
    printed = np.array([float(w) for w in page.evaluate(WEIGHTS_JS, f"{task}-inside-head")])
    assert len(printed) == len(z[row]) > 1
    np.testing.assert_allclose(np.minimum(printed, 0.999), np.asarray(z[row]) / 1000, atol=1.5e-3)
    assert abs(printed.sum() - 1) < 0.01 * len(printed)  # a softmax row (each weight rounded)


@pytest.mark.parametrize("task", ["sentiment", "translation"])
def test_the_view_prints_the_heatmap_row_of_the_token_picked(page, app_url, recordings, task):
    page.set_viewport_size({"width": 1440, "height": 900})
    run_input(page, app_url, task)
    browser.choose(page, f"{task}-scale", "linear")
    row = click_row(page, task, 0.3)
    assert recordings == []  # closed: nothing recorded, nothing of it sent
    open_inside_head(page, task)
    wait_view_of(page, task, row)
    assert_weights_are_the_row_shown(page, task, row)
    assert len(recordings) == 1 and isinstance(recordings[0], gr.Request)  # run as this page's client

    second = click_row(page, task, 0.8)  # open: a new token redraws from the recording
    assert second != row
    wait_view_of(page, task, second)
    assert_weights_are_the_row_shown(page, task, second)
    browser.choose(page, f"{task}-head", "2", redraws=(f"{task}-attention",))  # and so does a new head
    wait_view_of(page, task, second, head=1)
    assert_weights_are_the_row_shown(page, task, second)
    assert len(recordings) == 1  # no model run for a redraw

    linear = page.evaluate(TRACE_JS, f"{task}-attention")[1]
    browser.choose(page, f"{task}-scale", "weight × value norm", redraws=(f"{task}-attention",))
    assert page.evaluate(TRACE_JS, f"{task}-attention")[1] != linear  # the norm scale changes the large map
    browser.choose(page, f"{task}-scale", "linear", redraws=(f"{task}-attention",))


@pytest.mark.parametrize("task", ["sentiment", "translation"])
def test_opened_with_no_token_picked_the_view_shows_a_row_of_the_heatmap(page, app_url, task):
    """No empty prompt: the view opens on a row (the step's in translation, the first content token in sentiment),
    says which, and prints the large heatmap's row."""
    page.set_viewport_size({"width": 1440, "height": 900})
    run_input(page, app_url, task)
    browser.choose(page, f"{task}-scale", "linear")
    open_inside_head(page, task)
    layer, head, row = page.evaluate(SHOWN_JS, f"{task}-inside-head")
    assert (layer, head) == (0, 0)
    note = page.locator(f"#{task}-inside-head .ih-note").inner_text()
    assert note.startswith(f"Row {row}:") and "for another" in note
    labels = page.evaluate(TRACE_JS, f"{task}-attention")[0]
    if task == "sentiment":  # the first content token: no special token or punctuation before it
        assert all(not label.split(":", 1)[1].strip().isalnum() for label in labels[:row])
    assert_weights_are_the_row_shown(page, task, row)


@pytest.mark.parametrize("task", ["sentiment", "translation"])
def test_on_a_phone_the_view_fits_the_screen(page, app_url, task):
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        run_input(page, app_url, task)
        row = click_row(page, task, 0.3)
        open_inside_head(page, task)
        wait_view_of(page, task, row)
        page.locator(f"#{task}-inside-head details summary").click()  # every weight of the row, opened
        fit = page.evaluate(FIT_JS, f"{task}-inside-head")
        assert fit["page"] <= fit["window"] == 390  # no sideways scrolling of the page
        assert 0 <= fit["view"][0] and fit["view"][1] <= 390
        assert fit["cells"] and all(w >= 6 and h >= 6 and right <= 390 for w, h, right in fit["cells"])
        assert_weights_are_the_row_shown(page, task, row)
    finally:
        page.set_viewport_size({"width": 1400, "height": 1000})
