"""What an API call computes: /translate and /generate as they answer now, beside the page's path they took before.

    python -m benchmarks.api_cost --rounds 10

Until 2026-12-01 /translate ran the page's translation (the teacher-forced pass with every map and value norm, each
step's top-k, the float16 view) and /generate the page's streamed generation (a top-10 figure a token, the maps pass,
the view), then returned a line and a status. Now each computes only that (need_weights=False). Both paths run here
in this process, alternating call by call, on served pipelines without a cache (the app's models: assets/, SmolLM2
when installed); prints the median process CPU and wall seconds of each, per endpoint, and checks their answers agree.
"""

import argparse
import statistics
import time

from pipelines.hosting.microbatch import MicroBatcher
from pipelines.hosting.serving import serve
from pipelines.tasks import LM, TRANSLATION
from viz.examples import BENCH_GERMAN, LANDING
from viz.next_word import handlers as lm_handlers
from viz.server import hosting
from viz.translation import handlers as translation_handlers


def page_translate(pipe) -> str:
    return translation_handlers.translate(pipe, BENCH_GERMAN)[1]


def api_translate(pipe) -> str:
    return translation_handlers.translate(pipe, BENCH_GERMAN, redraws=False)[1]


def page_generate(pipe) -> str:
    *_, (_, text, _, _) = lm_handlers.generate(pipe, LANDING[LM.name])
    return text


def api_generate(pipe) -> str:
    return lm_handlers.api_generate(pipe, LANDING[LM.name])[0]


ENDPOINTS = {"/translate": (TRANSLATION, page_translate, api_translate), "/generate": (LM, page_generate, api_generate)}


def timed(fn, pipe) -> tuple[float, float, str]:
    cpu, wall = time.process_time(), time.perf_counter()
    answer = fn(pipe)
    return time.process_time() - cpu, time.perf_counter() - wall, answer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="calls of each path, alternating")
    args = parser.parse_args(argv)
    from viz.models.loading import load_lm, load_models

    hosting.set_torch_threads()
    _, translation = load_models()
    lm, _ = load_lm()
    pipes = {TRANSLATION.name: translation.pipeline, LM.name: lm.pipeline}
    batcher = MicroBatcher(hosting.MAX_BATCH, parallel=hosting.parallel_models())
    for endpoint, (task, before, now) in ENDPOINTS.items():
        pipe = serve(task, pipes[task.name], batcher)
        timed(before, pipe), timed(now, pipe)  # warm
        runs = {"before (the page's path)": [], "now": []}
        for _ in range(args.rounds):
            for name, fn in zip(runs, (before, now)):
                runs[name].append(timed(fn, pipe))
        answers = {r[2] for rs in runs.values() for r in rs}
        for name, rs in runs.items():
            cpu, wall = statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)
            print(f"{endpoint} {name}: median {cpu * 1000:.0f} ms CPU, {wall * 1000:.0f} ms wall ({len(rs)} calls)")
        print(f"{endpoint}: {'the same answer' if len(answers) == 1 else 'ANSWERS DIFFER'} on every call", flush=True)


if __name__ == "__main__":
    main()
