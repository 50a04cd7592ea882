"""What goes into the demo Space: the app, the packages it imports, and only the requirements it needs."""

import re
import shutil
from pathlib import Path

SPACE_SOURCES = ("app.py", "transformer", "pipelines", "viz")  # copied into the Space (viz when present)
SPACE_REQUIREMENTS = ("requirements-lib.txt", "requirements-app.txt")  # the library and the app, no training
# From the training stack, what the translation tab needs to offer the pre-trained Marian from the Hub
# (viz.models.loading.PRETRAINED_TRANSLATOR: `transformers` reads it, its tokenizer is sentencepiece).
SPACE_HUB_REQUIREMENTS = ("requirements-train.txt", ("transformers", "sentencepiece"))
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


def is_bundled(value: str) -> bool:
    """A Space variable naming a model folder inside the Space (assets/<task>), not a Hub repo id."""
    return value.startswith("assets/")


def bundled_alternatives(variables: dict[str, str]) -> list[str]:
    """The model folders the app offers beside a variable's model (viz.models.loading.BUNDLED_ALTERNATIVES: the
    from-scratch sentiment model one click from the pre-trained one), for the variables the Space sets."""
    from viz.models.loading import BUNDLED_ALTERNATIVES

    return [folder for var in variables for folder in BUNDLED_ALTERNATIVES.get(var, [])]


def missing_sources(root: Path) -> list[str]:
    """The files the Space cannot do without that `root` lacks."""
    needed = ("app.py", "transformer", "pipelines", *SPACE_REQUIREMENTS)
    return [p for p in needed if not (root / p).exists()]


def space_requirements(root: Path) -> str:
    """requirements.txt of the Space: the library's and the app's pins, torch from the CPU index, and the pins of
    what reading the pre-trained translator takes (SPACE_HUB_REQUIREMENTS)."""
    lines = []
    for name in SPACE_REQUIREMENTS:
        lines += [line for line in (root / name).read_text().splitlines() if line.strip() and line[0] != "#"]
    train, names = SPACE_HUB_REQUIREMENTS  # without the file, the Space offers our translator alone
    train = (root / train).read_text().splitlines() if (root / train).is_file() else []
    lines += [line for line in train if re.match(rf"({'|'.join(names)})\b", line)]
    # Spaces run on CPU unless upgraded: the CPU wheel of torch saves gigabytes of CUDA libraries.
    return "\n".join([f"--extra-index-url {TORCH_CPU_INDEX}", *lines]) + "\n"


def copy_space_sources(root: Path, folder: Path, variables: dict[str, str]) -> str:
    """Copy the app, its packages and the bundled model folders into `folder`; returns its requirements."""
    for name in SPACE_SOURCES:
        if (root / name).is_dir():
            shutil.copytree(root / name, folder / name, ignore=_SKIP)
        elif (root / name).is_file():
            shutil.copy2(root / name, folder / name)
    for value in [*variables.values(), *bundled_alternatives(variables)]:
        if is_bundled(value) and (root / value).is_dir() and not (folder / value).exists():
            shutil.copytree(root / value, folder / value, ignore=_SKIP)
    requirements = space_requirements(root)
    (folder / "requirements.txt").write_text(requirements)
    return requirements


def gradio_version(requirements: str) -> str:
    """The pinned gradio version: the Space's sdk_version must match what the app uses."""
    m = re.search(r"^gradio==([\w.]+)\s*$", requirements, re.M)
    return m.group(1) if m else "6.31.0"
