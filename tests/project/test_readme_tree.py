"""README's "What is where" is a short tree of the repository: every top-level folder and every subpackage of the
project's packages has its line, and every path it names exists."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("transformer", "pipelines", "training", "viz")


def tree() -> str:
    section = (ROOT / "README.md").read_text().split("## What is where", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1]


def named_folders() -> set[str]:
    """Folder paths the tree names: a top-level `name/`, or an indented `sub/` under the last top-level one."""
    names, top = set(), None
    for line in tree().splitlines():
        head = line.split("  ")[0] if not line.startswith(" ") else line.strip().split("   ")[0]
        for item in re.findall(r"([\w.]+/)", head):
            if not line.startswith(" "):
                top = item.rstrip("/")
                names.add(top)
            elif top:
                names.add(f"{top}/{item.rstrip('/')}")
    return names


def tracked_top_level() -> set[str]:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not files:  # not a git checkout (e.g. a source archive): every entry that is not hidden
        return {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}
    return {f.split("/")[0] for f in files if not f.startswith(".")}


def test_every_folder_and_subpackage_has_a_line():
    named = named_folders()
    folders = {p for p in tracked_top_level() if (ROOT / p).is_dir()}
    assert folders <= named, f"folders the README's tree does not show: {sorted(folders - named)}"
    subpackages = {
        f"{pkg}/{d.name}" for pkg in PACKAGES for d in (ROOT / pkg).iterdir() if (d / "__init__.py").is_file()
    }
    assert subpackages <= named, f"subpackages the README's tree does not show: {sorted(subpackages - named)}"


def test_every_named_path_exists():
    for folder in named_folders():
        assert (ROOT / folder).is_dir(), f"the README's tree names {folder}/, which is not in the tree"
    for name in re.findall(r"\b([\w]+\.py)\b", tree()):
        assert list(ROOT.glob(f"**/{name}")), f"the README's tree names {name}, which is not in the tree"
