"""The Space as it runs on Hugging Face: assembled by `python -m training.publish space --dry-run`, started from its own
folder with the variables the Space sets (offline here: the bundled models), by this interpreter or by a fresh virtual
environment that has only the folder's requirements.txt installed. Shared by tests/app/test_space_venv.py and
benchmarks/space_start.py."""

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[2]
SPACE_REPO = "someone/attention-demo"
LOADED_JS = "() => document.querySelector('#sentiment-attention .heatmaplayer image') !== null"


def assemble(out: Path) -> dict[str, str]:
    """Assemble the Space into `out` (`--dry-run`: nothing is sent); the variables the Space would set."""
    cmd = [sys.executable, "-m", "training.publish", "space", "--repo-id", SPACE_REPO, "--dry-run", "--out", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"publish space --dry-run failed ({proc.returncode}): {proc.stdout[-2000:]}{proc.stderr}")
    found = re.search(r"^Space variables it would set: (.*)$", proc.stdout, re.M)
    if not found:
        raise RuntimeError(f"publish space --dry-run did not say the Space's variables: {proc.stdout[-2000:]}")
    return dict(pair.split("=", 1) for pair in found.group(1).split(", "))


def fresh_venv(requirements: Path, venv: Path) -> Path:
    """A virtual environment without this interpreter's packages, with only `requirements` installed; its python.
    With uv (requirements-dev.txt) the install takes seconds from uv's cache, a minute or two cold; pip takes 3-7
    minutes on a busy 2-core machine, most of it unpacking torch."""
    uv = shutil.which("uv")
    if uv is None:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        python = venv / "bin" / "python"
        cmd = [str(python), "-m", "pip", "install", "--quiet", "--no-compile", "--retries", "0", "--timeout", "10"]
        _install([*cmd, "-r", str(requirements)], requirements)
        return python
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    cmd = [uv, "pip", "install", "--quiet", "--python", str(python), "--index-strategy", "unsafe-best-match"]
    _install([*cmd, *uv_sources(requirements, venv.parent / "requirements-reachable.txt")], requirements)
    return python


def _install(cmd: list[str], requirements: Path) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"installing {requirements} failed: {proc.stdout[-2000:]}{proc.stderr[-3000:]}")


def uv_sources(requirements: Path, reachable: Path) -> list[str]:
    """uv's arguments for `requirements`: the file itself, or, where an index it names cannot be reached (PyTorch's
    CPU index on a machine that reaches only the package registry), a copy without it and pip's own --find-links
    (pip skips an index it cannot reach and takes the local CPU wheel of torch from them; uv stops at it)."""
    lines = requirements.read_text().splitlines()
    unreachable = [line for line in lines if line.startswith(INDEX_OPTIONS) and not _reachable(line.split()[-1])]
    if not unreachable:
        return ["-r", str(requirements)]
    reachable.write_text("\n".join(line for line in lines if line not in unreachable) + "\n")
    return ["-r", str(reachable), *(arg for folder in pip_find_links() for arg in ("--find-links", folder))]


INDEX_OPTIONS = ("--extra-index-url", "--index-url")


def _reachable(url: str, timeout: float = 3.0) -> bool:
    try:
        socket.create_connection((urlparse(url).hostname, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def pip_find_links() -> list[str]:
    """The folders pip is configured to find wheels in (pip.conf or $PIP_FIND_LINKS)."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    found = re.findall(r"find-links='([^']*)'", out)
    return list(dict.fromkeys(folder for value in found for folder in value.split()))


def space_env(variables: dict[str, str], home: Path, port: int) -> dict[str, str]:
    """The environment of the app on the Space, offline: its variables, an empty Hub cache, nothing of ours."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "HF_HOME": str(home / "hf"), **variables}
    env |= {"HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "GRADIO_TEMP_DIR": str(home / "gradio")}
    return env | {"GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), "PYTHONUNBUFFERED": "1"}


def start(python: Path | str, folder: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    """`python app.py` in the Space's folder, as the Space starts it; its output goes to `log`."""
    with open(log, "wb") as out:
        return subprocess.Popen([str(python), "app.py"], cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout: float = 300) -> float:
    """Wait until the app answers at `url`; the seconds waited. RuntimeError when it exits or takes too long."""
    start, end = time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited ({proc.returncode}): {log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "config", timeout=5) as answer:
                if answer.status == 200:
                    return time.monotonic() - start
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"the app did not answer within {timeout:.0f} s: {log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen) -> None:
    """End the app (and its model processes, which end with it)."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)
