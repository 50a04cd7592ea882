"""What a visitor's landing costs: each tab's worked example as the page runs it, visitor after visitor.

    python -m benchmarks.landing                    # 20 visitors with the result cache, 3 without
    python -m benchmarks.landing --visits 20 --fresh-visits 0

Every tab lands on its example (viz.examples.LANDING): the page presses the tab's button, whose handler runs the model
and draws the first heatmap, then the explanation (the panel's default method) and its faithfulness follow. A visit
here makes those calls for the three tabs, in this process, as a visitor of its own (calling_client), on served
pipelines of the app's models (assets/, SmolLM2 when installed; translation in this process, not its own). Prints
the process CPU seconds and the wall seconds of each visit, first without the cache (--fresh-visits, each visit
recomputes everything), then with one (pipelines.hosting.cache.ResultCache, the app's budget): the first visitor
computes, the others are answered from the cache.
"""

import argparse
import statistics
import time

from pipelines.hosting import budget
from pipelines.hosting.cache import ResultCache
from pipelines.hosting.microbatch import MicroBatcher
from pipelines.hosting.serving import calling_client, serve
from pipelines.tasks import LM, SENTIMENT, TRANSLATION
from viz.attention import task_views
from viz.examples import LANDING
from viz.next_word import handlers as lm_handlers
from viz.sentiment import handlers as sentiment_handlers
from viz.server import hosting
from viz.translation import handlers as translation_handlers


def land_sentiment(pipe) -> None:
    view, _, _ = sentiment_handlers.analyze_review(pipe, LANDING[SENTIMENT.name])
    task_views.drawn_heatmap(view, 0, 0)
    explanation = pipe.explain(view.text, pipe.default_explanation["method"], progress=None)
    pipe.faithfulness(explanation)


def land_translation(pipe) -> None:
    view, _, _ = translation_handlers.translate(pipe, LANDING[TRANSLATION.name])
    task_views.drawn_heatmap(view, 0, 0)
    explanation = pipe.explain(view.text, None, contrast=None, result=view.result, progress=None)
    pipe.faithfulness(explanation)


def land_lm(pipe) -> None:
    *_, (view, _, _, _) = lm_handlers.generate(pipe, LANDING[LM.name])
    task_views.drawn_heatmap(view, 0, 0)
    method = pipe.default_explanation["method"]
    explanation = pipe.explain(view.text, method, step=view.step - 1, result=view.result, progress=None)
    pipe.faithfulness(explanation)


LANDINGS = ((SENTIMENT, land_sentiment), (TRANSLATION, land_translation), (LM, land_lm))


def visits(pipes: dict, n: int, cache: ResultCache | None) -> list[tuple[float, float]]:
    """(CPU seconds, wall seconds) of each of n visits, each a new visitor, on pipelines served with `cache`."""
    batcher = MicroBatcher(hosting.MAX_BATCH, parallel=hosting.parallel_models())
    served = {task.name: serve(task, pipes[task.name], batcher, cache=cache) for task, _ in LANDINGS}
    out = []
    for visitor in range(n):
        cpu, wall = time.process_time(), time.perf_counter()
        with calling_client(("visitor", visitor)):
            for task, land in LANDINGS:
                land(served[task.name])
        out.append((time.process_time() - cpu, time.perf_counter() - wall))
        print(f"  visit {visitor + 1:2d}: {out[-1][0]:6.2f} s CPU, {out[-1][1]:6.2f} s wall", flush=True)
    return out


def report(name: str, times: list[tuple[float, float]]) -> None:
    if not times:
        return
    first, rest = times[0], times[1:]
    line = f"{name}: visit 1 {first[0]:.2f} s CPU ({first[1]:.2f} s wall)"
    if rest:
        cpu = [t[0] for t in rest]
        line += (
            f"; visits 2-{len(times)}: median {statistics.median(cpu):.3f} s CPU a visit, "
            f"{sum(cpu):.2f} s in all (wall median {statistics.median(t[1] for t in rest):.3f} s)"
        )
    print(line, flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--visits", type=int, default=20, help="visitors with the result cache")
    parser.add_argument("--fresh-visits", type=int, default=3, help="visitors without it (each recomputes)")
    args = parser.parse_args(argv)
    from viz.models.loading import load_lm, load_models

    hosting.set_torch_threads()
    sentiment, translation = load_models()
    lm, _ = load_lm()
    pipes = {SENTIMENT.name: sentiment.pipeline, TRANSLATION.name: translation.pipeline, LM.name: lm.pipeline}
    print(f"models: {sentiment.source}, {translation.source}, {lm.source}", flush=True)
    print(f"without the cache, {args.fresh_visits} visits:", flush=True)
    report("without the cache", visits(pipes, args.fresh_visits, None))
    cache = ResultCache(budget.BUDGET.bytes(budget.BUDGET.cache))
    print(f"with the cache ({cache.budget / 2**20:.0f} MB), {args.visits} visits:", flush=True)
    report("with the cache", visits(pipes, args.visits, cache))
    print(f"cache: {len(cache)} results, {cache.bytes / 2**20:.1f} MB, {cache.hits} hits, {cache.misses} misses")


if __name__ == "__main__":
    main()
