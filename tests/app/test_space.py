"""The Space folder starts with only its own requirements installed (requirements-lib.txt + requirements-app.txt).

The app runs in a fresh interpreter from the assembled Space folder, where every module that only the
training stack brings (transformers, datasets, sacrebleu, accelerate, ...) fails to import, as it would
on a Space that installed nothing else; the project's own `training/`, `benchmarks/` and `tests/` are
not on its path.
"""

import importlib.metadata as md
import json
import shutil
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement

from training.publish import build_space_folder
from training.release.space import SPACE_HUB_REQUIREMENTS
from viz.models.loading import PRETRAINED_TRANSLATOR

ROOT = Path(__file__).resolve().parents[2]


def pinned(*files: str) -> list[str]:
    """Distribution names pinned in requirement files (following -r)."""
    names = []
    for name in files:
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line.startswith("-r "):
                names += pinned(line[3:].strip())
            elif line and not line.startswith("-"):
                names.append(Requirement(line).name)
    return names


def closure(names: list[str]) -> set[str]:
    """The distributions `names` install, with their dependencies (no extras), as installed here."""
    norm = lambda n: n.lower().replace("_", "-").replace(".", "-")  # noqa: E731
    seen, todo = set(), [norm(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for req in md.requires(name) or []:
            r = Requirement(req)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(norm(r.name))
    return seen


def modules_only_training_brings() -> list[str]:
    """Top-level import names that come only with requirements.txt's extra (training) distributions, but those the
    Space installs for the pre-trained translator (transformers, sentencepiece)."""
    space = pinned("requirements-lib.txt", "requirements-app.txt") + list(SPACE_HUB_REQUIREMENTS[1])
    extra = closure(pinned("requirements.txt")) - closure(space)
    norm = lambda n: n.lower().replace("_", "-").replace(".", "-")  # noqa: E731
    return sorted(
        module
        for module, dists in md.packages_distributions().items()
        if all(norm(d) in extra for d in dists) and module.isidentifier()
    )


APP_IN_SPACE = """
import importlib.abc, json, sys
blocked = set(json.loads(sys.argv[1]))
class NotInSpace(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"{name} is not installed in the Space", name=name)
sys.meta_path.insert(0, NotInSpace())
sys.path.insert(0, ".")
import app
from viz.examples import CONTRAST_FILE, contrast_pairs
from viz.models.loading import alternative_sources, load_lm, load_models
sentiment, translation = load_models()
lm, lm_models = load_lm()
assert sentiment.pipeline and translation.pipeline and lm.pipeline, (sentiment.error, translation.error, lm.error)
demo = app.build_demo(sentiment.pipeline, translation.pipeline, lm.pipeline, lm_models=tuple(lm_models),
                      sentiment_models=tuple(alternative_sources("SENTIMENT_MODEL")),
                      translation_models=tuple(alternative_sources("TRANSLATION_MODEL")), landing=True)
_, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True)
import urllib.request
assert urllib.request.urlopen(url, timeout=60).status == 200
print(json.dumps({"label": sentiment.pipeline("A fine film.").label, "url": url,
                  "continuation": lm.pipeline("A fine", max_new_tokens=3).continuation,
                  "alternatives": alternative_sources("SENTIMENT_MODEL"),
                  "translators": alternative_sources("TRANSLATION_MODEL"),
                  "contrast_file": str(CONTRAST_FILE.resolve()), "pairs": len(contrast_pairs()),
                  "training_loaded": sorted(m for m in sys.modules if m.partition(".")[0] in blocked)}))
demo.close()
"""


def test_training_modules_are_blocked_and_the_app_needs_none_of_them():
    blocked = modules_only_training_brings()
    assert {"datasets", "sacrebleu", "accelerate", "pyarrow"} <= set(blocked)
    assert not {"torch", "gradio", "tokenizers", "huggingface_hub", "plotly", "numpy", "transformers"} & set(blocked)


def test_space_app_starts_with_only_its_requirements(tmp_path, sentiment_dir, translation_dir, lm_dir):
    """The assembled Space, started from its own folder with the training stack blocked, as app.py's main() starts
    it: every tab's model, the sentiment tab's alternative and the contrast set are the Space's own files."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("app.py", "transformer", "pipelines", "viz", "requirements-lib.txt", "requirements-app.txt",
                 "requirements-train.txt"):  # fmt: skip
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, project / name)
    for name, src in (("sentiment", sentiment_dir), ("sentiment-scratch", sentiment_dir),
                      ("translation", translation_dir), ("lm", lm_dir)):  # fmt: skip
        shutil.copytree(src, project / "assets" / name)
    variables = {"SENTIMENT_MODEL": "assets/sentiment", "TRANSLATION_MODEL": "assets/translation"}
    variables["LM_OURS_MODEL"] = "assets/lm"  # as publish space bundles them
    space = tmp_path / "space"
    space.mkdir()
    files = build_space_folder(space, variables, root=project)
    assert not [f for f in files if f.split("/")[0] in ("training", "benchmarks", "tests")]
    assert {"assets/lm/config.json", "assets/sentiment-scratch/config.json", "viz/data/contrast_pairs.jsonl"} <= set(
        files
    )
    page_js = {f"viz/page/js/{p.name}" for p in (ROOT / "viz" / "page" / "js").glob("*.js")}
    assert page_js and page_js <= set(files)  # the page's JavaScript (viz.page.scripts) travels with viz/
    reqs = (space / "requirements.txt").read_text()
    assert "gradio==" in reqs and "torch==" in reqs and "datasets" not in reqs
    assert "transformers==" in reqs and "sentencepiece==" in reqs  # the pre-trained translator, from the Hub
    env = {"HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PATH": "/usr/bin:/bin", **variables}
    env["GRADIO_TEMP_DIR"] = str(tmp_path / "gradio")
    cmd = [sys.executable, "-I", "-c", APP_IN_SPACE, json.dumps(modules_only_training_brings())]
    proc = subprocess.run(cmd, cwd=space, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(lines[-1])
    assert result["label"] in ("negative", "positive") and result["training_loaded"] == []
    assert isinstance(result["continuation"], str)
    assert [Path(p).relative_to(space).as_posix() for p in result["alternatives"]] == ["assets/sentiment-scratch"]
    assert result["translators"] == [PRETRAINED_TRANSLATOR]  # offered; offline, the choice says it needs the Hub
    assert result["contrast_file"].startswith(str(space)) and result["pairs"] > 0  # the Space's own file, read
