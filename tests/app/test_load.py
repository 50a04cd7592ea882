"""benchmarks/load.py in its quick mode, on the bundled models: it starts app.py, drives both endpoints
from several clients, and reports no failures (errors, warnings, or answers that differ from sequential runs)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_quick_load_run_reports_no_failures_and_memory():
    env = {k: v for k, v in os.environ.items() if k not in ("SENTIMENT_MODEL", "TRANSLATION_MODEL")}
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.load", "--quick"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    rows = re.findall(r"^\| (/\w+) \| (\d+) \| (\d+) \|", out, re.M)
    assert {api for api, _, _ in rows} == {"/sentiment", "/translate", "/generate"}
    assert all(int(n) > 0 and int(failed) == 0 for _, n, failed in rows), out
    assert "throughput with 4 clients" in out
    memory = dict(re.findall(r"(start|after warm-up|end) (\d+)", out.split("resident memory", 1)[1]))
    assert set(memory) == {"start", "after warm-up", "end"} and 0 < int(memory["end"]) < 1500
