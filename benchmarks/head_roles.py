"""What kinds of heads a sentiment model has: counts of heads by the role their attention plays, per model.

    python -m benchmarks.head_roles assets/sentiment assets/sentiment-scratch [--n 50]

For each model, every head's attention is averaged over a seeded sample of IMDB test reviews (the pipeline's own
maps, pipelines.attention.head_stats where it defines the statistic) and each head is given the role whose share of its
attention passes --share (default 0.5): the previous token, the next token, itself, the first token ([CLS] for a
BERT-family model), the last token ([SEP]), punctuation; a head with none of these is "broad" when the mean
entropy of its rows is at least 60% of the uniform row's, else "mixed". Prints one line per model: the counts
and the mean share of each role over all heads. The app's model notes quote these numbers.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from pipelines.attention.head_stats import punctuation_keys  # noqa: E402

ROLES = ("previous", "next", "itself", "first", "last", "punctuation")


def shares(attn: np.ndarray, tokens: list[str]) -> dict[str, np.ndarray]:
    """attn (L, H, T, T) of one review -> role -> (L, H) mean share of attention on that role's key, plus the
    entropy of the rows relative to a uniform row's ("entropy")."""
    T = attn.shape[-1]
    q = np.arange(T)
    punct = punctuation_keys(tokens)
    a = attn.astype(np.float64)
    uniform = np.log(np.arange(1, T + 1))  # a causal-free row over T keys: log T, the same for every row
    out = {
        "previous": a[..., q[1:], q[1:] - 1].mean(-1),
        "next": a[..., q[:-1], q[:-1] + 1].mean(-1),
        "itself": a[..., q, q].mean(-1),
        "first": a[..., :, 0].mean(-1),
        "last": a[..., :, T - 1].mean(-1),
        "punctuation": a[..., :, punct].sum(-1).mean(-1) if punct.any() else np.zeros(a.shape[:2]),
    }
    out["entropy"] = -(a * np.log(np.clip(a, 1e-12, None))).sum(-1).mean(-1) / uniform[-1]
    return out


def roles(mean: dict[str, np.ndarray], share: float) -> list[str]:
    """One role per head (flattened layer by layer) from the sample's mean shares."""
    L, H = mean["previous"].shape
    out = []
    for layer in range(L):
        for head in range(H):
            best = max(ROLES, key=lambda r: mean[r][layer, head])
            if mean[best][layer, head] >= share:
                out.append(best)
            else:
                out.append("broad" if mean["entropy"][layer, head] >= 0.6 else "mixed")
    return out


def measure(model: str, texts: list[str], share: float) -> dict:
    from pipelines import SentimentPipeline

    pipe = SentimentPipeline.from_pretrained(model)
    per_review = []
    for text in texts:
        r = pipe(text)
        maps = r.attention_maps()
        per_review.append(shares(maps.maps["self"], maps.queries["self"]))
    mean = {k: np.mean([s[k] for s in per_review], axis=0) for k in per_review[0]}
    found = roles(mean, share)
    counts = {r: found.count(r) for r in (*ROLES, "broad", "mixed") if found.count(r)}
    L, H = mean["previous"].shape
    return {
        "model": model,
        "layers_x_heads": f"{L} x {H}",
        "counts": counts,
        "mean_share": {k: round(float(v.mean()), 3) for k, v in mean.items()},
        "roles_by_layer": [found[i * H : (i + 1) * H] for i in range(L)],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", help="model folders or Hub repo ids")
    p.add_argument("--n", type=int, default=50, help="IMDB test reviews in the seeded sample")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--share", type=float, default=0.5, help="a head has a role when this share of it goes there")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "imdb" / "test.parquet"))
    p.add_argument("--json", default=None, help="also write the results here")
    a = p.parse_args(argv)
    import pyarrow.parquet as pq

    table = pq.read_table(a.data, columns=["text"])
    rows = np.random.default_rng(a.seed).permutation(table.num_rows)[: a.n]
    texts = [table.column("text")[int(i)].as_py() for i in rows]
    results = [measure(m, texts, a.share) for m in a.models]
    for r in results:
        print(f"{r['model']} ({r['layers_x_heads']} heads, {a.n} IMDB test reviews): {r['counts']}")
        print(f"  mean share over all heads: {r['mean_share']}")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
