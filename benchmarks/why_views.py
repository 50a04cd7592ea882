"""The page's views of why a head looks there, as a click waits on them (one thread, median of --runs): a cell of the
last layer's large heatmap taken apart (the clicked key and the least-weighed one: two decompositions) on a 30-token
prompt, the composition view (K-composition and the copying scores), and the Next word tab's worked example (the
induction circuit: one read of the words, composition, copying, two decompositions); with the figures' size. On our
next-word model and SmolLM2-135M-Instruct (the bundled sentiment and translation models too, where assets/ holds
them). Prints numbers.

    python -m benchmarks.why_views [--runs 3] [--gguf PATH] [--no-smollm2]
"""

from pathlib import Path

import torch

from benchmarks.layer_by_layer import PROMPT_30, language_models, model_options
from benchmarks.why_head import timed

ROOT = Path(__file__).resolve().parents[1]
REVIEW = "A warm, funny and beautifully acted film about two brothers who finally talk, and a score I will not forget."
GERMAN = "Ein Mann in einem blauen Hemd fährt mit dem Fahrrad die Straße entlang."


def kb(*figures) -> float:
    return sum(len(f.to_json()) for f in figures if f is not None) / 1024


def cell_of(view, kind: str) -> str:
    """The last row's first key, as a click on the large heatmap sends it."""
    from viz.attention import task_views

    n = task_views.kinds(view)[kind].maps.shape[2]
    return f"{kind}:{n - 1}:1"


def report(name: str, pipe, view, kind: str, attention: str, runs: int, example: bool = False) -> None:
    from viz.attention.score_parts import score_parts
    from viz.heads.composition_panel import compute, worked_example

    layer = pipe.head_layers[attention] - 1
    parts_s, (fig, note) = timed(lambda: score_parts(pipe, view, cell_of(view, kind), layer, 0), runs)
    assert fig is not None, note
    gap = note.split("difference ")[1].split()[0].rstrip(".")
    comp_s, (comp_fig, comp_note, _) = timed(lambda: compute(pipe, None, "K-composition", attention), runs)
    assert comp_fig is not None, comp_note
    print(f"{name}: a cell of layer {layer} taken apart (two keys) {parts_s:.3f} s, {kb(fig):.0f} KB, terms' sum off "
          f"by {gap}; composition and copying {comp_s:.3f} s, {kb(comp_fig):.0f} KB (median of {runs})")  # fmt: skip
    if example:
        example_s, out = timed(lambda: worked_example(pipe), runs)
        print(f"  the induction circuit: {example_s:.3f} s, {kb(out[0], out[3]):.0f} KB; {out[1]}")


def main() -> None:
    from pipelines import SentimentPipeline, TranslationPipeline
    from viz.next_word.handlers import generate
    from viz.sentiment.handlers import analyze_review
    from viz.translation.handlers import translate

    parser = model_options(__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, pipe in language_models(args):
        view = list(generate(pipe, PROMPT_30, "greedy", max_new_tokens=1))[-1][0]
        report(name, pipe, view, "causal", "causal", args.runs, example=True)
    if (ROOT / "assets" / "sentiment").is_dir():
        pipe = SentimentPipeline.from_pretrained(str(ROOT / "assets" / "sentiment"))
        report("sentiment (assets)", pipe, analyze_review(pipe, REVIEW)[0], "self", "self", args.runs)
    if (ROOT / "assets" / "translation").is_dir():
        pipe = TranslationPipeline.from_pretrained(str(ROOT / "assets" / "translation"))
        view = translate(pipe, GERMAN, "greedy")[0]
        report("translation (assets), cross", pipe, view, "cross", "decoder", args.runs)


if __name__ == "__main__":
    main()
