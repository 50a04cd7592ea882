"""Generations decoded together (continuous batching, pipelines.hosting.decoding) against one at a time: tokens/s of
1, 4, 16 and 32 concurrent streams of 20 greedy tokens, ours and SmolLM2, one torch thread. Each stream is a visitor of
its own with a prompt of its own (the result cache off); "together" runs them through the served pipeline at once,
"one at a time" through the pipeline itself, one after another (how the app served them before). Also the time of one
decoding step of the batch by its number of rows. Prints numbers.

    python -m benchmarks.batched_decoding [--streams 1 4 16 32] [--tokens 20] [--gguf PATH] [--no-smollm2]
"""

import threading
import time

import torch

from benchmarks.layer_by_layer import language_models, model_options
from pipelines.hosting.microbatch import MicroBatcher
from pipelines.hosting.serving import calling_client, serve
from pipelines.language_model import Decoding
from pipelines.tasks import LM

SUBJECTS = ["The film", "My neighbour", "The old house", "A small dog", "The weather", "This restaurant", "The train",
            "Our teacher"]  # fmt: skip


def prompts(n: int) -> list[str]:
    """n different prompts of 6-8 tokens."""
    return [f"{SUBJECTS[i % len(SUBJECTS)]} number {i} was, to be honest," for i in range(n)]


def together(pipe, texts: list[str], decoding: Decoding) -> tuple[float, int]:
    """(wall seconds, tokens) of every prompt decoded at once through the served pipeline, a visitor each."""
    served = serve(LM, pipe, MicroBatcher(8))
    made = [0] * len(texts)

    def visit(i: int) -> None:
        with calling_client(f"visitor {i}"):
            made[i] = len(served.generate(texts[i], decoding, need_weights=False).steps)

    threads = [threading.Thread(target=visit, args=(i,)) for i in range(len(texts))]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, sum(made)


def one_at_a_time(pipe, texts: list[str], decoding: Decoding) -> tuple[float, int]:
    start = time.perf_counter()
    made = sum(len(pipe.generate(t, decoding, need_weights=False).steps) for t in texts)
    return time.perf_counter() - start, made


def step_ms(pipe, rows: int, length: int = 40, repeat: int = 5) -> float:
    """Median milliseconds of one step of a DecodingBatch of `rows` rows of `length` tokens."""
    batch = pipe.adapter.decoding_batch()
    batch.join({r: [1 + (r + i) % 50 for i in range(length)] for r in range(rows)})
    times = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        batch.step({r: 5 for r in range(rows)})
        times.append(time.perf_counter() - start)
    return 1000 * sorted(times[1:])[repeat // 2]


def main() -> None:
    parser = model_options(__doc__)
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 4, 16, 32])
    parser.add_argument("--tokens", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    decoding = Decoding(max_new_tokens=args.tokens)
    for name, pipe in language_models(args):
        print(f"\n{name}: {args.tokens} greedy tokens a stream, one thread")
        print("streams | together: s, tokens/s | one at a time: s, tokens/s | speed-up | one step of the batch, ms")
        for n in args.streams:
            texts = prompts(n)
            pipe.generate(texts[0], Decoding(max_new_tokens=2), need_weights=False)  # warm
            t_wall, t_made = together(pipe, texts, decoding)
            a_wall, a_made = one_at_a_time(pipe, texts, decoding)
            print(f"{n:7d} | {t_wall:6.2f} s, {t_made / t_wall:6.1f} | {a_wall:6.2f} s, {a_made / a_wall:6.1f} | "
                  f"{a_wall / t_wall * t_made / a_made:4.1f}x | {step_ms(pipe, n):6.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
