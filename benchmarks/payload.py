"""Bytes of figure JSON the app sends for one result, on the bundled models (what a page has to download).

    python benchmarks/payload.py [--review-words 300]

Prints, for the ~300-word benchmark review and the 15-word German sentence, the size of every figure the
first draw sends (plotly JSON, as gr.Plot serializes it) and the total per task.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from viz import handlers  # noqa: E402
from viz.examples import BENCH_GERMAN, BENCH_REVIEW  # noqa: E402


def figure_bytes(fig) -> int:
    """What gr.Plot sends for a plotly figure: its JSON inside the component's payload."""
    import gradio as gr

    value = gr.Plot().postprocess(fig)
    return len(json.dumps(value.model_dump() if hasattr(value, "model_dump") else value).encode())


def report(name: str, figs: dict) -> int:
    sizes = {k: figure_bytes(f) for k, f in figs.items() if f is not None}
    total = sum(sizes.values())
    parts = ", ".join(f"{k} {v / 1000:.0f} KB" for k, v in sizes.items())
    print(f"{name}: {total / 1000:.0f} KB of figure JSON ({parts})")
    return total


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    from viz.models import load_models

    sentiment, translation = load_models()
    if sentiment.pipeline is not None:
        view, _, _ = handlers.analyze_review(sentiment.pipeline, BENCH_REVIEW)
        overview, single = handlers.sentiment_figures(view, 0, 0)
        n = len(view.labels)
        report(
            f"sentiment ({len(BENCH_REVIEW.split())}-word review, {n} tokens)", {"overview": overview, "single": single}
        )
        L, H = len(view.attentions), view.attentions[0].shape[0]
        worst = max(
            (sum(figure_bytes(f) for f in handlers.sentiment_figures(view, layer, head)), layer, head)
            for layer in range(L)
            for head in range(H)
        )
        print(f"  heaviest layer/head choice: layer {worst[1] + 1}, head {worst[2] + 1}: {worst[0] / 1000:.0f} KB")
    if translation.pipeline is not None:
        view, _, _ = handlers.translate(translation.pipeline, BENCH_GERMAN)
        figs = handlers.translation_figures(view, 0, 0)
        steps = handlers.translation_step(view, 0, 1)
        names = ["cross overview", "cross", "encoder", "decoder", "step heads", "step top-k"]
        report(f"translation ({len(BENCH_GERMAN.split())}-word sentence)", dict(zip(names, [*figs, *steps])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
