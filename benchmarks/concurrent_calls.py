"""Calls beside a head table, as the app serves a sentiment model: does each give the result it gives alone?

    python -m benchmarks.concurrent_calls                          # assets/sentiment, 3 rounds
    python -m benchmarks.concurrent_calls --model assets/sentiment-scratch --rounds 5

The app runs the sentiment model in the server's process behind one MicroBatcher (two models at once, one torch thread
each). A head table is a background call whose passes run two at a time (pipelines.attention.passes); calls of the same
model that arrive meanwhile run at its pause points, beside its other pass. Each round starts a head table, then every
example review's explanation (the methods under a second) and its recorded run (inside one head), each from a visitor
and a thread of its own, and compares every answer with the same call made alone. Prints, a round a line, the calls that
failed and those whose numbers differ (tests/pipelines/test_thread_hooks.py holds the tiny model to none).
"""

import argparse
import threading
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]

from pipelines import SentimentPipeline  # noqa: E402
from pipelines.hosting.microbatch import MicroBatcher  # noqa: E402
from pipelines.hosting.serving import calling_client, serve  # noqa: E402
from pipelines.tasks import SENTIMENT  # noqa: E402
from viz.examples import LONG_REVIEW, REVIEWS  # noqa: E402
from viz.server import hosting  # noqa: E402

FAST_METHODS = ("attention", "rollout", "attention_norm", "gradient_x_input")


def differs(name: str, got, alone) -> bool:
    if name == "head_table":
        return got != alone
    if name == "explain":
        return not np.allclose(got.scores, alone.scores, rtol=1e-5, atol=1e-7)
    return not torch.allclose(got.kinds["self"].heads, alone.kinds["self"].heads, rtol=1e-5, atol=1e-6)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=str(ROOT / "assets" / "sentiment"))
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(hosting.TORCH_THREADS)
    pipe = SentimentPipeline.from_pretrained(args.model)
    texts = [text for _, text in REVIEWS[:-1]]
    methods = [m for m in FAST_METHODS if m in pipe.explanation_methods]
    calls = [("head_table", (LONG_REVIEW,), {})]
    calls += [("explain", (t,), {"method": m}) for t in texts for m in methods]
    calls += [("internals", (t,), {}) for t in texts]
    start = time.perf_counter()
    alone = [getattr(pipe, name)(*a, **kw) for name, a, kw in calls]
    print(f"{Path(args.model).name}: {len(calls)} calls, {time.perf_counter() - start:.1f} s one after another")
    server = serve(SENTIMENT, pipe, MicroBatcher(hosting.MAX_BATCH, parallel=hosting.parallel_models()))
    for r in range(args.rounds):
        start = time.perf_counter()
        got, failed = one_round(server, calls)
        seconds = time.perf_counter() - start
        wrong = [f"{c[0]} {c[2].get('method', '')}" for c, g, a in zip(calls, got, alone) if g and differs(c[0], g, a)]
        print(f"round {r + 1}: {seconds:.1f} s, failed {len(failed)}, differing {len(wrong)}")
        for line in failed + wrong:
            print("   ", line)


def one_round(server, calls: list) -> tuple[list, list[str]]:
    """Every call from a visitor and a thread of its own, the head table first and the rest while it runs:
    (the answers, None where a call failed; what each failure raised)."""
    got, failed = [None] * len(calls), []

    def call(i: int) -> None:
        name, a, kw = calls[i]
        try:
            with calling_client(i):  # a visitor each, as on a Space
                got[i] = getattr(server, name)(*a, **kw)
        except Exception as e:  # noqa: BLE001  (counted and printed)
            failed.append(f"{name} {kw.get('method', '')}: {e!r}"[:160])

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(calls))]
    for i, t in enumerate(threads):
        t.start()
        time.sleep(0.05 if i == 0 else 0.005)
    for t in threads:
        t.join()
    return got, failed


if __name__ == "__main__":
    main()
