"""The head table over a set (viz/heads/over_set.py, the heads panel's measure_over_set): each cell is the mean ± sd
the pipeline gives, coloured and sorted by the mean as the one-input table is; n is in the status; the CSV holds every
number; a stopped run, a missing set and a failing model are plain messages."""

import csv
import io

import numpy as np
import pytest

from pipelines.attention.over_set import HeadTableOverSet, InductionSet
from viz.heads import over_set as ov
from viz.heads import panel
from viz.heads.table import head_table_view


@pytest.fixture
def result() -> HeadTableOverSet:
    rows = [
        {"kind": "self", "layer": i, "head": h, "effect_mean": 0.01 * (i + h), "effect_std": 0.002,
         "entropy_mean": 1.5 + h, "entropy_std": 0.25, "previous_mean": None, "previous_std": None}
        for i in range(2) for h in range(2)
    ]  # fmt: skip
    return HeadTableOverSet(rows, ("effect", "entropy", "previous"), n=40, asked=100, stopped=True, name="SST-2")


def test_each_cell_is_the_mean_and_sd(result):
    table = ov.over_set_table(result)
    one_input = head_table_view(ov.means(result))  # the table of the means, as one input's is drawn
    assert table.columns == one_input.columns and table.heads == one_input.heads
    assert table.column("entropy") == ["1.500 ± 0.250", "2.500 ± 0.250", "1.500 ± 0.250", "2.500 ± 0.250"]
    assert table.column("effect")[3].endswith(" ± 0.002")
    assert table.column("on previous") == ["–"] * 4  # undefined on every input: a dash, no sd
    css = [[c for _, c in row] for row in table.rows]
    assert css == [[c for _, c in row] for row in one_input.rows]  # coloured by the means
    assert "1.500 ± 0.250" in table.html()


def test_the_status_and_the_csv(result):
    status = ov.over_set_status(result, "reviews")
    assert "n = 40 of 100 reviews" in status and "SST-2" in status and "Stopped" in status
    rows = list(csv.DictReader(io.StringIO(ov.over_set_csv(result))))
    assert len(rows) == 4 and rows[3]["entropy_mean"] == "2.5" and rows[3]["n"] == "40"
    assert rows[0]["previous_mean"] == "" and rows[0]["layer"] == "0"


class Measured:
    """A pipeline's head_table_over as the panel calls it: what it was given, and a result or an error."""

    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def head_table_over(self, texts, progress=None, stop=None, name="", effects=True):
        self.calls.append((texts, name, effects))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_the_panel_measures_the_tasks_set(monkeypatch, result):
    monkeypatch.setattr(ov, "bundled_set", lambda task: (["a", "b"], "SST-2") if task == "sentiment" else None)
    pipe = Measured(result)
    html, status, text = panel.measure_over_set(pipe, "sentiment", choice=ov.EFFECTS)
    assert pipe.calls == [(["a", "b"], "SST-2", True)]
    assert html == ov.over_set_table(result).html() and "n = 40" in status and text == ov.over_set_csv(result)
    _, status, text = panel.measure_over_set(Measured(result), "translation")
    assert "not available" in status and text == ""
    _, status, _ = panel.measure_over_set(Measured(ValueError("no decomposition")), "sentiment")
    assert "Could not measure" in status and "no decomposition" in status
    empty = HeadTableOverSet([], ("effect",), n=0, asked=2, stopped=True)
    assert panel.measure_over_set(Measured(empty), "sentiment")[1] == "Stopped before any input was measured."
    none = HeadTableOverSet([], ("effect",), n=0, asked=2, skipped=2)
    assert "None of the 2 inputs could be read" in panel.measure_over_set(Measured(none), "sentiment")[1]
    some = HeadTableOverSet(result.rows, result.columns, n=40, asked=100, skipped=60)
    assert "60 left out" in ov.over_set_status(some, "reviews")


def test_the_tasks_bundled_set_on_the_tiny_model(monkeypatch, sentiment):
    texts, words = ov.bundled_set("sentiment")
    assert len(texts) == 100 and words == "100 SST-2 sentences"
    monkeypatch.setattr(ov, "bundled_set", lambda task: (texts[:3], words))
    seen = []
    report = lambda d, n: seen.append((d, n))  # noqa: E731
    html, status, text = panel.measure_over_set(sentiment, "sentiment", report, choice=ov.EFFECTS)
    assert "n = 3 of 3 reviews" in status and "± " in html and seen[-1] == (3, 3)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == sentiment.n_layers * sentiment.n_heads
    first = rows[0]
    one = [[r for r in sentiment.head_table(t) if (r["layer"], r["head"]) == (0, 0)][0] for t in texts[:3]]
    assert (first["layer"], first["head"]) == ("0", "0")
    assert float(first["entropy_mean"]) == pytest.approx(np.mean([r["entropy"] for r in one]), rel=1e-5)
    _, status, _ = panel.measure_over_set(sentiment, "sentiment", stop=lambda: True)
    assert status == "Stopped before any input was measured."


@pytest.mark.parametrize("task", ["translation", "lm"])
def test_the_other_tabs_sets_on_their_tiny_models(monkeypatch, request, task):
    pipe = request.getfixturevalue(task)
    texts, words = ov.bundled_set(task)
    assert len(texts) == 100
    texts = texts if task == "translation" else ["the film was good", "a dull and long movie"]  # the tiny model: short
    monkeypatch.setattr(ov, "bundled_set", lambda t: (texts[:2], words))
    html, status, text = panel.measure_over_set(pipe, task, choice=ov.EFFECTS)
    assert f"n = 2 of 2 {panel.TASKS[task].units} of the set *{words}*" in status and "± " in html
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == sum(pipe.head_layers.values()) * pipe.n_heads


def test_a_task_without_a_set_has_none(monkeypatch):
    import dataclasses

    from viz import tasks

    monkeypatch.setitem(tasks.TASKS, "sentiment", dataclasses.replace(tasks.TASKS["sentiment"], head_set=("", "")))
    assert ov.bundled_set("sentiment") is None
    _, status, text = panel.measure_over_set(Measured(None), "sentiment")
    assert status == "The bundled set of this task is not available here." and text == ""


def test_over_the_set_leaves_the_effects_out_and_states_their_cost(monkeypatch, result):
    """ "over the set" measures the attention columns alone (effects=False) and says what the effects would cost:
    n inputs x this input's measured seconds; "over the set, with effects" measures them."""
    monkeypatch.setattr(ov, "bundled_set", lambda task: (["a"] * 100, "SST-2"))
    columns = tuple(c for c in result.columns if c != "effect")
    attention_only = HeadTableOverSet(result.rows, columns, n=100, asked=100, name="SST-2")
    pipe = Measured(attention_only)
    html, status, _ = panel.measure_over_set(pipe, "lm", choice=ov.OVER, seconds=16.2)
    assert pipe.calls == [(["a"] * 100, "SST-2", False)] and "Effect" not in html
    assert "about 100 inputs × 16.2 s" in status and "≈ 27 min" in status and f"*{ov.EFFECTS}*" in status
    _, status, _ = panel.measure_over_set(Measured(attention_only), "lm", choice=ov.OVER, seconds=0.3)
    assert "≈ 30 s" in status
    _, status, _ = panel.measure_over_set(Measured(attention_only), "lm", choice=ov.OVER)
    assert "about 100 times one input's head table" in status
    pipe = Measured(result)
    _, status, _ = panel.measure_over_set(pipe, "sentiment", choice=ov.EFFECTS, seconds=16.2)
    assert pipe.calls[0][2] is True and "left out" not in status


def test_the_next_word_tab_offers_the_induction_set(lm):
    """Only the Next word tab offers random tokens written twice: each head's standard induction score over them,
    the same numbers as the pipeline's own head table over the InductionSet."""
    assert ov.INDUCTION in ov.switch_choices("lm") and ov.INDUCTION not in ov.switch_choices("sentiment")
    assert ov.switch_choices("sentiment") == list(ov.CHOICES)
    html, status, text = panel.measure_over_set(lm, "lm", choice=ov.INDUCTION, seconds=5.0)
    s = InductionSet()
    assert f"n = {s.n} of {s.n} sequences of the set *random tokens written twice" in status
    assert "left out" not in status and "± " in html
    rows = list(csv.DictReader(io.StringIO(text)))
    want = lm.head_table_over(s)
    assert "induction_mean" in rows[0] and "effect_mean" not in rows[0] and len(rows) == len(want.rows)
    for row, head in zip(rows, want.rows, strict=True):
        assert float(row["induction_mean"]) == pytest.approx(head["induction_mean"], rel=1e-6)
