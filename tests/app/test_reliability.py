"""Safe to leave running in public (issue 22): raw HTTP on loopback against the app on the tiny models, and fault
injection. Private events answer only the page, bounded per page session; the public endpoints take defaults and
refuse bad values with the app's own message; damaged weights never load; NaN is never served; failures say
what happened. Bounded: one served app per module, a few hundred small requests in all."""

import asyncio
import errno
import hashlib
import json
import os
import shutil
import socket
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest
import torch
from browser import serve
from gradio_client import Client

from pipelines import SentimentPipeline, TranslationPipeline
from pipelines.hosting.microbatch import TooManyRequests
from pipelines.hosting.processes import ModelProcessDied
from pipelines.trust.finite import NonFiniteOutput
from viz.models.loading import load_pipeline
from viz.sentiment.handlers import analyze_review
from viz.server import failures, guard
from viz.share import downloads, export_store, links
from viz.translation.handlers import translate

GERMAN = "Zwei Hunde spielen im Schnee."


def call(url: str, api: str, data, route: str = "call") -> tuple[int, object]:
    """(HTTP status, outputs) of one call by name: the outputs of a completed /call event, or the JSON body of a
    refusal (and of a /run answer)."""
    r = httpx.post(f"{url}gradio_api/{route}/{api}", json={"data": data}, timeout=60)
    if r.status_code != 200 or route != "call":
        return r.status_code, r.json()
    event = None
    with httpx.stream("GET", f"{url}gradio_api/call/{api}/{r.json()['event_id']}", timeout=60) as stream:
        for line in stream.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                return 200, (event, json.loads(line[5:]))
    raise AssertionError("the event stream ended without an answer")


def join(url: str, fn_index: int, session: str, data=None) -> httpx.Response:
    body = {"data": data or [], "fn_index": fn_index, "session_hash": session}
    return httpx.post(f"{url}gradio_api/queue/join", json=body, timeout=30)


def _private(demo) -> dict[str, int]:
    """{api_name: fn index} of the page's events that run Python (gradio names them after their function)."""
    return {fn.api_name: i for i, fn in demo.fns.items() if fn.api_visibility == "private" and fn.fn and fn.api_name}


def _load_event(demo) -> int:
    return next(i for i, fn in demo.fns.items() if fn.fn and any(t == "load" for _, t in fn.targets))


# --- 1. private events ---------------------------------------------------------------------------------------


def test_private_events_do_not_answer_by_name(app):
    demo, url = app
    private = _private(demo)
    assert {"download", "analyze", "measure"} <= set(private)
    for name in ("download", "analyze", "measure", *sorted(private)[:6]):
        for route in ("call", "run", "api", "call/v2"):
            data = {"text": "x"} if route == "call/v2" else ["A fine film.", "attention"]
            r = httpx.post(f"{url}gradio_api/{route}/{name}", json={"data": data}, timeout=30)
            assert r.status_code == 404, (route, name, r.text)
            assert "/sentiment" in r.json()["detail"] and "/translate" in r.json()["detail"]
    # nor by number through a name (as the page runs its unqueued events) without an open page
    body = {"data": ["A fine film.", "attention"], "fn_index": private["download"], "session_hash": "x"}
    for name in ("sentiment", "predict"):
        assert httpx.post(f"{url}gradio_api/run/{name}", json=body, timeout=30).status_code == 403
        without_session = {"data": body["data"], "fn_index": private["download"]}
        assert httpx.post(f"{url}gradio_api/run/{name}", json=without_session, timeout=30).status_code == 403
    load = {"data": [], "fn_index": _load_event(demo)}  # not even a load event opens a page without a session
    assert httpx.post(f"{url}gradio_api/run/predict", json=load, timeout=30).status_code == 403


def test_a_private_event_runs_only_for_an_open_page_and_within_its_rate(app, monkeypatch):
    demo, url = app
    download = _private(demo)["download"]
    stranger = uuid.uuid4().hex
    r = join(url, download, stranger, ["A fine film.", "attention"])
    assert r.status_code == 403 and "reload the page" in r.json()["detail"]
    page = uuid.uuid4().hex
    assert join(url, _load_event(demo), page).status_code == 200  # what the page sends first
    monkeypatch.setattr(guard, "LIMITS", guard.Limits(burst=3, per_second=0.0))
    head_change = next(i for i, fn in demo.fns.items() if fn.name == "on_head")  # a redraw: the head radio
    redraw = [None, 0, 0, "linear", False, None, None, False]  # (view, layer, head, scale, hide, token, kind, open)
    codes = [join(url, head_change, page, redraw).status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    assert "wait a few seconds" in join(url, head_change, page, redraw).json()["detail"]


def page_event(url: str, fn_index: int, session: str, data: list) -> dict:
    """Run one event as the page does (queue/join, then the session's event stream): its completion message."""
    r = join(url, fn_index, session, data)
    assert r.status_code == 200, r.text
    event_id = r.json()["event_id"]
    with httpx.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session}, timeout=60) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if message.get("msg") == "process_completed" and message.get("event_id") == event_id:
                    return message
    raise AssertionError("no completion")


def test_the_pages_download_gets_an_address_not_a_server_path(app):
    demo, url = app
    page = uuid.uuid4().hex
    join(url, _load_event(demo), page)
    # the default model; the training-step slider (hidden: no snapshots) at 0, the model itself
    message = page_event(url, _private(demo)["download"], page, ["A fine film.", None, 0, "attention"])
    reply = json.dumps(message)
    assert message["success"] and "/tmp" not in reply and str(export_store.export_dir()) not in reply
    address = message["output"]["data"][0]
    assert address.startswith("exports/attention-sentiment-") and address.endswith(".json")
    r = httpx.get(url + address, timeout=30)
    assert r.status_code == 200 and r.json()["input"]["text"] == "A fine film."
    assert "attachment" in r.headers["content-disposition"]
    (export_store.export_dir() / address.split("/")[-1]).unlink()
    r = httpx.get(url + address, timeout=30)
    assert r.status_code == 404 and "expired" in r.text


def test_unknown_endpoints_and_event_numbers_are_404_not_500(app):
    _, url = app
    for route in ("call", "run", "api"):
        r = httpx.post(f"{url}gradio_api/{route}/no_such_endpoint", json={"data": []}, timeout=30)
        assert r.status_code == 404 and "no public endpoint /no_such_endpoint" in r.json()["detail"]
    for index in (9999, -1, "1"):
        r = join(url, index, uuid.uuid4().hex)
        assert r.status_code == 404 and "There is no event" in r.json()["detail"]


def test_an_oversized_request_is_refused_before_it_is_read(app):
    _, url = app
    r = httpx.post(f"{url}gradio_api/call/sentiment", json={"data": ["x" * (guard.MAX_BODY + 10)]}, timeout=30)
    assert r.status_code == 413


# --- 2. fairness per client on /run ------------------------------------------------------------------------


def test_200_single_request_callers_at_once_on_run_are_each_a_client(app):
    demo, url = app

    async def burst():
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
            calls = [http.post("gradio_api/run/sentiment", json={"data": ["A fine film."]}) for _ in range(200)]
            return await asyncio.gather(*calls)

    old = demo.batcher.max_pending
    demo.batcher.max_pending = 4  # a client with more than 4 calls waiting is told to wait: none has
    try:
        replies = asyncio.run(burst())
    finally:
        demo.batcher.max_pending = old
    assert [r.status_code for r in replies] == [200] * 200
    statuses = [r.json()["data"][1] for r in replies]
    assert not [s for s in statuses if "many requests waiting" in s]
    assert all("⚠️" not in s for s in statuses)


def test_the_load_benchmarks_burst_loses_none(app):
    """benchmarks/load.py --burst on the tiny models: 100 requests at once, each from its own client (the benchmark
    sends 200; 100 keep this test under half a minute on a shared machine)."""
    from functools import partial

    from load_client import HttpClient, api_defaults, burst, outcome, report_burst

    demo, url = app
    seconds, problems, _ = burst(partial(HttpClient, url, api_defaults(url)), 100, {})
    assert problems == {} and len(seconds["answered"]) + len(seconds["retry"]) == 100
    assert report_burst(100, seconds, problems, 1.0) == 0
    assert outcome([None, f"⚠️ {failures.BUSY}"], "/sentiment", "x", {}) == "retry"
    assert outcome([None, "⚠️ other"], "/sentiment", "x", {}) == "lost"


# --- 3. damaged weights, NaN --------------------------------------------------------------------------------


def _damaged_copy(src, dst, start_fraction: float = 0.3):
    shutil.copytree(src, dst)
    weights = dst / "model.safetensors"
    raw = bytearray(weights.read_bytes())
    start = int(len(raw) * start_fraction)
    raw[start : start + len(raw) // 3] = b"\xff" * (len(raw) // 3)  # the right size, NaN where numbers were
    weights.write_bytes(bytes(raw))
    return dst


def test_weights_overwritten_with_nan_do_not_load(sentiment_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SENTIMENT_MODEL", str(_damaged_copy(sentiment_dir, tmp_path / "damaged")))
    loaded = load_pipeline(SentimentPipeline, "SENTIMENT_MODEL")
    assert loaded.pipeline is None and "damaged" in loaded.error and "NaN" in loaded.error


def test_weights_that_differ_from_the_recorded_hash_do_not_load(sentiment_dir, tmp_path, monkeypatch):
    from pipelines.models.folders import weights_sha256

    folder = tmp_path / "model"
    shutil.copytree(sentiment_dir, folder)
    metrics = folder / "metrics.json"
    metrics.write_text(json.dumps({"weights_sha256": weights_sha256(folder)}))
    monkeypatch.setenv("SENTIMENT_MODEL", str(folder))
    assert load_pipeline(SentimentPipeline, "SENTIMENT_MODEL").pipeline is not None  # the recorded hash: loads
    metrics.write_text(json.dumps({"weights_sha256": "0" * 64}))
    loaded = load_pipeline(SentimentPipeline, "SENTIMENT_MODEL")
    assert loaded.pipeline is None and "does not match the weights_sha256" in loaded.error


def test_the_shipped_models_record_their_weights_hash():
    from viz.models.loading import ROOT

    for task in ("sentiment", "sentiment-scratch", "translation"):
        folder = ROOT / "assets" / task
        recorded = json.loads((folder / "metrics.json").read_text())["weights_sha256"]
        index = folder / "model.safetensors.index.json"  # a sharded model: the index, then its shards in order
        files = [folder / "model.safetensors"]
        if index.is_file():
            files = [index, *(folder / f for f in dict.fromkeys(json.loads(index.read_text())["weight_map"].values()))]
        digest = hashlib.sha256()
        for f in files:
            digest.update(f.read_bytes())
        assert recorded == digest.hexdigest()


def _poisoned(pipe):
    """The pipeline with its weights turned NaN after loading (what damaged weights that slipped through do)."""
    with torch.no_grad():
        for weight in pipe.model.parameters():
            weight.fill_(float("nan"))
    return pipe


def test_nan_is_never_served_by_the_pipelines_or_the_handlers(sentiment_dir, translation_dir):
    sentiment = _poisoned(SentimentPipeline.from_pretrained(str(sentiment_dir)))
    translation = _poisoned(TranslationPipeline.from_pretrained(str(translation_dir)))
    with pytest.raises(NonFiniteOutput):
        sentiment("A fine film.")
    with pytest.raises(NonFiniteOutput):
        sentiment.predict(["A fine film."])
    with pytest.raises(NonFiniteOutput):  # the head table makes its own pass
        sentiment.head_table("A fine film.")
    with pytest.raises(NonFiniteOutput):
        translation(GERMAN, beam_size=1)
    view, probabilities, status = analyze_review(sentiment, "A fine film.")
    assert view is None and probabilities is None and failures.NOT_FINITE in status and "nan" not in status
    view, english, status = translate(translation, GERMAN, "greedy", 2)
    assert view is None and english == "" and failures.NOT_FINITE in status


def test_the_served_pipelines_keep_the_guard(sentiment_dir, translation_dir):
    """NaN is checked once, in the pipeline (pipelines.trust.finite.guarded), not again in the handlers: the served
    pipelines the app's handlers call (pipelines.hosting.serving, through the batcher) must keep that check."""
    from pipelines.hosting.microbatch import MicroBatcher
    from pipelines.hosting.serving import serve
    from pipelines.tasks import SENTIMENT, TRANSLATION

    batcher = MicroBatcher(4)
    sentiment = serve(SENTIMENT, _poisoned(SentimentPipeline.from_pretrained(str(sentiment_dir))), batcher)
    translation = serve(TRANSLATION, _poisoned(TranslationPipeline.from_pretrained(str(translation_dir))), batcher)
    for redraws in (True, False):  # the tab's click, and the API's call (no maps)
        view, probabilities, status = analyze_review(sentiment, "A fine film.", redraws)
        assert view is None and probabilities is None and failures.NOT_FINITE in status and "nan" not in status
    view, english, status = translate(translation, GERMAN, "greedy", 2)
    assert view is None and english == "" and failures.NOT_FINITE in status


# --- 5. a missing model ---------------------------------------------------------------------------------------


def test_a_missing_models_endpoint_says_what_its_tab_says(translation_dir):
    from app import build_demo

    demo = build_demo(
        None,
        TranslationPipeline.from_pretrained(str(translation_dir)),
        sentiment_error="/tmp/nonexistent: no such folder",
    )
    url = serve(demo)
    try:
        code, (event, (label, status)) = call(url, "sentiment", ["A fine film."])
        assert code == 200 and event == "complete" and not label  # a cleared gr.Label reads as {}
        assert "sentiment model is not available" in status and "no such folder" in status
        assert "SENTIMENT_MODEL" in status and "/tmp/" not in status  # the path cut as in the tab
        label, status = Client(url, verbose=False, analytics_enabled=False).predict("x", api_name="/sentiment")
        assert "not available" in status
        assert call(url, "translate", [GERMAN])[1][0] == "complete"  # the other endpoint works
    finally:
        demo.close()


# --- 6, 8, 9: values the public endpoints are sent -------------------------------------------------------------


def test_rest_translate_applies_defaults_for_left_out_values(app):
    _, url = app
    for data in ([GERMAN], [GERMAN, None], [GERMAN, "beam search"], [GERMAN, None, None]):
        code, (event, (english, status)) = call(url, "translate", data)
        assert code == 200 and event == "complete" and english and "beam search, 2 beams" in status, (data, status)
    _, (_, (_, status)) = call(url, "translate", [GERMAN, "greedy"])
    assert "greedy decoding" in status
    _, (_, (_, status)) = call(url, "translate", [GERMAN, "beam search", "3"])
    assert "beam search, 3 beams" in status


@pytest.mark.parametrize("beam", ["abc", "NaN", [4], "1e400", 9, 0, 2.5, True, {"a": 1}])
def test_bad_beam_sizes_get_the_apps_message(app, beam):
    _, url = app
    code, (event, (english, status)) = call(url, "translate", [GERMAN, "beam search", beam])
    assert code == 200 and event == "complete" and english == ""
    assert "The beam size must be a whole number from 1 to 8" in status and "<class" not in status


def test_bad_values_get_the_same_message_through_gradio_client_and_log_no_traceback(app, capfd):
    _, url = app
    client = Client(url, verbose=False, analytics_enabled=False)
    english, status = client.predict(GERMAN, "beam search", "abc", api_name="/translate")
    assert english == "" and "The beam size must be a whole number" in status
    english, status = client.predict(GERMAN, "topk", 4, api_name="/translate")
    assert english == "" and "Decoding must be" in status and "<class" not in status
    _, status = client.predict(GERMAN, "beam search", 9, api_name="/translate")
    assert "from 1 to 8" in status
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err


@pytest.mark.parametrize("value", [12345, ["a", "b"], {"a": 1}, True, 1.5])
def test_a_review_that_is_not_text_gets_a_message(app, value):
    _, url = app
    code, (event, (label, status)) = call(url, "sentiment", [value])
    assert code == 200 and event == "complete" and not label  # a cleared gr.Label reads as {}
    assert "The review must be text" in status
    code, (event, (english, status)) = call(url, "translate", [value])
    assert english == "" and "The German sentence must be text" in status


def test_extra_values_are_refused(app):
    _, url = app
    code, body = call(url, "sentiment", ["A fine film.", "extra"])
    assert code == 422 and "at most 1 value" in body["detail"]
    code, body = call(url, "translate", [GERMAN, "greedy", 2, 5])
    assert code == 422 and "at most 3 values" in body["detail"]


def test_a_link_too_long_for_an_address_gets_a_page_not_a_500(app):
    """Sent in pieces of one network packet, as over a real network (where uvicorn's 16 KiB buffer for a request
    head applies: viz.server.guard.MAX_QUERY)."""
    _, url = app
    u = urlparse(url)
    path = "/?tab=sentiment&text=" + "a" * 14_000
    request = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    with socket.create_connection((u.hostname, u.port), timeout=30) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for start in range(0, len(request), 1460):
            conn.sendall(request[start : start + 1460])
            time.sleep(0.001)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 414") and b"too long" in body and b"14,0" in body


def test_link_values_out_of_range_are_reported():
    link = links.from_query("tab=translation&text=Ein+Hund.&layer=99&head=abc&beam=0&decoding=topk&step=2")
    assert link.layer is None and link.head is None and link.step == 1
    assert link.ignored == ["layer", "head", "beam", "decoding"]
    assert "layer, head, beam, decoding" in links.ignored_notice(link.ignored)
    assert links.from_query("text=fine&layer=2").ignored == [] and links.ignored_notice([]) is None


# --- 7. failures say what happened -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error,message",
    [
        (ModelProcessDied("the translation process ended unexpectedly"), failures.RESTARTING),
        (OSError(errno.ENOSPC, "No space left on device"), failures.NO_SPACE),
        (TooManyRequests("32 waiting"), failures.BUSY),
        (RuntimeError("boom"), failures.UNKNOWN),
    ],
)
def test_failures_say_what_happened_not_blame_the_text(error, message):
    def broken(*args, **kwargs):
        raise error

    broken.beam_size = 2
    for status in (analyze_review(broken, "A fine film.")[2], translate(broken, GERMAN)[2]):
        assert message in status and "another one" not in status


def test_a_model_process_that_dies_mid_call_reads_as_restarting():
    import functools

    from pipelines.hosting.processes import ModelProcess

    process = ModelProcess(functools.partial(os._exit, 3), name="translation")  # the child exits during the call
    try:

        def served(text, beam_size=None):
            return process.call("__call__")

        served.beam_size = 2
        _, english, status = translate(served, GERMAN)
        assert english == "" and failures.RESTARTING in status
    finally:
        process.close()


# --- 9. exports: a folder per instance, bounded, nothing partial --------------------------------------------------


def test_exports_go_to_this_instances_folder_under_gradios_temp_dir(sentiment):
    from gradio.utils import get_upload_folder

    folder = export_store.export_dir()
    assert folder.parent == Path(get_upload_folder())
    assert folder.name.startswith("attention-demo-exports-")
    other = folder.parent / f"attention-demo-exports-other-{uuid.uuid4().hex[:6]}"
    other.mkdir()
    try:
        theirs = other / "attention-sentiment-old.json"
        theirs.write_text("{}")
        os.utime(theirs, (0, 0))  # old enough to be removed, were it ours
        path, message = downloads.sentiment_download(sentiment, "A fine film.")
        assert path and Path(path).parent == folder and theirs.exists()
    finally:
        shutil.rmtree(other)


def test_a_full_disk_leaves_no_partial_export_and_says_so(sentiment, monkeypatch):
    real_write = Path.write_text

    def write_half(self, data, *args, **kwargs):
        real_write(self, data[: len(data) // 2], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")

    before = set(export_store.export_dir().iterdir())
    monkeypatch.setattr(Path, "write_text", write_half)
    path, message = downloads.sentiment_download(sentiment, "A fine film.")
    monkeypatch.undo()
    assert path is None and message == failures.NO_SPACE
    assert set(export_store.export_dir().iterdir()) == before


def test_exports_on_disk_are_bounded(sentiment, monkeypatch, tmp_path):
    monkeypatch.setattr(export_store, "_folder", tmp_path)  # an instance with no export yet
    monkeypatch.setattr(export_store, "MAX_EXPORT_BYTES", 1)
    first, _ = downloads.sentiment_download(sentiment, "A fine film.")
    path, message = downloads.sentiment_download(sentiment, "A fine film.")
    assert Path(first).parent == tmp_path and path is None and message == downloads.FULL


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_nan_or_infinity_anywhere_in_a_tensor_is_found(dtype, bad):
    from pipelines.trust.finite import non_finite

    for where in (0, 7, -1):
        maps = torch.rand(3, 5, 5).to(dtype)
        maps.view(-1)[where] = bad
        named = {"fine": torch.rand(4).to(dtype), "maps": [torch.rand(2), {"deep": maps}], "ids": torch.arange(3)}
        assert non_finite(named) == ["maps"]
    assert non_finite({"empty": torch.empty(0, dtype=dtype), "value": 0.5, "ids": torch.tensor([1, 2])}) == []


def test_a_visitor_clicking_through_the_heads_is_never_refused(monkeypatch):
    """Measured in chromium: a head click starts 4 private events, and a visitor clicking through the heads 4 times a
    second for 10 s had 13 of 132 refused under the old limits (60 at once, 3 a second), so some heads were never
    drawn. The default limits let 4 head clicks a second for 15 s through, and still stop a page that never rests."""
    from viz.server import guard

    clock = [1000.0]
    monkeypatch.setattr(guard.time, "monotonic", lambda: clock[0])
    sessions = guard.PageSessions()
    sessions.open("visitor")
    refused = 0
    for _ in range(4 * 15):  # 4 head clicks a second for 15 s
        refused += sum(sessions.take("visitor") is not None for _ in range(4))
        clock[0] += 0.25
    assert refused == 0
    flood = [sessions.take("visitor") for _ in range(1000)]  # a script, all at once
    assert flood.count("rate") > 800
