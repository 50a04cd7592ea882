"""`pip install .`: the wheel holds the library, declares its pins and extras, and loads a saved model
in a fresh virtual environment (seeing the test interpreter's site-packages for torch, so nothing is downloaded,
from a venv, a system Python or CI alike)."""

import json
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "requirements-lib.txt", "requirements-app.txt", "requirements-train.txt")
PACKAGES = ("transformer", "pipelines", "viz", "training")

LOAD_FROM_THE_WHEEL = """
import json, sys
import transformer
from pipelines import SentimentPipeline, TranslationPipeline
s = SentimentPipeline.from_pretrained(sys.argv[1])
t = TranslationPipeline.from_pretrained(sys.argv[2])
print(json.dumps({"library": transformer.__file__, "label": s("A fine film.").label,
                  "translation": t.translate(["Ein Hund."])[0]}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the sources (so no build/ or egg-info lands in the checkout)."""
    src, dist = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("dist")
    for name in SOURCES:
        shutil.copy2(ROOT / name, src / name)
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    cmd = [sys.executable, "-m", "pip", "wheel", str(src), "--no-build-isolation", "--no-deps", "-q", "-w", str(dist)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (whl,) = dist.glob("attention_demo-*.whl")
    return whl


def test_the_wheel_holds_the_packages_and_declares_pins_and_extras(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert {n.split("/")[0] for n in names if n.endswith(".py")} == set(PACKAGES)
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/", "assets/"))]
    page_js = {f"viz/page/js/{p.name}" for p in (ROOT / "viz" / "page" / "js").glob("*.js")}
    assert page_js and page_js <= set(names)  # the page's JavaScript, read by viz.page.scripts
    requires = [line.split(": ", 1)[1] for line in meta.splitlines() if line.startswith("Requires-Dist: ")]
    assert "torch==2.13.0" in requires and "tokenizers==0.23.3" in requires
    assert 'gradio==6.31.0; extra == "app"' in requires and 'datasets==5.2.0; extra == "train"' in requires
    assert not [r for r in requires if r.startswith(("gradio", "datasets", "transformers")) and "extra" not in r]


def test_every_subpackage_is_in_the_wheel():
    """pyproject.toml lists the packages one by one: a new subpackage (viz/attention/, ...) must be listed too."""
    listed = re.search(r"^packages = \[(.*?)\]", (ROOT / "pyproject.toml").read_text(), re.M | re.S).group(1)
    found = {".".join(p.parent.relative_to(ROOT).parts) for pkg in PACKAGES for p in (ROOT / pkg).rglob("__init__.py")}
    assert found <= set(re.findall(r'"([\w.]+)"', listed)), sorted(found - set(re.findall(r'"([\w.]+)"', listed)))


def our_site_packages() -> list[str]:
    """The site-packages folders this interpreter imports from: a venv's own (and its base's, when the venv
    sees them), or a system Python's."""
    return [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]


def venv_with_our_packages(env_dir: Path) -> Path:
    """A fresh venv that sees the packages of the interpreter running the tests (torch, tokenizers...), through
    a .pth file listing its site-packages folders after the venv's own; returns the venv's python.

    venv's system_site_packages=True would give the *base* interpreter's packages instead: run from a venv
    whose torch is its own, the inner venv had no torch. Folders from a .pth file are appended, and .pth files
    inside them are not read, so an editable install of this project out there stays out of the venv."""
    venv.create(env_dir, system_site_packages=False, with_pip=False)
    python = env_dir / "bin" / "python"
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = Path(subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True).stdout.strip())
    (purelib / "_outer_environment.pth").write_text("\n".join(our_site_packages()) + "\n")
    return python


def test_the_inner_venv_sees_this_interpreters_packages_not_the_base_ones(tmp_path):
    python = venv_with_our_packages(tmp_path / "venv")
    code = "import json, sys, torch; print(json.dumps([torch.__file__, sys.path]))"
    proc = subprocess.run([str(python), "-I", "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    torch_file, path = json.loads(proc.stdout)
    import torch

    assert Path(torch_file).resolve() == Path(torch.__file__).resolve()  # this interpreter's torch, wherever it is
    assert str(ROOT) not in path  # not the checkout


def test_a_saved_model_loads_from_the_installed_wheel(wheel, tmp_path, sentiment_dir, translation_dir):
    env_dir = tmp_path / "venv"
    python = venv_with_our_packages(env_dir)
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index"]
    proc = subprocess.run([*install, str(wheel)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = [str(python), "-I", "-c", LOAD_FROM_THE_WHEEL, str(sentiment_dir), str(translation_dir)]
    proc = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=180, env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(result["library"]).is_relative_to(env_dir)  # the installed copy, not the checkout
    assert result["label"] in ("negative", "positive") and isinstance(result["translation"], str)


@pytest.mark.parametrize("task", ["sentiment", "translation"])
def test_model_cards_say_how_to_install_the_code(task):
    from dataclasses import asdict

    from training.release.model_card import model_card
    from transformer import ClassifierConfig, Seq2SeqConfig

    config = asdict((ClassifierConfig if task == "sentiment" else Seq2SeqConfig)(vocab_size=100))
    text = model_card(task, "alice/demo", config, 1000, None, None).content
    usage = text.split("## How to use", 1)[1].split("\n## ", 1)[0]
    assert "pip install ." in usage and 'pip install "attention-demo @ git+' in usage
    assert 'from_pretrained("alice/demo")' in usage
