"""Hosting the app: no uploads, bounded session state, a queue that takes a burst of 130 requests in batches."""

import os
import threading
import uuid

import httpx
import pytest
from gradio_client import Client

from pipelines.hosting import budget
from pipelines.hosting.memory import tame_malloc
from viz.server import hosting
from viz.server.sessions import MAX_SESSIONS, SessionsByBytes


def test_uploads_are_refused_and_nothing_is_stored(app, tmp_path):
    demo, url = app
    before = set(demo.upload_file_set)
    for path in ("gradio_api/upload", "gradio_api/upload/", "upload"):
        r = httpx.post(url + path, files={"files": ("big.bin", b"x" * 3_000_000)}, timeout=30)
        assert r.status_code in (403, 404) and "big.bin" not in r.text
    assert set(demo.upload_file_set) == before


def _is_state(block) -> bool:
    return type(block).__name__ == "State"


def test_session_state_is_bounded_and_expires(app):
    demo, url = app
    # the page's buttons keep each result for redraws (the two task tabs' results, Learn's walks), for STATE_TTL_S;
    # what else they keep is a number (Learn's step)
    buttons = [fn for fn in demo.fns.values() if fn.concurrency_id == "models" and fn.api_visibility == "private"]
    states = list({id(b): b for fn in buttons for b in fn.outputs if _is_state(b)}.values())
    kept = [s for s in states if not isinstance(s.value, int)]
    assert len(kept) == 3 and all(s.time_to_live == hosting.STATE_TTL_S for s in kept)  # the results
    # the API answers without keeping anything: API clients cannot redraw
    api = [fn for fn in demo.fns.values() if fn.api_name in ("sentiment", "translate")]
    assert len(api) == 2 and not any(_is_state(b) for fn in api for b in fn.outputs)
    assert isinstance(demo.state_holder, SessionsByBytes)  # hosting.bound_sessions(demo), at the app's start
    assert demo.state_holder.budget_bytes == budget.BUDGET.bytes(budget.BUDGET.sessions)
    demo.state_holder.max_sessions = 3  # the count bound, reached sooner
    client = Client(url, verbose=False, analytics_enabled=False)
    try:
        for i in range(8):  # as many API clients, one call each
            client.session_hash = uuid.uuid4().hex
            args = ("A fine film.",) if i % 2 else ("Ein Hund.", "greedy", 2)
            label, status = client.predict(*args, api_name="/sentiment" if i % 2 else "/translate")
            assert status and "⚠️" not in status
        assert len(demo.state_holder.session_data) <= 3
        kept = [v for session in demo.state_holder.session_data.values() for v in session.state_data.values()]
        assert not any(hasattr(v, "attentions") or hasattr(v, "cross") for v in kept)  # no result in any session
    finally:
        demo.state_holder.max_sessions = MAX_SESSIONS


def test_a_burst_of_130_requests_is_admitted_and_batched(app):
    """130 requests at once, each from its own session, through the REST API from one asyncio loop
    (gradio_client's threads would take the CPU the app in this process needs)."""
    import asyncio

    from load_client import HttpClient

    demo, url = app
    runs_before = demo.batcher.batches_run

    async def burst():
        clients = [HttpClient(url) for _ in range(130)]
        calls = []
        for i in range(130):
            # each input its own: the result cache would answer repeats of one without a batch (what it is for)
            args = (
                ("/sentiment", f"A fine film, {i}.") if i % 2 else ("/translate", f"Ein Hund läuft {i}.", "greedy", 2)
            )
            calls.append(clients[i].predict(*args))
        try:
            return await asyncio.gather(*calls)
        finally:
            await asyncio.gather(*(c.aclose() for c in clients))

    results = asyncio.run(burst())
    assert len(results) == 130 and all(status and "⚠️" not in status for _, status in results)
    assert demo.batcher.batches_run - runs_before < 130 and demo.batcher.largest_batch > 1
    # gradio's queue keeps no history of these events (it would keep 10,000 and summarise them all after
    # every event, in pandas: hosting.quiet_queue_analytics)
    assert len(demo._queue.event_analytics) <= 1


def test_tame_malloc_hands_freed_memory_back_to_the_system():
    """Memory freed in the middle of the heap (what a finished batch leaves) leaves resident memory within
    a moment: without the trimmer glibc keeps it."""
    import sys
    import time

    from load_client import rss_mb

    if not sys.platform.startswith("linux"):
        pytest.skip("glibc only")
    assert tame_malloc(trim_every_s=0.05)
    assert any(t.name == "malloc-trim" and t.daemon for t in threading.enumerate())
    blocks = [bytearray(8192) for _ in range(12_000)]  # about 100 MB, written
    grown = rss_mb(os.getpid())
    last = blocks[-1]  # kept: the top of the heap stays in use, so glibc cannot just shrink the heap
    blocks.clear()
    deadline = time.monotonic() + 5
    while rss_mb(os.getpid()) > grown - 60 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rss_mb(os.getpid()) <= grown - 60
    del last


def test_the_fair_batcher_refuses_a_client_that_floods_it(app):
    demo, url = app
    client = Client(url, verbose=False, analytics_enabled=False, max_workers=80)
    old = demo.batcher.max_pending
    demo.batcher.max_pending = 2
    try:
        # each its own sentence: identical ones would wait for the first's answer (ResultCache.computed), not queue
        texts = [f"Zwei Hunde spielen im Schnee, zum {i}. Mal. " * 2 for i in range(12)]
        jobs = [client.submit(text, "beam search", 8, api_name="/translate") for text in texts]
        statuses = [job.result(timeout=300)[1] for job in jobs]
    finally:
        demo.batcher.max_pending = old
    assert any("many requests waiting" in s for s in statuses) and any("⚠️" not in s for s in statuses)
    assert threading.active_count() < hosting.QUEUE_SIZE + 60


def test_no_event_updates_a_layout_block(app):
    """Gradio's page copies every component that was ever an event's output, with all its children, at each
    change of an event's progress: a layout block (the tabs, a row) among the outputs made it copy whole tabs on
    every click (docs/reference.md "Hosting"). Events update components, never layout."""
    demo, _ = app
    outputs = [b for fn in demo.fns.values() for b in fn.outputs]
    assert len(outputs) > 40
    assert [type(b).__name__ for b in outputs if type(b).__module__.startswith("gradio.layouts")] == []


def test_each_event_shows_progress_on_one_component_at_most(app):
    """Gradio's page hands every component that was ever an event's progress target its loading status again at
    each change of any event's progress (hosting.progress_on_one_component); with every output a target, a page
    load and one review made 25 of them. Each event names one target at most, never a gr.State (it shows no
    progress), none when it shows no progress; an event that shows progress and has a visible output still shows it."""
    demo, _ = app
    config = demo.get_config_file()
    components = {c["id"]: c for c in config["components"]}
    shown = 0
    for dep in config["dependencies"]:
        targets = dep["show_progress_on"]
        assert targets is not None and len(targets) <= 1, dep
        assert all(components[t]["type"] != "state" for t in targets)
        visible = [o for o in dep["outputs"] if components[o]["type"] != "state"]
        if dep["show_progress"] == "hidden":
            assert targets == []
        elif visible:
            assert targets == visible[:1]
            shown += 1
    assert shown > 40
    explain = [d for d in config["dependencies"] if d["api_name"] == "run_explain"]
    assert explain and {components[d["show_progress_on"][0]]["props"]["elem_id"] for d in explain} == {
        "sentiment-highlight"
    }


# the views each tab leaves out of the page until they are asked for (theme.waiting_plot)
WAITING_VIEWS = ("token-focus", "inside-head-heads", "compare-diff", "lens", "lens-by-layer", "dla", "dla-total",
                 "patch-resid", "patch-heads", "score-parts", "composition")  # fmt: skip


def test_every_plot_but_each_tabs_first_heatmap_is_skipped_off_screen(app):
    """The frame that draws a click's first heatmap used to lay out and paint every other plot too
    (viz.page.theme.skip_off_screen): every plot but the tabs' first heatmaps carries the class, and the page's CSS
    makes the browser skip it while it is off screen."""
    from viz.page import theme

    demo, _ = app
    config = demo.get_config_file()
    plots = [c["props"] for c in config["components"] if c["type"] == "plot"]
    plots = {p["elem_id"]: p.get("elem_classes") or [] for p in plots}
    first = {"sentiment-attention", "translation-attention"}
    assert first <= set(plots) and len(plots) > 12
    assert {i for i, classes in plots.items() if theme.OFF_SCREEN not in classes} == first
    assert f".{theme.OFF_SCREEN} {{ content-visibility: auto;" in demo.css
    waiting = {i for i, classes in plots.items() if theme.UNTIL_DRAWN in classes}  # no blank box until asked for
    assert waiting == {
        *(f"{t}-{v}" for t in ("sentiment", "translation") for v in WAITING_VIEWS),
        "sentiment-heads-heatmap",
        "translation-heads-heatmap",
    }  # fmt: skip (one sentiment model here: no "Compare two models", whose plots wait too)
    assert f'.{theme.UNTIL_DRAWN}:has(.empty[aria-label="Empty value"]) {{ display: none' in demo.css


def follow_ups(dependencies: list[dict], start: int) -> list[dict]:
    """Every step chained after dependency `start` (.then / .success / .failure), at any depth."""
    found, frontier = [], {start}
    while frontier:
        steps = [d for d in dependencies if d["trigger_after"] in frontier]
        found += steps
        frontier = {d["id"] for d in steps}
    return found


def test_every_step_after_a_run_runs_again_for_the_newest_result(app):
    """Seen in a browser: after 3 to 5 Analyse clicks within a second, the overview or the head table stayed on an
    earlier review for good (6 of 9 tries), because gradio's page skips a step triggered while the same step still
    runs (trigger mode "once"). Every model step after a tab's button is "always_last" (viz.server.events)."""
    demo, _ = app
    config = demo.get_config_file()
    components = {c["id"]: c for c in config["components"]}
    deps = config["dependencies"]
    for task in ("sentiment", "translation"):
        button = next(c["id"] for c in components.values() if c["props"].get("elem_id") == f"{task}-submit")
        run = next(d for d in deps if [button, "click"] in [list(t) for t in d["targets"]] and d["backend_fn"])
        steps = [d for d in follow_ups(deps, run["id"]) if d["backend_fn"]]
        assert len(steps) >= 5, task  # the views, the explanation and its faithfulness, the head table, inside one head
        skipped = [(d["api_name"], d["trigger_mode"]) for d in steps if d["trigger_mode"] != "always_last"]
        assert skipped == [], task
