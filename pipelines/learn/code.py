"""The lines of `transformer/` that compute a step, found now in the source file (never line numbers written down):
an object's own lines (inspect), narrowed to the first line holding one marker and the first line after it holding
another."""

import inspect
from pathlib import Path

import torch

from pipelines.learn.walk import CodeSpan

ROOT = Path(__file__).resolve().parents[2]


def code_span(obj, first: str | None = None, last: str | None = None, shapes: str = "") -> CodeSpan:
    """The lines of obj (a function, method, class or module) from the first holding `first` (default: its first
    line) to the first from there holding `last` (default: its last line), as the file holds them now."""
    lines, start = inspect.getsourcelines(obj)
    start = max(start, 1)  # a module starts at line 0 for inspect
    begin = _find(lines, first, 0) if first else 0
    end = _find(lines, last, begin) if last else len(lines) - 1
    path = Path(inspect.getsourcefile(obj)).resolve()
    file_lines = path.read_text().splitlines(keepends=True)
    a, b = start + begin, start + end  # counted from 1
    return CodeSpan(str(path.relative_to(ROOT)), a, b, "".join(file_lines[a - 1 : b]), shapes)


def _find(lines: list[str], marker: str, begin: int) -> int:
    for i in range(begin, len(lines)):
        if marker in lines[i]:
            return i
    raise LookupError(f"no line holds {marker!r}: the source changed, the Learn step must follow it")


def shapes(**tensors: torch.Tensor) -> str:
    """'x (1, 9, 128), q (1, 9, 4, 32)': the tensors' shapes on this input."""
    return ", ".join(f"{name} {tuple(t.shape)}" for name, t in tensors.items())
