"""Bytes of figure JSON the app sends for one result, on the bundled models (what a page has to download).

    python -m benchmarks.payload [--review-words 300]

Prints, for the ~300-word benchmark review and the 15-word German sentence, the size of every figure the
first draw sends (plotly JSON, as gr.Plot serializes it) and the total per task, with the token list of token focus.
Then what the views send on demand: the model view (once its accordion is opened), token focus for one token,
and the large heatmap under the log and row-max colour scales; and inside one head (its steps' HTML and its heads'
bars, sent only once its accordion is opened: before that its events return gr.skip(), no value).
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from viz.attention import task_views, view_handlers  # noqa: E402
from viz.examples import BENCH_GERMAN, BENCH_REVIEW  # noqa: E402
from viz.sentiment.handlers import analyze_review  # noqa: E402
from viz.translation.handlers import translate, translation_step  # noqa: E402


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


def choices_bytes(choices) -> int:
    """What a gr.Dropdown update with these choices sends (its choices as JSON)."""
    return len(json.dumps(choices).encode())


def sentiment_report(pipe) -> None:
    view, _, _ = analyze_review(pipe, BENCH_REVIEW)
    overview, single = task_views.task_figures("sentiment", view, 0, 0)
    kinds = task_views.kinds(view)
    tokens = choices_bytes(view_handlers.token_choices(list(kinds.values())))
    first = report(
        f"sentiment ({len(BENCH_REVIEW.split())}-word review, {len(view.maps.queries['self'])} tokens)",
        {"overview": overview, "single": single},
    )
    print(f"  with the token list of token focus ({tokens / 1000:.0f} KB): {(first + tokens) / 1000:.0f} KB in all")
    L, H = view.maps.n_layers("self"), view.maps.n_heads
    worst = max(
        (sum(figure_bytes(f) for f in task_views.task_figures("sentiment", view, layer, head)), layer, head)
        for layer in range(L)
        for head in range(H)
    )
    print(f"  heaviest layer/head choice: layer {worst[1] + 1}, head {worst[2] + 1}: {worst[0] / 1000:.0f} KB")
    on_demand = {
        "model view": view_handlers.model_view(kinds["self"]),
        "token focus": view_handlers.token_focus(kinds["self"], 0, "src:5"),
        "single, log scale": task_views.heatmap(view, 0, 0, "log"),
        "single, row-max scale": task_views.heatmap(view, 0, 0, "row"),
        "single, tokens hidden": task_views.heatmap(view, 0, 0, "linear", True),
    }
    print("  on demand: " + ", ".join(f"{k} {figure_bytes(f) / 1000:.0f} KB" for k, f in on_demand.items()))
    inside_head_report(pipe, view, "self", "src:5")


def inside_head_report(pipe, view, kind: str, token: str) -> None:
    """What the inside-one-head view sends once opened, for one token of one kind (the first layer and head)."""
    import gradio as gr

    from pipelines.models.model_registry import ModelRegistry
    from viz.attention import inside_head_panel

    internals = inside_head_panel.record(ModelRegistry.of(pipe), view)
    steps, heads = inside_head_panel.figures(view, internals, kind, 0, 0, token, 1)
    html_kb, bars_kb = len(json.dumps(gr.HTML().postprocess(steps)).encode()) / 1000, figure_bytes(heads) / 1000
    print(f"  inside one head, once opened: steps {html_kb:.0f} KB, heads' bars {bars_kb:.0f} KB")


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    from viz.models.loading import load_models

    sentiment, translation = load_models()
    if sentiment.pipeline is not None:
        sentiment_report(sentiment.pipeline)
    if translation.pipeline is not None:
        view, _, _ = translate(translation.pipeline, BENCH_GERMAN)
        figs = task_views.task_figures("translation", view, 0, 0)
        steps = translation_step(view, 0, 1)
        names = ["cross overview", "cross", "encoder", "decoder", "step heads", "step top-k"]
        report(f"translation ({len(BENCH_GERMAN.split())}-word sentence)", dict(zip(names, [*figs, *steps])))
        inside_head_report(translation.pipeline, view, "cross", "tgt:0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
