"""The developers' guide in a test: no function outside tests/ is longer than 60 lines."""

import ast
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 60
SKIP = {"tests", "runs", "build", "dist", "node_modules"}  # and every hidden folder (.git, .venv, ...)


def source_files() -> list[Path]:
    out = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP and not d.startswith(".")]
        out += [Path(folder) / f for f in files if f.endswith(".py")]
    return out


def long_functions(path: Path) -> list[str]:
    """'path:line name (n lines)' for each function or method over MAX_LINES lines, decorators excluded."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = node.end_lineno - node.lineno + 1
            if n > MAX_LINES:
                out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_the_check_sees_the_code():
    names = {p.relative_to(ROOT).as_posix() for p in source_files()}
    assert {"app.py", "transformer/attention.py", "training/engine/loop.py"} <= names
    assert not any(n.startswith("tests/") for n in names)


def test_no_function_outside_tests_is_longer_than_60_lines():
    too_long = [f for p in source_files() for f in long_functions(p)]
    assert not too_long, "split these functions:\n" + "\n".join(too_long)
