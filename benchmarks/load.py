"""Load test: start the app (python app.py) on a free port and drive the three public endpoints from many clients.

    python -m benchmarks.load --clients 32 --seconds 300       # the hosting check (about 7 minutes)
    python -m benchmarks.load --quick                           # a short run, as CI does (tests/app/test_load.py)
    python -m benchmarks.load --burst 200                       # 200 requests at once from 200 clients

Phases: warm-up (each input once, sequentially: the reference answers), --sequential calls one after another
(a new session each), one client for --single-seconds (the one-client rate), then --clients clients for
--seconds, a third each on /sentiment (reviews of about 300 words), /translate (15-word German sentences, default
decoding) and /generate (three prompts, 20 greedy tokens). Prints requests, failures (errors, warnings, answers
that differ from the sequential reference), p50/p95 per endpoint, throughput, and the memory of the app (the
server and its model processes together: resident, and proportional, which counts shared pages once) at start,
after warm-up, after the sequential calls, at the end of the load and --settle seconds later, with the peak.
--burst N: after the warm-up, N requests at once, each from a client of its own (spread over the endpoints), then
nothing else: each must be answered (as the sequential reference) or told to retry (busy, queue full); any other
outcome counts as lost.
Models: $SENTIMENT_MODEL / $TRANSLATION_MODEL / $LM_MODEL, $LM_OURS_MODEL or assets/ (SmolLM2 when installed).

The run ends in bounded time whatever the app does: the sequential calls stop after --sequential-seconds (a /generate
on SmolLM2 takes a second or more, so 1,000 sequential calls alone took longer than 26 minutes and printed nothing), a
call not answered in --call-timeout seconds fails, and after --time-limit minutes the app is stopped and the run exits
with status 124. Each phase is announced as it starts.
"""

import argparse
import os
import subprocess
import sys
import threading
import time
from functools import partial

from tests.support.browser import free_port
from tests.support.load_client import (  # the clients and what they count, shared with the hosting tests
    CLIENTS,
    TASKS,
    api_defaults,
    burst,
    cpu_seconds,
    drive,
    process_tree,
    report,
    report_burst,
    sequential,
    start_app,
    tree_memory_mb,
    wait_ready,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients, half on each endpoint")
    parser.add_argument("--seconds", type=float, default=300, help="length of the concurrent phase")
    parser.add_argument("--single-seconds", type=float, default=30, help="length of the one-client phase")
    parser.add_argument("--sequential", type=int, default=1000, help="sequential calls, a new session each")
    parser.add_argument("--sequential-seconds", type=float, default=60, help="the sequential calls stop after this")
    parser.add_argument("--call-timeout", type=float, default=120, help="a call unanswered this long is a failure")
    parser.add_argument(
        "--time-limit", type=float, default=None, help="minutes; default: the phases' own length + 10 minutes"
    )
    parser.add_argument("--settle", type=float, default=5, help="seconds idle after the load, then memory again")
    parser.add_argument("--quick", action="store_true", help="4 clients for 6 s, 4 s alone, 6 sequential calls")
    parser.add_argument("--burst", type=int, default=0, help="N requests at once after the warm-up, and only that")
    parser.add_argument(
        "--client",
        choices=sorted(CLIENTS),
        default="http",
        help="http: Gradio's REST API from one asyncio thread (light); gradio: gradio_client, a thread per client",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.clients, args.seconds, args.single_seconds, args.sequential, args.settle = 4, 6, 4, 6, 1
    if args.time_limit is None:
        args.time_limit = (args.sequential_seconds + args.single_seconds + args.seconds + args.settle) / 60 + 10
    return run(args)


class Stages:
    """Announces each stage of the run as it starts (seconds since the start), and ends the run when the time
    limit passes during any of them: the app is stopped, the stage named, the exit status 124."""

    def __init__(self, proc, limit_s: float):
        self.start, self.name = time.monotonic(), "start"
        self.timer = threading.Timer(limit_s, self.expire, args=(proc, limit_s))
        self.timer.daemon = True
        self.timer.start()

    def __call__(self, name: str) -> None:
        self.name = name
        print(f"[{time.monotonic() - self.start:5.0f} s] {name}", flush=True)

    def expire(self, proc, limit_s: float) -> None:
        print(f"time limit of {limit_s / 60:g} min reached during: {self.name}; the app is stopped", flush=True)
        proc.kill()
        os._exit(124)


def sequential_calls(new_client, args) -> int:
    """The sequential phase, its progress printed; returns how many calls it made."""
    done = [0]

    def log(n: int, seconds: float) -> None:
        done[0] = n
        print(f"  {n} sequential calls in {seconds:.0f} s", flush=True)

    sequential(new_client, args.sequential, args.sequential_seconds, args.call_timeout, log)
    return done[0]


def run(args) -> int:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = start_app(port)
    stage = Stages(proc, args.time_limit * 60)
    memory, peak = {}, [0.0]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(1.0):
            peak[0] = max(peak[0], tree_memory_mb(proc.pid)[0])

    try:
        stage("starting the app")
        wait_ready(url, proc)
        memory["start"] = tree_memory_mb(proc.pid)
        new_client = partial(CLIENTS[args.client], url, api_defaults(url))
        threading.Thread(target=sample, daemon=True).start()
        stage("warm-up: each input twice, one after another (the reference answers)")
        reference = sequential(new_client, 2 * sum(len(t) for t in TASKS.values()), timeout=args.call_timeout)
        memory["after warm-up"] = tree_memory_mb(proc.pid)
        if args.burst:
            lost = report_burst(args.burst, *burst(new_client, args.burst, reference))
            memory["after the burst"] = tree_memory_mb(proc.pid)
            print("resident memory of the app, MB: " + ", ".join(f"{k} {v[0]:.0f}" for k, v in memory.items()))
            print(f"peak {max(peak[0], *(v[0] for v in memory.values())):.0f} MB resident (sampled every second)")
            return 1 if lost else 0
        stage(f"up to {args.sequential} sequential calls (a new session each), at most {args.sequential_seconds:g} s")
        done = sequential_calls(new_client, args)
        memory[f"after {done} sequential calls"] = tree_memory_mb(proc.pid)

        def phase(name: str, clients: int, seconds: float) -> float:
            stage(name)
            before = cpu_seconds(proc.pid)
            tally, wall = drive(new_client, clients, seconds, reference, args.call_timeout)
            cpu = tuple(b - a for a, b in zip(before, cpu_seconds(proc.pid)))
            return report(name, tally, wall, cpu)

        one = phase("1 client, alternating", 1, args.single_seconds)
        many = phase(f"{args.clients} clients, half on each endpoint", args.clients, args.seconds)
        memory["end"] = tree_memory_mb(proc.pid)
        time.sleep(args.settle)
        memory[f"{args.settle:g} s later"] = tree_memory_mb(proc.pid)
        print(f"\nthroughput with {args.clients} clients: {many / max(one, 1e-9):.1f}x one client's")
        print(f"app processes: {len(process_tree(proc.pid))} (the server and its model processes)")
        print("resident memory of the app, MB: " + ", ".join(f"{k} {v[0]:.0f}" for k, v in memory.items()))
        print("proportional set size, MB: " + ", ".join(f"{k} {v[1]:.0f}" for k, v in memory.items()))
        print(f"peak {max(peak[0], *(v[0] for v in memory.values())):.0f} MB resident (sampled every second)")
    finally:
        stage.timer.cancel()
        sampling.set()
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
