"""The page's JavaScript (viz/page/js, read by viz.page.scripts): every file parses, and the steps the page takes by
itself do what they say, run in node against a stand-in page (the browser tests run them in chromium)."""

import json
import shutil
import subprocess

import pytest

from viz.page import html_head, scripts
from viz.page.landing import page_step

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="needs node")

# A stand-in page: elements by selector (querySelector and getElementById look them up), clicks, input events and
# listeners recorded; `js` (an event's js) is called `times` times with `args`, and the page read `wait` ms later.
STAND_IN = """
const given = JSON.parse(process.argv[1]);
const seen = {clicks: [], inputs: [], listeners: [], results: []};
const make = (sel, props) => Object.assign({
  value: '', attrs: {},
  click() { seen.clicks.push(sel); },
  dispatchEvent(e) { seen.inputs.push([sel, e.type, this.value]); },
  addEventListener(type) { seen.listeners.push([sel, type]); },
  setAttribute(k, v) { this.attrs[k] = v; },
  removeAttribute(k) { delete this.attrs[k]; },
}, props);
const elements = Object.fromEntries(Object.entries(given.elements).map(([s, p]) => [s, make(s, p)]));
global.window = {location: {search: given.search, origin: 'https://a.hf.space', pathname: '/'}};
global.document = {querySelector: s => elements[s] || null, getElementById: id => elements['#' + id] || null};
global.Event = class { constructor(type) { this.type = type; } };
global.requestAnimationFrame = f => setTimeout(f, 0);
const fn = eval(given.js);
(async () => {
  for (let i = 0; i < given.times; i++) seen.results.push(await fn(...given.args));
  setTimeout(() => {
    seen.attrs = Object.fromEntries(Object.entries(elements).map(([s, e]) => [s, e.attrs]));
    console.log(JSON.stringify(seen));
    process.exit(0);  // a step still waiting (as a page would, for two minutes) is cut short
  }, given.wait);
})();
"""
BOX, SUBMIT = "#sentiment-input textarea", "#sentiment-submit"


def run_on_page(js: str, elements: dict, search: str = "", args=(), times: int = 1, wait: int = 150) -> dict:
    given = dict(js=js, elements=elements, search=search, args=list(args), times=times, wait=wait)
    proc = subprocess.run([NODE, "-e", STAND_IN, json.dumps(given)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@needs_node
@pytest.mark.parametrize("path", sorted(scripts.FOLDER.glob("*.js")), ids=lambda p: p.name)
def test_every_script_parses_as_a_function_or_as_statements(path):
    """As the page gets it: viz.page.scripts.script drops whole-line comments."""
    check = "const s = process.argv[1]; try { new Function('(' + s + '\\n)'); } catch (e) { new Function(s); }"
    parsed = subprocess.run([NODE, "-e", check, scripts.script(path.name)], capture_output=True, text=True, timeout=30)
    assert parsed.returncode == 0, parsed.stderr


def test_call_passes_values_as_json_and_code_as_it_is():
    js = scripts.call("rerun_tab.js", 'a"b', scripts.Code("window.x"))
    assert js.startswith("(\n" + scripts.script("rerun_tab.js")) and js.endswith(')("a\\"b", window.x)')


def test_the_head_carries_the_theme_and_the_plot_wrapper_without_share_buttons():
    head = html_head.head_html()
    assert scripts.script("plot_theme.js") in head and scripts.script("plotly_wrapper.js") in head
    assert head.count("<script>") == head.count("</script>") >= 3


@needs_node
def test_a_tab_lands_on_its_example_once_when_the_address_names_no_text():
    js = page_step("land_on_example.js", "sentiment", "A fine film.", False)
    seen = run_on_page(js, {BOX: {}, SUBMIT: {}}, times=2)
    assert seen["inputs"] == [[BOX, "input", "A fine film."]] and seen["clicks"] == [SUBMIT]


@needs_node
@pytest.mark.parametrize(
    "search, value", [("?text=Mine.", ""), ("", "typed first")], ids=["a link's text", "the visitor's text"]
)
def test_a_link_or_the_visitors_own_text_wins_over_the_example(search, value):
    js = page_step("land_on_example.js", "sentiment", "A fine film.", True)
    seen = run_on_page(js, {BOX: {"value": value}, SUBMIT: {}}, search=search)
    assert seen["inputs"] == [] and seen["clicks"] == []


@needs_node
def test_the_first_tab_lands_when_first_clicked_if_the_address_opened_another():
    button = 'button[data-tab-id="sentiment"]'
    js = page_step("land_on_example.js", "sentiment", "A fine film.", True)
    seen = run_on_page(js, {BOX: {}, SUBMIT: {}, button: {}}, search="?tab=translation")
    assert seen["listeners"] == [[button, "click"]] and seen["inputs"] == [] and seen["clicks"] == []


@needs_node
@pytest.mark.parametrize("search, pressed", [("?tab=sentiment&text=Fine.", True), ("?tab=lm&text=Fine.", False)])
def test_a_link_presses_its_own_tabs_button_once_the_text_is_in(search, pressed):
    seen = run_on_page(page_step("press_for_link.js", "sentiment"), {BOX: {"value": "Fine."}, SUBMIT: {}}, search)
    assert seen["clicks"] == ([SUBMIT] if pressed else [])


@needs_node
@pytest.mark.parametrize("shown, pressed", [("Fine.", True), ("An older review.", False)])
def test_an_example_presses_the_button_only_once_its_text_is_shown(shown, pressed):
    seen = run_on_page(
        page_step("press_when_shown.js", "sentiment"), {BOX: {"value": shown}, SUBMIT: {}}, args=["Fine."]
    )
    assert seen["clicks"] == ([SUBMIT] if pressed else [])


@needs_node
@pytest.mark.parametrize("search, clicked", [("?tab=lm", ['button[data-tab-id="lm"]']), ("?tab=nope", [])])
def test_the_tab_a_link_names_is_opened(search, clicked):
    tabs = {'button[data-tab-id="lm"]': {}, 'button[data-tab-id="sentiment"]': {}}
    assert run_on_page(page_step("open_linked_tab.js"), tabs, search)["clicks"] == clicked


@needs_node
def test_the_busy_mark_is_set_with_the_inputs_passed_on_and_cleared_after_paint():
    marked = run_on_page(scripts.call("mark_busy.js", "out"), {"#out": {}}, args=["text", 3])
    assert marked["attrs"]["#out"] == {"aria-busy": "true"} and marked["results"] == [["text", 3]]
    cleared = run_on_page(scripts.call("after_paint.js", "out"), {"#out": {"attrs": {"aria-busy": "true"}}})
    assert cleared["attrs"]["#out"] == {}


@needs_node
@pytest.mark.parametrize("value, pressed", [("A review.", True), ("  ", False)])
def test_another_model_reruns_the_tab_only_with_text_in_its_box(value, pressed):
    seen = run_on_page(scripts.call("rerun_tab.js", "sentiment"), {BOX: {"value": value}, SUBMIT: {}})
    assert seen["clicks"] == ([SUBMIT] if pressed else [])


@needs_node
def test_a_share_link_starts_from_the_pages_own_address():
    seen = run_on_page(scripts.script("with_page_address.js"), {}, args=["", "text", 2])
    assert seen["results"] == [["https://a.hf.space/", "text", 2]]


@needs_node
@pytest.mark.parametrize(
    "search, clicked",
    [("", []), ("?learn=3", []), ("?tab=learn&text=Fine.", []), ("?text=Fine.", ['button[data-tab-id="sentiment"]'])],
    ids=["a bare address", "a Learn step", "the Learn tab named", "an older link with text"],
)
def test_the_page_opens_on_the_learn_tab_unless_a_link_names_another(search, clicked):
    tabs = {'button[data-tab-id="lm"]': {}, 'button[data-tab-id="sentiment"]': {}}
    assert run_on_page(page_step("open_linked_tab.js"), tabs, search)["clicks"] == clicked


@needs_node
def test_the_task_tab_lands_when_first_clicked_since_the_page_opens_on_the_learn_tab():
    button = 'button[data-tab-id="sentiment"]'
    seen = run_on_page(
        page_step("land_on_example.js", "sentiment", "A fine film.", True), {BOX: {}, SUBMIT: {}, button: {}}
    )
    assert seen["listeners"] == [[button, "click"]] and seen["inputs"] == [] and seen["clicks"] == []
