"""benchmarks/load.py in its quick mode, on the bundled models: it starts app.py, drives both endpoints
from several clients, and reports no failures (errors, warnings, or answers that differ from sequential runs)."""

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

pytestmark = pytest.mark.slow


def test_quick_load_run_reports_no_failures_and_memory(capsys, monkeypatch):
    import load

    monkeypatch.delenv("SENTIMENT_MODEL", raising=False)
    monkeypatch.delenv("TRANSLATION_MODEL", raising=False)
    assert load.main(["--quick"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\| (/\w+) \| (\d+) \| (\d+) \|", out, re.M)
    assert {api for api, _, _ in rows} == {"/sentiment", "/translate"}
    assert all(int(n) > 0 and int(failed) == 0 for _, n, failed in rows), out
    assert "throughput with 4 clients" in out
    memory = dict(re.findall(r"(start|after warm-up|end) (\d+)", out.split("resident memory", 1)[1]))
    assert set(memory) == {"start", "after warm-up", "end"} and 0 < int(memory["end"]) < 1500
