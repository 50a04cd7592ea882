"""Milliseconds from a token choice to the drawn "Inside one head" view, on the bundled models.

    python -m benchmarks.inside_head [--runs 9]

The view records every head once, when its accordion is opened (one model run, timed apart); after that a token, layer,
head, kind or step choice only redraws from the recording: viz.attention.inside_head_panel.figures (the steps' HTML and
the heads' bars) and what gradio makes of them to send (gr.HTML and gr.Plot postprocess). That redraw is timed on the
~300-word benchmark review (viz/examples.py BENCH_REVIEW) for --runs tokens spread over the review, on the last layer
and head, and its median, and the slowest, are printed with the bytes it sends. The same for the German benchmark
sentence (cross-attention, each English step). Models: $SENTIMENT_MODEL / $TRANSLATION_MODEL, else assets/sentiment and
assets/translation.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from pipelines.models.model_registry import ModelRegistry  # noqa: E402
from viz.attention import inside_head_panel as panel  # noqa: E402
from viz.examples import BENCH_GERMAN, BENCH_REVIEW  # noqa: E402
from viz.sentiment.handlers import analyze_review  # noqa: E402
from viz.translation.handlers import translate  # noqa: E402


def sent(steps: str, heads) -> int:
    """Bytes gradio sends for the redraw: the HTML and the figure as their components serialize them."""
    import gradio as gr

    plot = gr.Plot().postprocess(heads)
    plot = plot.model_dump() if hasattr(plot, "model_dump") else plot
    return len(json.dumps(gr.HTML().postprocess(steps)).encode()) + len(json.dumps(plot).encode())


def redraw_ms(view, internals, kind: str, layer: int, head: int, token: str, step=None) -> tuple[float, float, int]:
    """One redraw from the recording: (milliseconds of wall clock, of this process's CPU time, bytes sent). On a
    busy machine the CPU time is the better guess of the wall clock on a quiet one."""
    start, cpu = time.perf_counter(), time.process_time()
    steps, heads = panel.figures(view, internals, kind, layer, head, token, step)
    size = sent(steps, heads)
    return (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000, size


def report(name: str, view, pipe, kind: str, tokens: list[str], steps: list) -> None:
    start = time.perf_counter()
    internals = panel.record(ModelRegistry.of(pipe), view)
    recorded_ms = (time.perf_counter() - start) * 1000
    ki = internals.kinds[kind]
    L, H = ki.q.size(0), ki.q.size(1)
    redraw_ms(view, internals, kind, L - 1, H - 1, tokens[0], steps[0])  # warm-up: first numpy and plotly calls
    runs = [redraw_ms(view, internals, kind, L - 1, H - 1, t, s) for t, s in zip(tokens, steps)]
    wall, cpu, size = ([run[i] for run in runs] for i in range(3))
    print(
        f"{name}: {L} layers x {H} heads, {ki.q.size(2)} queries x {ki.k.size(2)} keys ({kind}); recording on "
        f"opening {recorded_ms:.0f} ms; redraw for a token choice over {len(runs)} tokens: median "
        f"{statistics.median(wall):.1f} ms (slowest {max(wall):.1f}), CPU time median {statistics.median(cpu):.1f} "
        f"ms (slowest {max(cpu):.1f}); {statistics.median(size) / 1000:.0f} KB sent"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="token choices timed (default 9)")
    args = parser.parse_args(argv)
    from viz.models.loading import load_models

    sentiment, translation = load_models()
    if sentiment.pipeline is not None:
        print(f"sentiment model: {sentiment.source}")
        view, _, _ = analyze_review(sentiment.pipeline, BENCH_REVIEW)
        T = len(view.maps.queries["self"])
        tokens = [f"src:{(i * (T - 1)) // max(args.runs - 1, 1)}" for i in range(args.runs)]
        name = f"sentiment ({len(BENCH_REVIEW.split())}-word review)"
        report(name, view, sentiment.pipeline, "self", tokens, [None] * len(tokens))
    if translation.pipeline is not None:
        print(f"translation model: {translation.source}")
        view, _, _ = translate(translation.pipeline, BENCH_GERMAN)
        T = len(view.maps.queries["cross"])
        steps = [1 + (i % T) for i in range(args.runs)]
        name = f"translation ({len(BENCH_GERMAN.split())}-word sentence)"
        report(name, view, translation.pipeline, "cross", [f"tgt:{s - 1}" for s in steps], steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
