"""Settings for hosting the app for months on a small shared machine: bounded memory, no uploads, a queue
that takes bursts, and who is calling (for the fair batcher). Used by app.py and by every test that serves it."""

import os

import gradio as gr
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse

from pipelines.hosting import serving
from pipelines.hosting.serving import calling_client

from ..page import html_head as page
from ..page import theme
from ..page.scripts import call
from ..share.export_store import ServeExports
from .events import PRIVATE
from .guard import ApiGuard
from .sessions import MAX_SESSIONS, SessionsByBytes

QUEUE_SIZE = 256  # requests waiting at most; each waits in the fair batcher, not in gradio's FIFO
# A model's events: every admitted request goes on to the shared batcher, which runs each model one batch at a time in a
# lane of its own (the lanes side by side) and is fair across clients; gradio's own queue is first come, first served.
MODEL_EVENTS = dict(concurrency_id="models", concurrency_limit=QUEUE_SIZE)
MAX_BATCH = 8  # model calls run together at most (16 was no faster under load and used more memory: RESULTS.md)
# Each tab's model runs in a lane of its own (pipelines.hosting.microbatch), side by side, one batch each at a time,
# on one torch thread each: a second thread sped one call up only a little, while models in parallel use both cores;
# three lanes, so that a review never waits behind a generation and a
# translation (benchmarks/load.py; benchmarks/RESULTS.md "Hosting", "Lanes and the result cache").
PARALLEL_MODELS = 3
# Translation runs in a process of its own (pipelines.hosting.processes): beam search gives the GIL up and takes it back
# thousands of times a batch, and in the server's process it waited for it more than it computed (benchmarks/RESULTS.md
# "Hosting").
OWN_PROCESS = ("translation",)
TORCH_THREADS = 1
STATE_TTL_S = 15 * 60  # a result is kept this long after its last update, for redraws
DELETE_CACHE = (600, 600)  # gr.Blocks(delete_cache=...): gradio's temporary files go after 10 minutes


def quiet_queue_analytics() -> None:
    """Gradio's queue keeps a record of its last 10,000 events and, after every event, summarises all of them
    in a pandas DataFrame (for its monitoring page, which this app does not use): memory that grows with use
    and CPU spent per request under load. Keep one record, summarised rarely. Call before
    demo.queue() (the queue reads these when it is made)."""
    os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "1")
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000000")


class RefuseUploads:
    """ASGI middleware: the app takes no files, so every upload is refused before its body is read."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"].rstrip("/").endswith("/upload"):
            response = PlainTextResponse("This app takes no file uploads.", status_code=403)
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)


def bound_sessions(demo, budget_bytes: int) -> None:
    """The visitors' kept results (gr.State) bounded by budget_bytes of what they hold, once the app starts
    (viz.server.sessions: gradio's StateHolder exists from then on)."""

    async def adopt() -> None:
        SessionsByBytes.adopt(demo.state_holder, budget_bytes)

    demo.extra_startup_events.append(adopt)


def launch_options(demo) -> dict:
    """Keyword arguments for demo.launch() of a demo built by app.build_demo (its kept sessions bounded by
    bound_sessions)."""
    return dict(
        css=page.CSS + theme.CSS,
        theme=page.theme(),
        head=page.head_html(),
        max_file_size="1kb",  # a second lock on uploads, should a path escape RefuseUploads
        state_session_capacity=MAX_SESSIONS,
        max_threads=QUEUE_SIZE + 40,  # every admitted request may wait in the batcher, redraws still run
        # the outer one first: uploads are refused before the guard reads any body
        app_kwargs={"middleware": [Middleware(RefuseUploads), Middleware(ApiGuard), Middleware(ServeExports)]},
    )


def client_key(request: gr.Request | None):
    """Who is calling, for fairness: the browser tab's or API client's session; a call without a session
    (POST /gradio_api/run/NAME) is a client of its own. None outside a request."""
    if request is None:
        return None
    return getattr(request, "session_hash", None) or ("request", id(request))


def _request_client():
    """client_key of the gradio request this thread is serving (pipelines.hosting.serving.client_source)."""
    from gradio.context import LocalContext

    return client_key(LocalContext.request.get(None))


serving.client_source = _request_client  # model calls of every event are queued as their client's


def run_as(request: gr.Request | None, handler, *args):
    """handler(*args) with its model calls queued as this request's client's (see pipelines.hosting.serving)."""
    with calling_client(client_key(request)):
        return handler(*args)


def api_endpoint(fn, inputs: list, outputs: list, name: str, **event) -> None:
    """A public API endpoint /name: fn(inputs) -> outputs, outside the page. The page's own button runs a private
    event that also returns what only a browser needs (the result for redraws, kept in gr.State, and the first
    heatmap); an API call returns just the answer and leaves nothing in its session's state. Gradio names
    endpoints after event listeners, so the endpoint hangs on a button no one sees.
    fn gets the values as the client sent them (no preprocessing: gradio would turn 12345 into "12345" and
    answer a bad beam size with a traceback), so it checks them itself (viz.inputs)."""
    gr.Button(visible=False).click(fn, inputs, outputs, api_name=name, preprocess=False, **event)


# A tab's button shows no gradio progress: with it (even show_progress="minimal"), every output of the event went
# "pending" and gradio's page redrew and timed each one while the model ran, on the cores that run the model and
# draw the heatmap. Without it, a click to drawn heatmap is a little faster (benchmarks/RESULTS.md, "Click to drawn
# heatmap"). Instead the output the new result replaces (the prediction, the translation) is marked aria-busy from
# the click (viz/page/js/mark_busy.js), and dimmed by viz.page.html_head.CSS, until after_paint's steps clear it.


def first_view(busy: gr.components.Component) -> dict:
    """The event options of a tab's button: no gradio progress, and `busy` (an output with an elem_id) marked busy
    from the click until after_paint(event, busy) clears it. The js runs before the event is sent and passes its
    inputs on unchanged."""
    return dict(show_progress="hidden", js=call("mark_busy.js", busy.elem_id))


# A step in the browser only (viz/page/js/after_paint.js): resolves once the page has shown a frame with the event's
# outputs. Gradio's page does a lot of work when it starts an event (it copies the value of every component that was
# ever an event's progress target: progress_on_one_component); started straight after the first heatmap arrives, the
# next event held that heatmap back from the screen.
def after_paint(event, busy: gr.components.Component):
    """The event to chain follow-up work on so that it starts after the browser has shown `event`'s outputs. Its
    step, and a step on failure (gradio's page chains no .then step after a failed event), clear the busy mark
    first_view(busy) set on `busy`."""
    event.failure(None, js=call("clear_busy.js", busy.elem_id), **PRIVATE)
    return event.then(None, js=call("after_paint.js", busy.elem_id), **PRIVATE)


# Gradio's page keeps a loading status for every component that was ever an event's progress target (by default
# all its outputs), and at every change of any event's progress it hands each of them its status again: it finds
# the component in the page's tree and copies its properties, value included (a gr.State shows no progress, so it
# is never a target here). A page load and one review with its follow-up work (small multiples, explanation, head
# table, inside one head) made 25 such components, each handed its status several times per click; with one target
# per event, 6: a click to drawn heatmap is faster (benchmarks/RESULTS.md, "Click to drawn heatmap").
def progress_on_one_component(demo: gr.Blocks) -> None:
    """Call once every event of `demo` is wired: each event shows gradio's progress on one component at most, the
    one it names with show_progress_on, else its first output that is not a gr.State; one that shows no progress
    (show_progress="hidden") has none."""
    for fn in demo.fns.values():
        named = fn.outputs if fn.show_progress_on is None else fn.show_progress_on
        shown = [block for block in named if not isinstance(block, gr.State)]
        fn.show_progress_on = [] if fn.show_progress == "hidden" else shown[:1]


NO_RESULT = (
    "There is no result to redraw: results are kept for {minutes} minutes after their last use. "
    "Press the button above to run the model again."
)


def warn_if_no_result(view) -> None:
    """A layer, head or step changed by the visitor while the session holds no result (never run, or expired
    after STATE_TTL_S): say so in a toast, instead of leaving empty plots unexplained."""
    if view is None:
        gr.Warning(NO_RESULT.format(minutes=STATE_TTL_S // 60))


def watch_for_expiry(state: gr.State, *controls) -> None:
    """Wire warn_if_no_result to the visitor's own changes of these controls (not to programmatic ones)."""
    for control in controls:
        control.input(warn_if_no_result, [state], None, **PRIVATE)


def parallel_models() -> int:
    """How many models may run at once: PARALLEL_MODELS when each run uses one torch thread (python app.py sets
    that), else 1: two runs of several threads each on 2 cores spin against each other."""
    import torch

    return PARALLEL_MODELS if torch.get_num_threads() <= TORCH_THREADS else 1


def set_torch_threads(n: int = TORCH_THREADS) -> None:
    """Intra-op threads per model run (call before the models load; `python app.py` does)."""
    import torch

    torch.set_num_threads(n)
