"""The layout's figures (the codebase-you-can-walk targets), each measured with `ast` or a text search, printed by
`python tests/project/test_structure.py` and held by the tests below. A target not met yet is a strict xfail: it fails
the suite the day it is met, so that its mark is removed and the figure then holds."""

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TASK_NAMES = {"sentiment", "translation", "lm"}
PACKAGES = ("transformer", "pipelines", "training", "viz")
REGISTRIES = {ROOT / "pipelines" / "tasks.py", ROOT / "viz" / "tasks.py"}
JS_HINTS = re.compile(r"document\.|=>|\bfunction\s*\(|querySelector|addEventListener")


def py_files(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py") if "__pycache__" not in p.parts)


def top_modules(package: str) -> list[str]:
    return sorted(p.name for p in (ROOT / package).glob("*.py") if p.name not in ("__init__.py", "__main__.py"))


def imports_of(path: Path) -> set[str]:
    """Modules a file imports: import statements, and importlib calls given a name or a path (running a benchmark
    as a process, `python -m benchmarks.NAME`, is not importing it)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in (
            "import_module",
            "spec_from_file_location",
        ):
            names |= {ast.unparse(a) for a in node.args}
    return names


def tests_importing_benchmarks() -> list[str]:
    hits = []
    for p in py_files("tests"):
        if p.name == "test_structure.py":
            continue
        found = [n for n in imports_of(p) if n == "benchmarks" or n.startswith("benchmarks") or '"benchmarks"' in n]
        hits += [f"{p.relative_to(ROOT)}: {n}" for n in sorted(found)]
    return hits


def grab_bag_modules() -> list[str]:
    """Modules whose name says nothing of what they hold (common.py held seven things: folder I/O, the device, token
    spans, the pipeline's base, @runs_model, the batch runner, the NaN guard)."""
    vague = {"common.py", "utils.py", "helpers.py", "misc.py", "util.py"}
    return [str(p.relative_to(ROOT)) for p in py_files(*PACKAGES) if p.name in vague]


def tests_outside_their_folders() -> list[str]:
    """Test files that are not in the folder of what they test: tests/<package>/ for each package, tests/app/ for the
    app as served, tests/project/ for the repository as a whole."""
    folders = {*PACKAGES, "app", "project"}
    tests = [p for p in py_files("tests") if p.name.startswith("test_")]
    return [str(p.relative_to(ROOT)) for p in tests if p.parent.name not in folders]


def tests_importing_tests() -> list[str]:
    """Test modules that other tests import: what tests share lives in conftest.py (fixtures) or tests/support/."""
    test_modules = {p.stem for p in py_files("tests") if p.name.startswith("test_")}
    hits = []
    for p in py_files("tests"):
        found = [n for n in imports_of(p) if n.split(".")[-1] in test_modules]
        hits += [f"{p.relative_to(ROOT)}: {n}" for n in sorted(found)]
    return hits


def benchmarks_editing_sys_path() -> list[str]:
    return [
        str(p.relative_to(ROOT))
        for p in py_files("benchmarks")
        if re.search(r"sys\.path\.(insert|append)", p.read_text())
    ]


def task_name_uses() -> list[str]:
    """Task names as dict keys or in comparisons, outside the two task registries (tests and benchmarks aside)."""
    hits = []
    for p in py_files("pipelines", "training", "viz") + [ROOT / "app.py"]:
        if p in REGISTRIES:
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            consts = []
            if isinstance(node, ast.Dict):
                consts = [k for k in node.keys if isinstance(k, ast.Constant)]
            elif isinstance(node, ast.Compare):
                consts = [c for c in [node.left, *node.comparators] if isinstance(c, ast.Constant)]
            hits += [f"{p.relative_to(ROOT)}:{c.lineno}" for c in consts if c.value in TASK_NAMES]
    return hits


def forwarding_and_named_methods() -> list[str]:
    hits = []
    for p in py_files("pipelines"):
        text = p.read_text()
        hits += [f"{p.relative_to(ROOT)}: __getattr__" for _ in re.finditer(r"def __getattr__\(", text)]
        hits += [f"{p.relative_to(ROOT)}: batch_method" for _ in re.finditer(r"batch_method\s*=", text)]
    return hits


def javascript_in_python() -> list[str]:
    hits = []
    for p in py_files("viz") + [ROOT / "app.py"]:
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and JS_HINTS.search(node.value):
                hits.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    return hits


def figures() -> dict[str, int]:
    return {
        "top-level modules in pipelines/ (at most 12)": len(top_modules("pipelines")),
        "top-level modules in training/ (at most 12)": len(top_modules("training")),
        "__getattr__ forwarding or string-named batch methods in pipelines/ (0)": len(forwarding_and_named_methods()),
        "modules named common, utils, helpers or misc in the packages (0)": len(grab_bag_modules()),
        "task names as keys or comparisons outside the registries (at most 2)": len(task_name_uses()),
        "tests importing benchmarks (0)": len(tests_importing_benchmarks()),
        "test files outside the folder of what they test (0)": len(tests_outside_their_folders()),
        "test modules imported by other tests (0)": len(tests_importing_tests()),
        "benchmarks editing sys.path (0)": len(benchmarks_editing_sys_path()),
        "JavaScript in Python strings in viz/ and app.py (0)": len(javascript_in_python()),
    }


def test_training_has_at_most_12_top_level_modules():
    assert len(top_modules("training")) <= 12, top_modules("training")


def test_no_benchmark_edits_sys_path():
    assert benchmarks_editing_sys_path() == []


def test_no_test_imports_benchmarks():
    assert tests_importing_benchmarks() == []


def test_modules_are_named_by_what_they_hold():
    assert grab_bag_modules() == []


def test_tests_mirror_the_packages():
    assert tests_outside_their_folders() == []
    assert all((ROOT / "tests" / p).is_dir() for p in PACKAGES)


def test_tests_share_through_conftest_and_support_not_each_other():
    assert tests_importing_tests() == []


def test_pipelines_has_at_most_12_top_level_modules():
    assert len(top_modules("pipelines")) <= 12, top_modules("pipelines")


def test_no_forwarding_or_string_named_batch_methods():
    assert forwarding_and_named_methods() == []


def test_task_names_live_in_the_two_registries():
    assert len(task_name_uses()) <= 2, task_name_uses()


def test_no_javascript_in_python_strings():
    assert javascript_in_python() == []


if __name__ == "__main__":
    for name, value in figures().items():
        print(f"{value:5d}  {name}")
    if "-v" in sys.argv:
        print("\n".join(task_name_uses() + javascript_in_python() + tests_importing_benchmarks()))
