"""Load test: start the app (python app.py) on a free port and drive the three public endpoints from many clients.

    python -m benchmarks.load --clients 32 --seconds 300       # the hosting check (about 7 minutes)
    python -m benchmarks.load --quick                           # a short run, as CI does (tests/test_load.py)
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
"""

import argparse
import sys
import threading
import time
from functools import partial

from tests.browser import free_port
from tests.load_client import (  # the clients and what they count, shared with the hosting tests
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
    return run(args)


def run(args) -> int:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = start_app(port)
    memory, peak = {}, [0.0]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(1.0):
            peak[0] = max(peak[0], tree_memory_mb(proc.pid)[0])

    try:
        wait_ready(url, proc)
        memory["start"] = tree_memory_mb(proc.pid)
        new_client = partial(CLIENTS[args.client], url, api_defaults(url))
        threading.Thread(target=sample, daemon=True).start()
        reference = sequential(new_client, 2 * sum(len(t) for t in TASKS.values()))
        memory["after warm-up"] = tree_memory_mb(proc.pid)
        if args.burst:
            lost = report_burst(args.burst, *burst(new_client, args.burst, reference))
            memory["after the burst"] = tree_memory_mb(proc.pid)
            print("resident memory of the app, MB: " + ", ".join(f"{k} {v[0]:.0f}" for k, v in memory.items()))
            print(f"peak {max(peak[0], *(v[0] for v in memory.values())):.0f} MB resident (sampled every second)")
            return 1 if lost else 0
        t0 = time.monotonic()
        sequential(new_client, args.sequential)
        print(f"{args.sequential} sequential calls (a new session each): {time.monotonic() - t0:.0f} s")
        memory[f"after {args.sequential} sequential calls"] = tree_memory_mb(proc.pid)

        def phase(name: str, clients: int, seconds: float) -> float:
            before = cpu_seconds(proc.pid)
            tally, wall = drive(new_client, clients, seconds, reference)
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
        sampling.set()
        proc.terminate()
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
