"""The Next word tab's budgets, measured on the server side (the app's own handlers, one torch thread as the app
gives each model; no browser, so the page's drawing is not counted): for ours and SmolLM2-135M-Instruct (when its
GGUF file is installed), on a 30-token prompt,

- click to the top-10 list and the first heatmap: one new token generated, the maps read, the heatmap and the
  top-10 figures built (budget: 200 ms ours, 500 ms SmolLM2);
- a 30-token continuation: the time to the first streamed token (budget 500 ms) and to the end with the maps
  (budget 3 s with SmolLM2);
- the head table of every head (budget 10 s for SmolLM2's 270), twice: the first call also measures the model's
  induction scores, which later calls reuse;
- the first draw's payload: the figures' JSON as gr.Plot sends it (budget 300 KB);
- resident memory of one process holding the app's default models of all three tabs (budget 2 GB), and whether
  `transformers` was imported on the way.

    python -m benchmarks.lm_tab [--runs 5] [--model assets/lm] [--gguf PATH] [--paired N]

--paired N: SmolLM2's head effects measured the head table's way and by whole passes (the way before 2026-11-28),
alternated N times on the same machine state, with their largest difference: a ratio that a busy machine distorts
less than the separate figures.
"""

import argparse
import gc
import json
import sys
import time
from pathlib import Path

import torch

from benchmarks.smollm2 import LONG, rss_mb
from viz.attention import task_views
from viz.next_word.handlers import generate, next_tokens

PROMPT_TOKENS = 30


def prompt_of(pipe) -> str:
    """The first 30 tokens of the Dursley opening, as this model's tokenizer cuts it."""
    ids = pipe.tokenizer.encode(LONG, add_special_tokens=False).ids[:PROMPT_TOKENS]
    return pipe.tokenizer.decode(ids)


def figure_bytes(fig) -> int:
    import gradio as gr

    value = gr.Plot().postprocess(fig)
    return len(json.dumps(value.model_dump() if hasattr(value, "model_dump") else value).encode())


def click(pipe, prompt: str, new: int) -> tuple[float, object, float]:
    """(seconds to the last yield, the view, seconds to the first streamed token) of one Generate."""
    t0 = time.perf_counter()
    first = None
    for state, *_ in generate(pipe, prompt, "greedy", max_new_tokens=new):
        first = first or time.perf_counter() - t0
        view = state
    heat = task_views.heatmap(view, 0, 0, "linear", False)
    top = next_tokens(view)
    return time.perf_counter() - t0, (view, heat, top), first


def measure(pipe, runs: int) -> dict:
    prompt = prompt_of(pipe)
    one = min(click(pipe, prompt, 1)[0] for _ in range(runs))
    full = [click(pipe, prompt, 30) for _ in range(max(1, runs // 2))]
    view, heat, top = full[0][1]
    heads_s, cpu_s, done = [], [], []
    for _ in range(2):  # the first call also measures the model's induction scores (once per model)
        t, c = time.perf_counter(), time.process_time()
        table = pipe.head_table(prompt, result=view.result, progress=lambda n, total: done.append((n, total)))
        heads_s.append(time.perf_counter() - t)
        cpu_s.append(time.process_time() - c)
    return {
        "prompt_tokens": len(pipe.tokenizer.encode(prompt, add_special_tokens=False).ids),
        "click_to_top10_and_heatmap_s": round(one, 3),
        "continuation_30_tokens_s": round(min(f[0] for f in full), 3),
        "first_streamed_token_s": round(min(f[2] for f in full), 3),
        "head_table_s": round(heads_s[0], 2),
        "head_table_again_s": round(heads_s[1], 2),
        "head_table_cpu_s": [round(c, 2) for c in cpu_s],  # every thread of the process: other work does not count
        "heads": len(table),
        "progress_reports": len(done) // 2,
        "first_draw_payload_kb": round((figure_bytes(heat) + figure_bytes(top)) / 1024, 1),
    }


def paired_effects(pipe, runs: int) -> dict:
    """The head effects of the 30-token prompt's first next token by the head table's way (from each head's layer
    on, the last position only) and by whole passes (every position, every layer: the first way), alternated `runs`
    times: best wall and CPU seconds of each, and the largest difference between their effects."""
    from pipelines.attention import heads

    prompt = prompt_of(pipe)
    result = pipe(prompt, max_new_tokens=1)
    ids, token = result.prompt_ids, result.generated_ids[0]
    whole = lambda masks, rows: heads.next_token_log_prob(pipe.adapter, ids, token, masks, rows)  # noqa: E731
    ways = {
        "from_layer": lambda: heads.lm_effects(pipe.adapter, ids, token),
        "whole_passes": lambda: heads.masked_effects(pipe.adapter, len(ids), whole),
    }
    out, effects = {f"{k}_{u}": [] for k in ways for u in ("s", "cpu_s")}, {}
    for _ in range(runs):
        for name, way in ways.items():
            t, c = time.perf_counter(), time.process_time()
            effects[name] = way()[1]
            out[f"{name}_s"].append(time.perf_counter() - t)
            out[f"{name}_cpu_s"].append(time.process_time() - c)
    best = {k: round(min(v), 2) for k, v in out.items()}
    diff = max(abs(effects["from_layer"][k] - v) for k, v in effects["whole_passes"].items())
    return best | {"runs": runs, "largest_difference": float(f"{diff:.2g}")}


def main() -> None:
    from pipelines import LanguageModelPipeline
    from pipelines.models.gguf import installed_smollm2

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--model", default="assets/lm")
    p.add_argument("--gguf", type=Path, default=None)
    p.add_argument("--paired", type=int, default=0, help="also: SmolLM2's head effects both ways, alternated N times")
    a = p.parse_args()
    torch.set_num_threads(1)
    report = {"threads": 1, "rss_mb_start": round(rss_mb(), 1)}
    from viz.models.loading import load_models

    sentiment, translation = load_models()  # the other tabs' defaults, as python app.py loads them
    ours = LanguageModelPipeline.from_pretrained(a.model)
    report["ours"] = measure(ours, a.runs)
    print(json.dumps(report["ours"]), flush=True)
    path = a.gguf or installed_smollm2()
    if path is not None:
        smol = LanguageModelPipeline.from_pretrained(str(path))
        report["smollm2"] = measure(smol, a.runs)
    gc.collect()
    report["rss_mb_all_default_models"] = round(rss_mb(), 1)
    if path is not None and a.paired:  # after the memory: whole passes hold every position's logits, 1.6 GB
        report["smollm2_head_effects_paired"] = paired_effects(smol, a.paired)
    report["loaded"] = [name for name, m in (("sentiment", sentiment), ("translation", translation)) if m.pipeline]
    report["transformers_imported"] = "transformers" in sys.modules
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
