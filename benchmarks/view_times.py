"""Seconds each slow view takes on the longest input the app accepts, on the bundled models (CPU).

    python -m benchmarks.view_times [--runs 1] [--inputs longest|budget] [--views all|head-table]

Sentiment: a review of MAX_REVIEW_CHARS characters (the model reads its first and last tokens, max_len in all):
every explanation method, its faithfulness, the head table. Translation: a German input near MAX_GERMAN_CHARS:
the translation, each explanation method, its faithfulness and the head table. Prints one line per view
(the best of --runs), wall clock and CPU seconds. The default views (the ones a click computes without being
asked) must stay under 3 s. `--inputs budget` times the inputs the budgets name instead (the ~300-word review and
the 15-word German sentence of benchmarks/app_latency.py; the head table: < 5 s), after one untimed call;
`--views head-table` times the head tables alone. The head-effect passes run on the cores torch's threads leave
idle (pipelines.attention.passes): with --threads 1 on 2 cores, two at once (--passes 1: one).
"""

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import torch  # noqa: E402

from pipelines.attention import passes  # noqa: E402
from pipelines.explanations import default_method  # noqa: E402
from pipelines.sentiment import SentimentPipeline  # noqa: E402
from pipelines.translation import TranslationPipeline  # noqa: E402
from viz.examples import BENCH_GERMAN, BENCH_REVIEW, GERMAN, LONG_REVIEW  # noqa: E402
from viz.inputs import MAX_GERMAN_CHARS, MAX_REVIEW_CHARS  # noqa: E402


def longest(texts: list[str], limit: int) -> str:
    """The texts joined with spaces, repeated, cut at the last space before `limit` characters."""
    out = " ".join(texts)
    while len(out) < limit:
        out = out + " " + out
    return out[:limit].rsplit(" ", 1)[0]


class Seconds(float):
    """Wall-clock seconds, printed with the CPU seconds the process spent (with one torch thread, about what
    the view takes on an idle core: the wall clock on a shared machine is longer)."""

    cpu: float = 0.0

    def __format__(self, spec: str) -> str:
        return f"{float(self):{spec}} s (CPU {self.cpu:{spec}})"


def best(fn, runs: int) -> tuple[Seconds, object]:
    """(the fastest of `runs` calls, the last value)."""
    times, value = [], None
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        value = fn()
        seconds = Seconds(time.perf_counter() - start)
        seconds.cpu = time.process_time() - cpu
        times.append(seconds)
    return min(times), value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the app serves with 1 per model)")
    ap.add_argument("--inputs", choices=["longest", "budget"], default="longest", help="which inputs (see above)")
    ap.add_argument("--views", choices=["all", "head-table"], default="all", help="every slow view, or the head tables")
    ap.add_argument("--passes", type=int, default=passes.MAX_AT_ONCE, help="head-effect passes at once, at most")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    passes.MAX_AT_ONCE = args.passes
    sent = SentimentPipeline.from_pretrained(str(ROOT / "assets" / "sentiment"))
    trans = TranslationPipeline.from_pretrained(str(ROOT / "assets" / "translation"))
    if args.inputs == "budget":
        review, german = BENCH_REVIEW, BENCH_GERMAN
        sent.head_table(review), trans.head_table(german)  # warm: the first call of each is slower
    else:
        review, german = longest([LONG_REVIEW], MAX_REVIEW_CHARS), longest(GERMAN, MAX_GERMAN_CHARS)
    print(f"review: {len(review):,} characters, {len(sent.encode(review).ids)} tokens read")
    defaults = {task: default_method(task)["method"] for task in ("sentiment", "translation")}
    every_view = args.views == "all"
    for method in sent.explanation_methods if every_view else ():
        seconds, expl = best(lambda m=method: sent.explain(review, m), args.runs)
        faith, _ = best(lambda e=expl: sent.faithfulness(e), args.runs)
        mark = " (default)" if method == defaults["sentiment"] else ""
        print(f"sentiment {method}{mark}: explain {seconds:.2f}, faithfulness {faith:.2f}")
    seconds, _ = best(lambda: sent.head_table(review), args.runs)
    print(f"sentiment head table: {seconds:.2f}, {passes.at_once(sent.adapter.device)} passes at once")
    seconds, result = best(lambda: trans(german), args.runs)
    print(
        f"german: {len(german):,} characters, {len(result.source_tokens)} tokens; translation {seconds:.2f} "
        f"({len(result.target_ids)} steps)"
    )
    for method in trans.explanation_methods if every_view else ():
        seconds, expl = best(lambda m=method: trans.explain(german, m, result=result), args.runs)
        faith, _ = best(lambda e=expl: trans.faithfulness(e), args.runs)
        mark = " (default)" if method == defaults["translation"] else ""
        print(f"translation {method}{mark}: explain {seconds:.2f}, faithfulness {faith:.2f}")
    seconds, _ = best(lambda: trans.head_table(german), args.runs)
    print(f"translation head table: {seconds:.2f}")


if __name__ == "__main__":
    main()
