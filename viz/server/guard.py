"""The gate in front of gradio's event routes: only the documented endpoints answer callers from outside the page.

Gradio runs any event by name (POST /gradio_api/call/NAME, /gradio_api/run/NAME) or by number (fn_index, in
/gradio_api/queue/join and in the body of /run), api_visibility="private" ones included. This ASGI middleware
reads the body of those requests (at most MAX_BODY bytes) before gradio does, and:

- by name: only the public endpoints (/sentiment, /translate); any other name is a 404 with a message. Their values
  are checked for count: fewer than the endpoint takes are filled with null (the endpoint's own defaults apply),
  more are refused.
- by number (the page's own route: queue/join, and /run/predict for its unqueued events): an unknown fn_index is a
  404; a private event runs only for a session whose page has opened (its load events, which the page sends first,
  register it) and within that session's rate (a token bucket), else 403 / 429 with a message. What a page's
  session may do is so bounded per client.
"""

import html
import json
import logging
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from starlette.responses import HTMLResponse, JSONResponse

log = logging.getLogger(__name__)
MAX_BODY = 1 << 20  # bytes of a request that starts an event (a review is cut to 20,000 characters anyway)
# Bytes of a query string: the app's links hold at most viz.share.links.MAX_QUERY_CHARS (6,000); gradio fails with a 500
# on addresses over 65,536 characters (httpx.URL), for the page and for every event the page starts with its query.
# Under uvicorn's HTTP parser (h11), whose buffer for an unfinished request head is 16 KiB: a longer head that
# arrives in more than one read (any real network) is answered "400 Invalid HTTP request" before it reaches the app.
# So the page below is only sure to be shown for a query under that, and this limit stays well below it.
MAX_QUERY = 12 * 1024
TOO_LONG = (
    "<!doctype html><title>Link too long</title><p>This link is too long ({n:,} characters of query; this app's "
    'links hold at most {most:,}). Shorten the text in it, or <a href="{path}">open the app</a> and paste '
    "the text.</p>"
)
_NAMED = re.compile(r"/(?:run|api|call/v2|call)/(?P<name>[^/]+)/?$")
_JOIN = re.compile(r"/queue/join/?$")


@dataclass
class Limits:
    sessions: int = 20_000  # page sessions remembered (least recently used are forgotten first)
    idle_s: float = 6 * 3600  # a page idle this long must be reloaded
    # A click starts several private events (a review 6, a head 4, a model switch 11); a visitor clicking through the
    # heads 4 times a second starts 16 a second, and 60 at 3 a second refused 13 of 132 in 10 s (benchmarks/RESULTS.md)
    burst: float = 120  # private events a page may start at once...
    per_second: float = 10  # ...and on average, over time


LIMITS = Limits()  # what every guard uses unless given its own (tests lower them)


class PageSessions:
    """Sessions of pages that have opened, each with a token bucket of private events. Thread-safe."""

    def __init__(self, limits: Limits | None = None):
        self._limits = limits
        self._seen: OrderedDict[str, list[float]] = OrderedDict()  # session -> [tokens, last refill time]
        self._lock = threading.Lock()

    @property
    def limits(self) -> Limits:
        return self._limits or LIMITS

    def open(self, session: str) -> None:
        with self._lock:
            self._seen.setdefault(session, [self.limits.burst, time.monotonic()])
            self._seen.move_to_end(session)
            while len(self._seen) > self.limits.sessions:
                self._seen.popitem(last=False)

    def take(self, session: str) -> str | None:
        """None when the session may start one more private event (and counts it), else why not: 'unknown'
        (never opened, or forgotten) or 'rate'."""
        now = time.monotonic()
        with self._lock:
            bucket = self._seen.get(session)
            if bucket is None or now - bucket[1] > self.limits.idle_s:
                self._seen.pop(session, None)
                return "unknown"
            tokens = min(self.limits.burst, bucket[0] + (now - bucket[1]) * self.limits.per_second)
            self._seen.move_to_end(session)
            if tokens < 1:
                bucket[:] = [tokens, now]
                return "rate"
            bucket[:] = [tokens - 1, now]
            return None


def _public(blocks) -> dict[str, object]:
    return {fn.api_name: fn for fn in blocks.fns.values() if fn.api_visibility == "public" and fn.api_name}


def _endpoint_list(public: dict) -> str:
    return ", ".join(f"/{name}" for name in sorted(public)) or "none"


def _refuse(status: int, message: str) -> JSONResponse:
    log.info("refused with %d: %s", status, message[:80])
    return JSONResponse({"detail": message, "error": message}, status_code=status)


def _signature(fn) -> str:
    names = [getattr(block, "label", None) or type(block).__name__ for block in fn.inputs]
    return ", ".join(str(n) for n in names)


def check_values(fn, body: dict) -> JSONResponse | None:
    """Fill missing values of a public endpoint with null (in place); refuse extra ones."""
    data = body.get("data")
    if not isinstance(data, list):
        return None  # gradio's own validation answers
    n = len(fn.inputs)
    if len(data) > n:
        return _refuse(
            422,
            f"/{fn.api_name} takes at most {n} values ({_signature(fn)}); this request sent {len(data)}.",
        )
    body["data"] = data + [None] * (n - len(data))
    return None


class ApiGuard:
    """ASGI middleware; the gradio app it wraps is found in the request scope (scope["app"].get_blocks())."""

    def __init__(self, app, limits: Limits | None = None):
        self.app = app
        self.pages = PageSessions(limits)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and len(scope.get("query_string", b"")) > MAX_QUERY:
            return await _too_long(scope)(scope, receive, send)
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        path = scope["path"]
        named, join = _NAMED.search(path), _JOIN.search(path)
        if not (named or join) or "/gradio_api/" not in path + "/":
            return await self.app(scope, receive, send)
        body = await _read_body(receive)
        if body is None:
            refusal = _refuse(413, f"The request is too large: at most {MAX_BODY // 1024:,} KB.")
            return await refusal(scope, receive, send)
        try:
            payload = json.loads(body) if body else {}
        except (json.JSONDecodeError, UnicodeDecodeError):
            payload = None  # gradio's own validation answers
        blocks = scope["app"].get_blocks()
        if isinstance(payload, dict):
            refusal = (
                self._check_named(blocks, named.group("name"), payload) if named else self._check_join(blocks, payload)
            )
            if refusal is not None:
                return await refusal(scope, receive, send)
            body = json.dumps(payload).encode()
        return await self.app(_with_length(scope, len(body)), _replay(body, receive), send)

    def _check_named(self, blocks, name: str, payload: dict) -> JSONResponse | None:
        if payload.get("fn_index") is not None:  # the page runs its unqueued events as /run/predict by number
            return self._check_join(blocks, payload)
        public = _public(blocks)
        fn = public.get(name)
        if fn is None:
            return _refuse(404, f"There is no public endpoint /{name}. This app's API: {_endpoint_list(public)}.")
        return check_values(fn, payload) if isinstance(payload.get("data"), list) else None

    def _check_join(self, blocks, payload: dict) -> JSONResponse | None:
        index, session = payload.get("fn_index"), payload.get("session_hash")
        fn = blocks.fns.get(index) if isinstance(index, int) and not isinstance(index, bool) else None
        if fn is None:
            return _refuse(404, f"There is no event {str(index)[:20]!s} in this app.")
        if fn.api_visibility != "private":
            return check_values(fn, payload)
        if not isinstance(session, str) or not session:
            session = ""  # /run/predict runs an event without one: no page, so refused below
        if session and any(trigger == "load" for _, trigger in fn.targets):
            self.pages.open(session)  # the page's first events: its session may use the page's events
            return None
        why = self.pages.take(session)
        if why == "unknown":
            public = _endpoint_list(_public(blocks))
            return _refuse(
                403,
                "This event belongs to the app's web page, and this page session is not open (or was idle for "
                f"hours, or the server restarted): please reload the page. Programs can call {public}.",
            )
        if why == "rate":
            return _refuse(429, "Too many requests from this page at once: please wait a few seconds.")
        return None


def _too_long(scope) -> HTMLResponse:
    from ..share.links import MAX_QUERY_CHARS

    path = html.escape(scope.get("root_path", "") + "/", quote=True)
    page = TOO_LONG.format(n=len(scope["query_string"]), most=MAX_QUERY_CHARS, path=path)
    return HTMLResponse(page, status_code=414)


async def _read_body(receive) -> bytes | None:
    """The whole request body, or None when it passes MAX_BODY."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive):
    """A receive() that gives `body` once, then waits on the real one (for the client's disconnect)."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _with_length(scope, length: int):
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
    return {**scope, "headers": [*headers, (b"content-length", str(length).encode())]}
