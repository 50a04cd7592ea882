"""README's "What is where" matches the tree: every folder is described, every file it names exists,
and every module of the library (`transformer/`, `pipelines/`) is named."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def table() -> list[tuple[str, str]]:
    """(path cell, description cell) of each row of the section's table."""
    text = (ROOT / "README.md").read_text().split("## What is where", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in text.splitlines() if line.startswith("| `")]
    return [(path.strip(), what.strip()) for path, what in rows]


def names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def tracked_top_level() -> set[str]:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not files:  # not a git checkout (e.g. a source archive): every entry that is not hidden
        return {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}
    return {f.split("/")[0] for f in files if not f.startswith(".")}


def test_every_folder_is_described_and_every_named_path_exists():
    rows = table()
    described = {n.rstrip("/") for path, _ in rows for n in names(path)}
    missing = {p for p in tracked_top_level() if (ROOT / p).is_dir()} - described
    assert not missing, f"folders the README's 'What is where' does not describe: {sorted(missing)}"
    for path, what in rows:
        folders = [n for n in names(path) if n.endswith("/")]
        for n in names(path):
            assert any((ROOT).glob(n.rstrip("/"))), f"README names {n}, which is not in the tree"
        for f in (n for n in names(what) if re.fullmatch(r"[\w.-]+\.(py|txt|jsonl|json)", n)):
            found = any(any((ROOT / d).rglob(f)) for d in folders) if folders else (ROOT / f).exists()
            assert found, f"README names {f} under {path}, which is not there"


def test_every_library_module_is_named():
    rows = dict(table())
    for folder in ("transformer", "pipelines"):
        named = set(names(rows[f"`{folder}/`"]))
        modules = {p.name for p in (ROOT / folder).glob("*.py") if p.name != "__init__.py"}
        assert modules <= named, f"{folder}/ modules the README does not name: {sorted(modules - named)}"
