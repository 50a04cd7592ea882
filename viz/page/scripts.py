"""The page's JavaScript, kept in viz/page/js/ (one file a step, each opening with what it does), read once.

A file holds either statements (run as they are: the page's head) or one function expression; a function that
needs Python's values (an elem_id, a tab's example) takes them as parameters, and call() writes the call:
`(<file>)(<arguments as JSON>)`, which is what gradio's `js=` and `js_on_load=` are given.
"""

import json
from functools import cache
from pathlib import Path

FOLDER = Path(__file__).with_name("js")


class Code(str):
    """An argument for call() that is JavaScript already (another file's call), passed as it is, not as JSON."""


@cache
def script(name: str) -> str:
    """The code of viz/page/js/<name>, without its whole-line comments (every event's js travels in the page's
    config, each time it is used)."""
    lines = (FOLDER / name).read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("//")).strip()


def call(name: str, *args) -> str:
    """JavaScript: the function in viz/page/js/<name> called with `args` (JSON, or Code as it is)."""
    given = ", ".join(a if isinstance(a, Code) else json.dumps(a) for a in args)
    return f"(\n{script(name)}\n)({given})"
