"""No import cycles in the training package, the model package or the app's (viz): every import counts, top-level
or inside a function (a lazy import hides a cycle from Python at start-up, not from a reader)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("training", "transformer", "viz", "pipelines")


def module_files(package: str) -> dict[str, Path]:
    """{dotted module name: file} of a package's modules (the package itself for __init__.py)."""
    out = {}
    for path in (ROOT / package).rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def imported(module: str, path: Path, node: ast.Import | ast.ImportFrom, modules=()) -> set[str]:
    """Dotted names an import statement may load: the module, and each imported name as a submodule. `from pkg
    import a, b` of submodules only reads those (the package itself is already loaded as their parent)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    base = node.module or ""
    if node.level:
        parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join(parts + ([base] if base else []))
    names = {f"{base}.{a.name}" for a in node.names}
    return names if names <= set(modules) else {base} | names


def import_graph(packages: tuple[str, ...]) -> dict[str, set[str]]:
    modules = {k: v for p in packages for k, v in module_files(p).items()}
    graph = {}
    for name, path in modules.items():
        nodes = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Import | ast.ImportFrom)]
        graph[name] = {m for n in nodes for m in imported(name, path, n, modules) if m in modules and m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None (depth-first search with colours)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_check_finds_a_cycle_and_reads_relative_imports():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    graph = import_graph(("training",))
    assert "training.engine.loop" in graph["training.cli"]  # a lazy `from .loop import ...` inside main()
    assert "training.engine.checkpoint" in graph["training.engine.loop"]


@pytest.mark.parametrize("package", CHECKED)
def test_no_import_cycle(package):
    cycle = find_cycle(import_graph((package,)))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
