"""What the page does by itself, in the browser: open the tab a link names, land each tab on its worked example, and
press a tab's button once an example or a link has filled its box (so that what is shown is what a click shows).

Each step is a file of viz/page/js given the page's tools (page_tools.js: the link in the address, waiting for the
page) and its own values.
"""

from ..server.events import PRIVATE
from ..share.links import LEARN, TABS
from .scripts import Code, call

PAGE = Code(call("page_tools.js", list(TABS), LEARN))


def page_step(name: str, *args) -> str:
    """An event's js: the step in viz/page/js/<name>, given the page's tools and `args`."""
    return call(name, PAGE, *args)


def select_tab_on_load(demo) -> None:
    """Open the tab a link names (`?tab=translation`, with or without text)."""
    demo.load(None, None, None, js=page_step("open_linked_tab.js"), **PRIVATE)


def land_on_examples(demo, tabs: dict) -> None:
    """Each tab (task -> (its gr.Tab, the example it opens on)) runs its example when it is first shown: the first
    task tab (TABS[0]) as the page loads when the address names it (else when first clicked: the page opens on the
    Learn tab), the others when they are selected. A link's own text wins."""
    for task, (tab, text) in tabs.items():
        if task == TABS[0]:
            demo.load(None, None, None, js=page_step("land_on_example.js", task, text, True), **PRIVATE)
        else:
            tab.select(None, None, None, js=page_step("land_on_example.js", task, text, False), **PRIVATE)


def press_after(event, task: str, box) -> None:
    """After `event` put a text in the tab's box `box` (an example's click), press the tab's button, as the visitor
    would: the result beside the box is then the text's in it. An example only filled the box, and the last
    review's "positive 97%" stayed beside "Two hours of my life I will never get back..."."""
    event.then(None, [box], None, js=page_step("press_when_shown.js", task), **PRIVATE)


def press_for_link(event, task: str) -> None:
    """After `event` filled the tab's inputs from the page's link (when the link names this tab), press the tab's
    own button: the same run, with every panel, as a click."""
    event.then(None, None, None, js=page_step("press_for_link.js", task), **PRIVATE)
