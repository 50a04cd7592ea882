"""Why a head looks there: the budgets (one thread). One cell's score taken apart at the last layer, every pair of
parts (SmolLM2: 1 s); the Q-, K- and V-composition scores of every pair of heads (5 s each) and the copying scores;
the head table over a bundled set of --inputs inputs (100: 60 s), with the attention columns alone and with each
head's effect (every head switched off on every input). Our models within a fifth of that (0.2 s, 1 s, 12 s). Prints
numbers, and how far each cell's terms are from the model's own score.

    python -m benchmarks.why_head [--inputs 100] [--effect-inputs N] [--runs 3] [--gguf PATH] [--no-smollm2]
        [--only NAME]
"""

import statistics
import time
from pathlib import Path

import torch

from benchmarks.layer_by_layer import model_options

ROOT = Path(__file__).resolve().parents[1]
REVIEW = "The film was not bad at all, and the acting was fine, though the ending dragged."
GERMAN = "Ein Mann in einem orangefarbenen Hut starrt auf etwas."
PROMPT = "The film was not bad at all, and the acting was fine, though the ending"


def timed(fn, runs: int) -> tuple[float, object]:
    """(median seconds of `runs` calls after a warm one, its result); runs=0: one call, timed."""
    start = time.perf_counter()
    out = fn()  # warm
    if runs == 0:
        return time.perf_counter() - start, out
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def models(args):
    """(name, pipeline, the cell's call, the set, budget scale: 1 for SmolLM2, 1/5 ours)."""
    from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline
    from pipelines.models.gguf import installed_smollm2

    path = None if args.no_smollm2 else args.gguf or installed_smollm2()
    if path is not None:
        yield "SmolLM2-135M-Instruct", lambda: LanguageModelPipeline.from_pretrained(str(path)), "lm", 1.0
    for name, cls, kind in (
        ("lm", LanguageModelPipeline, "lm"),
        ("sentiment", SentimentPipeline, "sentiment"),
        ("sentiment-scratch", SentimentPipeline, "sentiment"),
        ("translation", TranslationPipeline, "translation"),
    ):
        yield f"assets/{name}", lambda cls=cls, name=name: cls.from_pretrained(str(ROOT / "assets" / name)), kind, 0.2


def one_cell(pipe, kind: str):
    """The last layer's head 0 at the last query and key 1 (translation: cross-attention at the last step)."""
    if kind == "lm":
        T = len(pipe.encode(PROMPT).ids)
        return lambda: pipe.score_attribution(PROMPT, pipe.n_layers - 1, 0, T - 1, 1)
    if kind == "sentiment":
        T = len(pipe.encode(REVIEW).ids)
        return lambda: pipe.score_attribution(REVIEW, pipe.n_layers - 1, 0, T - 1, 1)
    result = pipe(GERMAN, beam_size=1)
    last = pipe.head_layers["cross"] - 1
    return lambda: pipe.score_attribution(GERMAN, last, 0, len(result.target_ids) - 1, 1, kind="cross", result=result)


SETS = {"lm": "imdb", "sentiment": "sst2", "translation": "multi30k"}


def report(name: str, pipe, kind: str, scale: float, args) -> None:
    from pipelines.attention.over_set import bundled_set

    if kind == "lm":
        pipe.induction  # noqa: B018  (measured once a model, on first use: not a set's cost)

    budgets = f"{1.0 * scale:.1f} s a cell, {5.0 * scale:.1f} s a composition, {60 * scale:.0f} s a set"
    print(f"\n{name} (budgets: {budgets})")
    took, cell = timed(one_cell(pipe, kind), args.runs)
    rel = abs(cell.unexplained) / max(1.0, abs(cell.score))
    print(f"  one cell, layer {cell.layer}: {took:.3f} s, {len(cell.parts)} x {len(cell.key_parts)} pairs, "
          f"score {cell.score:+.4f}, terms off by {rel:.1e} (relative)")  # fmt: skip
    attentions = ["encoder", "decoder"] if kind == "translation" else [None]
    for attention in attentions:
        for k in "qkv":
            args_ = (k,) if attention is None else (k, attention)
            took, c = timed(lambda a=args_: pipe.composition(*a), 0)
            L, H = c.scores.shape[:2]
            print(f"  {k}-composition of {c.attention} heads ({L} x {H}): {took:.2f} s; max {c.scores.max():.3f}, "
                  f"random baseline {c.baseline_mean:.3f}")  # fmt: skip
        took, cs = timed(lambda a=attention: pipe.copying_scores(*([a] if a else [])), 0)
        print(f"  copying scores: {took:.2f} s; heads over 0.5: {(cs.scores > 0.5).sum()} of {cs.scores.size}")
    texts = bundled_set(SETS[kind])
    for effects in (False, True):
        start = time.perf_counter()
        n = args.effect_inputs if effects and args.effect_inputs else args.inputs
        over = pipe.head_table_over(texts[:n], progress=lambda i, n: None, effects=effects)
        took = time.perf_counter() - start
        what = "with each head's effect" if effects else "attention columns only"
        print(f"  head table over {over.n} inputs of {SETS[kind]}, {what}: {took:.1f} s "
              f"({took / max(1, over.n):.2f} s an input)")  # fmt: skip


def main() -> None:
    parser = model_options(__doc__)
    parser.add_argument("--inputs", type=int, default=100)
    parser.add_argument("--effect-inputs", type=int, default=0, help="inputs of the set with effects (0: --inputs)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default=None, help="one model: SmolLM2-135M-Instruct, assets/lm, ...")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, load, kind, scale in models(args):
        if args.only in (None, name):
            report(name, load(), kind, scale, args)


if __name__ == "__main__":
    main()
