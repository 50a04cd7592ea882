"""The clients that load the app over HTTP (gradio's REST API) or through gradio_client, and what they count: shared by
the hosting tests and `python -m benchmarks.load` (the benchmark's command line)."""

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from viz.examples import BENCH_GERMAN, LONG_REVIEW  # noqa: E402

_PARAGRAPHS = LONG_REVIEW.split("\n\n")
REVIEWS = ["\n\n".join(_PARAGRAPHS[i:] + _PARAGRAPHS[:i]) for i in range(3)]  # ~300 words each
GERMAN = [
    BENCH_GERMAN,
    "Zwei junge Frauen in bunten Kleidern tanzen auf einer Straße vor einem kleinen roten Café.",
    "Ein Junge mit einer roten Mütze spielt mit seinem Hund im Schnee vor dem Haus.",
]
PROMPTS = [
    "This movie was",
    "Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say that they were perfectly normal. Mr.",
    "The best part of the film is",
]
TASKS = {"/sentiment": REVIEWS, "/translate": GERMAN, "/generate": PROMPTS}


@dataclass
class Tally:
    """Seconds per successful call and failures, per endpoint."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in TASKS})
    failures: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in TASKS})


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def process_tree(pid: int) -> list[int]:
    """pid and its descendants (the app's model processes)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    kids = [int(k) for k in children.read_text().split()] if children.exists() else []
    return [pid] + [p for k in kids for p in process_tree(k)]


def tree_memory_mb(pid: int) -> tuple[float, float]:
    """(summed resident memory, summed proportional set size) of a process and its descendants, in MB. RSS counts
    pages shared between them (torch's libraries) once per process; PSS splits them between the sharers."""
    rss = pss = 0.0
    for p in process_tree(pid):
        try:
            rss += rss_mb(p)
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1]) / 1024
        except (FileNotFoundError, ProcessLookupError):  # it ended meanwhile
            pass
    return rss, pss


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds a process and its descendants (the model processes) have used so far."""
    tick, user, system = os.sysconf("SC_CLK_TCK"), 0.0, 0.0
    for p in process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # it ended meanwhile
            continue
        user, system = user + int(fields[11]) / tick, system + int(fields[12]) / tick
    return user, system


def start_app(port: int) -> subprocess.Popen:
    env = {**os.environ, "GRADIO_SERVER_PORT": str(port), "GRADIO_SERVER_NAME": "127.0.0.1"}
    return subprocess.Popen(
        [sys.executable, str(ROOT / "app.py")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    import httpx

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(url + "config", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the app did not start within {timeout:.0f} s")


def answer(result) -> str:
    """What must not change between a call under load and the same call alone: the label, the English or the
    continuation."""
    first = result[0]
    return first.get("label", "") if isinstance(first, dict) else str(first)


class GradioClient:
    """Calls through gradio_client (what the README shows API users); about 0.2 s of CPU per call here."""

    def __init__(self, url: str, defaults: dict | None = None):  # gradio_client fills in defaults itself
        from gradio_client import Client

        self.client = Client(url, verbose=False, analytics_enabled=False)

    async def predict(self, api: str, text: str) -> list:
        return await asyncio.to_thread(self.client.predict, text, api_name=api)

    async def aclose(self) -> None:
        self.client.close()


def api_defaults(url: str) -> dict[str, list]:
    """{endpoint: default values of its parameters after the first} from /gradio_api/info, as gradio_client
    fills them in (the REST API wants every input)."""
    import httpx

    info = httpx.get(url + "gradio_api/info", timeout=30).json()["named_endpoints"]
    return {api: [p.get("parameter_default") for p in info[api]["parameters"][1:]] for api in TASKS}


class HttpClient:
    """Calls through Gradio's documented REST API (POST /gradio_api/call/NAME, then read the event stream),
    one session per client, with little CPU of its own: the load generator shares the app's 2 cores.
    One call at a time per client: concurrent REST calls that share a session_hash failed here with
    "404: Not Found" (gradio 6.31)."""

    def __init__(self, url: str, defaults: dict[str, list] | None = None):
        """defaults: api_defaults(url), for the inputs a call does not give."""
        import httpx

        self.http = httpx.AsyncClient(base_url=url, timeout=120)
        self.session = uuid.uuid4().hex
        self.defaults = defaults or {}

    async def predict(self, api: str, text: str, *more) -> list:
        """The outputs of one call (text, then `more` inputs or the endpoint's defaults for the rest)."""
        data = [text, *more, *self.defaults.get(api, [])[len(more) :]]
        r = await self.http.post(f"gradio_api/call{api}", json={"data": data, "session_hash": self.session})
        r.raise_for_status()
        event, data = None, None
        async with self.http.stream("GET", f"gradio_api/call{api}/{r.json()['event_id']}") as stream:
            async for line in stream.aiter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:") and event in ("complete", "error"):
                    data = line[5:].strip()
                    break
        if event != "complete" or data is None:
            raise RuntimeError(f"{event}: {(data or '')[:80]}")
        return json.loads(data)

    async def aclose(self) -> None:
        await self.http.aclose()


CLIENTS = {"http": HttpClient, "gradio": GradioClient}


async def call(client, api: str, text: str, reference: dict, tally: Tally, timeout: float | None = None) -> None:
    """One call, counted in tally; one not answered within `timeout` seconds (None: no limit) is a failure."""
    start = time.perf_counter()
    try:
        result = await asyncio.wait_for(client.predict(api, text), timeout)
        problem = "warning: " + result[1][:80] if "⚠️" in result[1] else None
        if problem is None and reference and answer(result) != reference[(api, text)]:
            problem = f"differs from the sequential answer for {text[:30]!r}"
    except Exception as e:  # a failed request is counted, never fatal
        problem = f"{type(e).__name__}: {str(e)[:80]}"
    if problem:
        tally.failures[api].append(problem)
    else:
        tally.seconds[api].append(time.perf_counter() - start)


def drive(
    new_client, clients: int, seconds: float, reference: dict, timeout: float | None = None
) -> tuple[Tally, float]:
    """`clients` clients (new_client() each, its own session), calling one endpoint in a loop until `seconds`
    pass; a call not answered within `timeout` seconds fails, so the phase ends by seconds + timeout."""
    tally, apis = Tally(), list(TASKS)

    async def loop(i: int, end: float) -> None:
        client = new_client()
        api, n = apis[i % len(apis)] if clients > 1 else None, 0
        while time.monotonic() < end:
            this = api or apis[n % len(apis)]  # a lone client alternates the endpoints
            await call(client, this, TASKS[this][(i + n) % len(TASKS[this])], reference, tally, timeout)
            n += 1
        await client.aclose()

    async def main() -> None:
        end = time.monotonic() + seconds
        await asyncio.gather(*(loop(i, end) for i in range(clients)))

    start = time.monotonic()
    asyncio.run(main())
    return tally, time.monotonic() - start


def sequential(new_client, n: int, seconds: float | None = None, timeout: float | None = None, log=None) -> dict:
    """Up to n calls one after another, each from a new session, stopping once `seconds` have passed (None: all n);
    a call not answered within `timeout` seconds raises TimeoutError. Returns {(api, text): answer}; log(calls done,
    seconds so far) after every tenth call and once at the end."""
    jobs = [(api, text) for api, texts in TASKS.items() for text in texts]
    start = time.monotonic()

    async def main() -> dict:
        answers, done = {}, 0
        while done < n and (seconds is None or time.monotonic() - start < seconds):
            api, text = jobs[done % len(jobs)]
            client = new_client()
            answers[(api, text)] = answer(await asyncio.wait_for(client.predict(api, text), timeout))
            await client.aclose()
            done += 1
            if log is not None and done % 10 == 0 and done < n:
                log(done, time.monotonic() - start)
        if log is not None:
            log(done, time.monotonic() - start)
        return answers

    return asyncio.run(main())


RETRY_STATUS = (429, 503)  # HTTP answers that tell a client to come back: rate limit, gradio's queue full


def outcome(result, api: str, text: str, reference: dict) -> str:
    """'answered', 'retry' (the app said: busy, try again) or 'lost' (a warning or an answer unlike the reference)."""
    status = result[1]
    if "⚠️" in status:
        return "retry" if "try again" in status else "lost"
    return "answered" if not reference or answer(result) == reference[(api, text)] else "lost"


def burst(new_client, n: int, reference: dict) -> tuple[dict[str, list[float]], dict[str, int], float]:
    """n requests at once, each from a new client, alternating the endpoints: ({outcome: seconds of each},
    {problem: count} for the lost ones, wall seconds)."""
    import httpx

    apis = list(TASKS)
    seconds: dict[str, list[float]] = {"answered": [], "retry": [], "lost": []}
    problems: dict[str, int] = {}

    async def one(i: int) -> None:
        api = apis[i % len(apis)]
        text = TASKS[api][(i // len(apis)) % len(TASKS[api])]
        client, start = new_client(), time.perf_counter()
        try:
            kind = outcome(await client.predict(api, text), api, text, reference)
            problem = None if kind != "lost" else f"{api}: wrong answer or warning"
        except httpx.HTTPStatusError as e:
            code = e.response.status_code
            kind, problem = ("retry", None) if code in RETRY_STATUS else ("lost", f"HTTP {code}")
        except Exception as e:  # counted, never fatal
            kind, problem = "lost", f"{type(e).__name__}: {str(e)[:60]}"
        finally:
            await client.aclose()
        seconds[kind].append(time.perf_counter() - start)
        if problem:
            problems[problem] = problems.get(problem, 0) + 1

    async def main() -> None:
        await asyncio.gather(*(one(i) for i in range(n)))

    start = time.monotonic()
    asyncio.run(main())
    return seconds, problems, time.monotonic() - start


def report_burst(n: int, seconds: dict[str, list[float]], problems: dict[str, int], wall: float) -> int:
    """Print the burst's outcome; returns how many requests were lost."""
    print(f"\nburst: {n} requests at once from {n} clients, {wall:.1f} s until the last answer")
    print("| outcome | requests | p50 s | p95 s | max s |\n| --- | ---: | ---: | ---: | ---: |")
    for kind, values in seconds.items():
        p50, p95 = (statistics.median(values), percentile(values, 95)) if values else (0, 0)
        print(f"| {kind} | {len(values)} | {p50:.2f} | {p95:.2f} | {max(values or [0]):.2f} |")
    for problem, count in sorted(problems.items()):
        print(f"  lost: {count} x {problem}")
    return len(seconds["lost"])


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else (values or [0])[0]


def report(name: str, tally: Tally, wall: float, cpu: tuple[float, float] | None = None) -> float:
    """Print one phase's table; cpu: the app's (user, system) CPU seconds during it. Returns requests/s."""
    print(f"\n{name}: {wall:.0f} s")
    print("| endpoint | requests | failures | p50 s | p95 s | max s |\n| --- | ---: | ---: | ---: | ---: | ---: |")
    for api in TASKS:
        ok, bad = tally.seconds[api], tally.failures[api]
        if ok or bad:
            p50, p95 = (statistics.median(ok), percentile(ok, 95)) if ok else (0, 0)
            print(f"| {api} | {len(ok) + len(bad)} | {len(bad)} | {p50:.2f} | {p95:.2f} | {max(ok or [0]):.2f} |")
    for api, bad in tally.failures.items():
        for problem in sorted(set(bad))[:5]:
            print(f"  {api} failure: {problem}")
    done = sum(len(v) for v in tally.seconds.values())
    print(f"throughput: {done / wall:.2f} successful requests/s")
    if cpu is not None and done:
        user, system = cpu
        per_request = 1000 * (user + system) / done
        print(f"app CPU (all processes): {user:.0f} s user + {system:.0f} s system = {per_request:.0f} ms a request")
    return done / wall
