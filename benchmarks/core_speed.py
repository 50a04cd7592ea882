"""The one core with its hook points against the core before it, paired: the same weights in both, the same inputs,
the two alternating round by round on one thread, so that a busy machine slows both alike. Paths: the sentiment
classifier's forward (plain, and with every map), the translator's greedy decoding, the decoder-only model's forward
with every map and 30 greedy tokens on its cache (SmolLM2-135M's sizes, random weights: speed does not depend on
them). Prints each path's median milliseconds, old / new (> 1: the new core is faster) and their geometric mean.

    python -m benchmarks.core_speed [--old f1633c8] [--rounds 9]
"""

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import transformer as new

ROOT = Path(__file__).resolve().parents[1]


def old_core(rev: str):
    """The `transformer` package at git revision `rev`, imported as `transformer_old`."""
    folder = Path(tempfile.mkdtemp(prefix="oldcore-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "transformer"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    package = folder / "transformer_old"
    (folder / "transformer").rename(package)
    spec = importlib.util.spec_from_file_location(
        "transformer_old", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    module = sys.modules["transformer_old"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pair(old_module, new_module, cls: str, config_cls: str, **fields):
    """(old model, new model) of one class with the same weights (today's model loads the old names)."""
    torch.manual_seed(0)
    old = getattr(old_module, cls)(getattr(old_module, config_cls)(**fields)).eval()
    fresh = getattr(new_module, cls)(getattr(new_module, config_cls)(**fields)).eval()
    fresh.load_state_dict(old.state_dict(), strict=True)
    return old, fresh


def paths(old_module):
    ids = torch.randint(5, 8000, (1, 256))
    clf = pair(
        old_module,
        new,
        "TransformerClassifier",
        "ClassifierConfig",
        vocab_size=8000,
        d_model=384,
        n_heads=12,
        n_layers=6,
        d_ff=1536,
        max_len=512,
        pooling="mean",
    )  # fmt: skip  (MiniLM's sizes)
    s2s = pair(old_module, new, "Seq2SeqTransformer", "Seq2SeqConfig", vocab_size=8000, d_model=256, n_heads=4,
               n_encoder_layers=3, n_decoder_layers=3, d_ff=1024)  # fmt: skip
    lm = pair(
        old_module,
        new,
        "CausalLM",
        "CausalLMConfig",
        vocab_size=49152,
        d_model=576,
        n_heads=9,
        n_kv_heads=3,
        d_ff=1536,
        n_layers=30,
        max_len=2048,
    )  # fmt: skip  (SmolLM2-135M's sizes)
    src = torch.randint(5, 8000, (1, 20))
    prompt = torch.randint(5, 49152, (1, 20))
    mods = (old_module, new)
    return {
        "sentiment forward": [lambda m=m: m(ids) for m in clf],
        "sentiment forward, every map": [lambda m=m: m(ids, need_weights=True) for m in clf],
        "translation greedy": [lambda m=m, g=g: g.greedy_decode(m, src, max_len=20) for m, g in zip(s2s, mods)],
        "causal LM forward, every map": [lambda m=m: m(prompt, need_weights=True) for m in lm],
        "causal LM 30 greedy tokens": [
            lambda m=m, g=g: g.generate(m, prompt[0].tolist(), 30) for m, g in zip(lm, mods)
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", default="f1633c8", help="the git revision of the core to compare with")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    torch.set_num_threads(1)
    old_module = old_core(args.old)
    ratios = []
    with torch.no_grad():
        for name, (old_fn, new_fn) in paths(old_module).items():
            old_fn(), new_fn()  # warm
            times = {"old": [], "new": []}
            for _ in range(args.rounds):
                for key, fn in (("old", old_fn), ("new", new_fn)):
                    start = time.perf_counter()
                    fn()
                    times[key].append(time.perf_counter() - start)
            old_ms, new_ms = (1000 * statistics.median(times[k]) for k in ("old", "new"))
            ratios.append(old_ms / new_ms)
            print(f"{name:32s} old {old_ms:8.1f} ms   new {new_ms:8.1f} ms   old/new {old_ms / new_ms:.3f}")
    geo = statistics.geometric_mean(ratios)
    print(f"geometric mean old/new over {len(ratios)} paths: {geo:.3f} ({args.rounds} paired rounds, one thread)")


if __name__ == "__main__":
    main()
