"""The Next word tab's handlers (viz.next_word.handlers) on the tiny language model: generation streamed token by
token, the step slider, the decoding options and bad input answered with a message."""

import math

import numpy as np
import pytest

from viz.attention import task_views
from viz.heads.clicked import head_heatmap
from viz.heads.measure import head_table
from viz.heads.switch_off import switch_off
from viz.next_word import handlers as next_word


def run(lm, prompt="This movie was", **kw):
    return list(next_word.generate(lm, prompt, **kw))


def test_generate_streams_each_token_then_the_view(lm):
    out = run(lm, max_new_tokens=5)
    *partials, (view, text, status, bar) = out
    assert view is not None and text == view.result.continuation
    assert len(partials) == len(view.steps) and all(p[0] is None and "Generating" in p[2] for p in partials)
    assert partials[-1][1] == text  # the streamed text ends as the final one
    assert "greedy decoding" in status and "new token" in status
    assert bar.data[0].y[0].startswith("1. ")
    assert view.step == len(view.steps)  # the views open on the last step: the whole sequence


def test_step_slider_cuts_the_maps_to_what_the_model_had_read(lm):
    view = run(lm, max_new_tokens=4)[-1][0]
    Tp, n = len(view.result.tokens), len(view.steps)
    for step in (1, n):
        heat, bar = next_word.show_step(view, 1, 2, step)
        z = heat.data[0].z
        assert len(z) == Tp + step - 1 == len(heat.data[0].x)
        # causal: nothing above the diagonal, drawn as gaps, not as zero weight
        assert all(z[i][j] is None for i in range(len(z)) for j in range(i + 1, len(z)))
        assert all(z[i][i] is not None for i in range(len(z)))
        chosen = view.steps[step - 1]
        assert f"Step {step} of {n}" in bar.layout.title.text
        assert "#ea580c" in list(bar.data[0].marker.color)  # the token chosen at that step is marked
        assert chosen.top_k[0][1] == pytest.approx(max(bar.data[0].x))
    assert len(task_views.overview(view, 0).data[0].x) == Tp + n - 1
    assert next_word.show_step(None, 0, 0, 1) == (None, None)
    heat, _ = next_word.show_step(view, 99, 99, 999)  # out of range: clamped
    assert view.step == n and heat is not None


def test_sampling_with_a_seed_is_reproducible_and_the_seed_is_shown(lm):
    a = run(lm, decoding="sampled", temperature=1.0, top_p=0.9, seed=7, max_new_tokens=8)[-1]
    b = run(lm, decoding="sampled", temperature=1.0, top_p=0.9, seed=7, max_new_tokens=8)[-1]
    assert a[1] == b[1] and "seed 7" in a[2]
    drawn = run(lm, decoding="sampled", max_new_tokens=3)[-1][2]  # no seed: one is drawn and named
    assert "seed " in drawn and "temperature 0.8" in drawn


def test_stop_keeps_the_tokens_so_far_with_their_maps(lm):
    view, text, status, _ = run(lm, max_new_tokens=10, stopped=lambda: True)[-1]
    assert len(view.steps) == 1 and "stopped by you" in status
    assert view.full.maps["causal"].shape[-1] == len(view.result.tokens)
    assert text == view.result.continuation


@pytest.mark.parametrize(
    "kw, words",
    [
        (dict(prompt="   "), "empty"),
        (dict(prompt=None), "Please type or paste a prompt"),
        (dict(prompt=12), "must be text"),
        (dict(max_new_tokens=0), "max_new_tokens must be a whole number from 1 to 64"),
        (dict(max_new_tokens=65), "from 1 to 64"),
        (dict(max_new_tokens=2.5), "from 1 to 64"),
        (dict(max_new_tokens="many"), "from 1 to 64"),
        (dict(decoding="beam search"), "“greedy” or “sampled”"),
        (dict(decoding="sampled", temperature=math.nan), "temperature must be a number"),
        (dict(decoding="sampled", temperature=0), "temperature must be a number above 0"),
        (dict(decoding="sampled", top_p=1.5), "top-p must be"),
        (dict(decoding="sampled", seed=-1), "seed must be a whole number"),
        (dict(decoding="sampled", seed="abc"), "seed must be a whole number"),
        (dict(chat=True), "chat template"),  # the tiny model has none
    ],
)
def test_bad_input_gets_a_message_not_a_traceback(lm, kw, words):
    prompt = kw.pop("prompt", "This movie was")
    out = run(lm, prompt, **kw)
    assert len(out) == 1
    view, text, status, bar = out[0]
    assert view is None and text == "" and bar is None
    assert status.startswith("⚠️") and words in status


def test_a_prompt_too_long_for_the_model_says_so(lm):
    view, _, status, _ = run(lm, "word " * 400, max_new_tokens=64)[-1]
    assert view is None and "shorten the prompt" in status


def test_api_answer_is_text_top_tokens_and_status(lm):
    text, top, status = next_word.api_generate(lm, "This movie was", 3)
    assert isinstance(text, str) and ("3 new tokens" in status or "end-of-text" in status)
    assert 1 <= len(top) <= 10 and all(np.isfinite(p) for p in top.values())
    assert next_word.api_generate(lm, "", 3) == ("", None, next_word.api_generate(lm, "", 3)[2])


def test_heads_panel_measures_the_run_and_switches_heads_off(lm):
    view = run(lm, max_new_tokens=3)[-1][0]
    measured, grid, table, status = head_table(lm, "lm", view.text, result=view.result)
    assert measured.result is view.result and len(measured.rows) == 2 * 4
    assert {"sink", "duplicate", "induction", "effect"} <= set(measured.rows[0])
    assert "sink" in table.columns and "induction" in table.columns
    html = switch_off(lm, measured, ["causal:0:1", "causal:1:0"])
    assert "first new token" in html and "causal 1 · head 2" in html
    assert head_heatmap(view, measured, "causal:1:0") is not None


def test_the_heads_panel_reports_progress_head_by_head(lm):
    """The panel's progress bar (viz.heads.panel) gets every head of the language model as its effect comes."""
    view = run(lm, max_new_tokens=2)[-1][0]
    reports = []
    measured, *_ = head_table(lm, "lm", view.text, result=view.result, progress=lambda *a: reports.append(a))
    n = len(measured.rows)
    assert reports and reports[-1] == (n, n)
    assert [done for done, _ in reports] == sorted(done for done, _ in reports)
