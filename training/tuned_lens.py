"""`python -m training.tuned_lens --model SRC --data-dir ../shared/data/imdb`: train a tuned lens (Belrose et al.
2023) for a language model of this project (our folder, a Llama folder, SmolLM2's GGUF): one affine translator a
layer, trained with the model frozen to minimise KL(final || translator's readout) on IMDB's unlabelled reviews,
measured against the logit lens on held-out test reviews (full vocabulary), and written where the app finds it
(pipelines/lens/tuned.py: FILE in a model folder, else assets/tuned-lens/<name>.safetensors).

The loss reads the batch's `--vocab` most likely tokens under the final distribution (renormalised on both sides):
SmolLM2's 49,152-token unembedding at 30 layers would cost 5 GFLOP a token, out of reach of a CPU run; the test KL
is always over the whole vocabulary. A checkpoint is written atomically every `--save-every` steps; `--resume`
continues after a kill. The last line printed is one JSON object (what the .json beside the lens holds).
"""

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import torch

from training.engine.checkpoint import atomic_torch_save


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a language model folder, repo id or .gguf file")
    p.add_argument("--data-dir", required=True, help="IMDB's Parquet folder (unsupervised.parquet, test.parquet)")
    p.add_argument("--out", help="the lens file (default: where the app looks for this model's)")
    p.add_argument("--tokens", type=int, default=200_000, help="training tokens (one pass)")
    p.add_argument("--test-tokens", type=int, default=20_000, help="held-out tokens the KL is measured on")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=8, help="sequences a step")
    p.add_argument("--rank", type=int, default=1024, help="the translators' rank (>= d_model: full rank)")
    p.add_argument("--vocab", type=int, default=8192, help="the batch's most likely tokens the loss reads")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--save-every", type=int, default=50, help="steps between checkpoints")
    p.add_argument("--resume", action="store_true", help="continue from OUT.ckpt")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    return p


def pieces(pipe, texts, seq_len: int, n_tokens: int) -> torch.Tensor:
    """(N, seq_len) ids: each text as the pipeline reads it, cut into whole pieces, until n_tokens."""
    out, total = [], 0
    for text in texts:
        try:
            ids = pipe.encode(text).ids
        except ValueError:  # an empty review
            continue
        for i in range(0, len(ids) - seq_len + 1, seq_len):
            out.append(ids[i : i + seq_len])
            total += seq_len
            if total >= n_tokens:
                return torch.tensor(out)
    return torch.tensor(out)


def states_and_final(pipe, readout, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    """x (B, T) -> the L + 1 residual states (B, T, D) and the final log-probabilities (B, T, V), model frozen."""
    a = pipe.adapter
    with torch.no_grad():
        _, cache = a.run_with_cache(lambda: a.forward(x.to(a.device)), readout.names())
        states = readout.states(cache)
        return states, readout.logits(states[-1]).float().log_softmax(-1)


def kl_rows(final: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """final (N, V) log-probs, logits (N, V) -> (N,) KL(final || softmax(logits))."""
    return (final.exp() * (final - logits.log_softmax(-1))).sum(-1)


def step_loss(lens, readout, states, final, vocab: int) -> torch.Tensor:
    """The mean over layers and positions of KL on the batch's `vocab` most likely final tokens."""
    V = final.shape[-1]
    keep = final.exp().sum((0, 1)).topk(min(vocab, V)).indices  # (K,)
    target = final[..., keep].log_softmax(-1).flatten(0, 1)  # (N, K) renormalised
    W = readout.unembed[:, keep]  # (D, K)
    losses = [kl_rows(target, (readout.final_norm(lens(i, s)) @ W).flatten(0, 1)).mean()
              for i, s in enumerate(states[:-1])]  # fmt: skip
    return torch.stack(losses).mean()


@torch.no_grad()
def test_kl(pipe, readout, lens, test: torch.Tensor, batch: int) -> tuple[list[float], list[float]]:
    """Per state (L + 1), the mean KL over the held-out tokens, full vocabulary: (logit lens, tuned lens)."""
    logit, tuned = [0.0] * (len(readout.blocks) + 1), [0.0] * (len(readout.blocks) + 1)  # sums on the host
    for x in test.split(batch):
        states, final = states_and_final(pipe, readout, x)
        final = final.flatten(0, 1)
        for i, s in enumerate(states):
            logit[i] += float(kl_rows(final, readout.logits(s).flatten(0, 1)).sum())
            tuned[i] += float(kl_rows(final, readout.logits(lens(i, s)).flatten(0, 1)).sum())
    n = test.numel()
    return [round(v / n, 4) for v in logit], [round(v / n, 4) for v in tuned]


def read_texts(data_dir: str, split: str) -> list[str]:
    import pyarrow.parquet as pq

    return pq.read_table(Path(data_dir) / f"{split}.parquet", columns=["text"]).column("text").to_pylist()


def train(a, pipe, readout, lens, train_x: torch.Tensor, ckpt: Path) -> tuple[int, float]:
    """One pass over train_x in batches; (steps, seconds). Checkpoints every a.save_every steps (and at the end)."""
    opt = torch.optim.Adam(lens.parameters(), lr=a.lr)
    start, spent = 0, 0.0
    if a.resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=True, map_location="cpu")  # copied onto the lens's device below
        lens.load_state_dict(state["lens"])
        opt.load_state_dict(state["optimizer"])
        start, spent = state["step"], state["seconds"]
        print(f"resumed at step {start}", flush=True)
    batches = train_x.split(a.batch_size)
    t0 = time.time() - spent
    for step in range(start, len(batches)):
        states, final = states_and_final(pipe, readout, batches[step])
        loss = step_loss(lens, readout, states, final, a.vocab)
        opt.zero_grad()
        loss.backward()
        opt.step()
        done = step + 1
        if done % 10 == 0:
            print(f"step {done}/{len(batches)} loss {loss.item():.4f} {time.time() - t0:.0f}s", flush=True)
        if done % a.save_every == 0 or done == len(batches):
            state = {"lens": lens.state_dict(), "optimizer": opt.state_dict(), "step": done}
            atomic_torch_save(state | {"seconds": time.time() - t0}, ckpt)
    return len(batches), time.time() - t0


def main(argv: list[str] | None = None) -> int:
    from pipelines import LanguageModelPipeline
    from pipelines.lens.readout import readout_of
    from pipelines.lens.tuned import Fingerprint, Translators, TunedLens, lens_path
    from training.cli import machine

    a = build_parser().parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    pipe = LanguageModelPipeline.from_pretrained(a.model)
    pipe.adapter.model.requires_grad_(False)
    readout = readout_of(pipe.adapter)
    out = Path(a.out) if a.out else lens_path(a.model)
    out.parent.mkdir(parents=True, exist_ok=True)
    train_x = pieces(pipe, read_texts(a.data_dir, "unsupervised"), a.seq_len, a.tokens)
    test_x = pieces(pipe, read_texts(a.data_dir, "test")[::7], a.seq_len, a.test_tokens)
    L, D = len(readout.blocks), readout.unembed.shape[0]
    lens = Translators(L, D, a.rank).to(pipe.adapter.device)  # where the model's states are
    steps, seconds = train(a, pipe, readout, lens, train_x, out.with_name(out.name + ".ckpt"))
    t0 = time.time()
    logit, tuned = test_kl(pipe, readout, lens, test_x, a.batch_size)
    about = {
        "command": "python -m training.tuned_lens " + shlex.join(sys.argv[1:] if argv is None else argv),
        "model": a.model,
        "data": f"IMDB's unlabelled reviews ({train_x.numel():,} tokens, {a.seq_len}-token pieces), one pass; "
        f"measured on {test_x.numel():,} tokens of every 7th test review, full vocabulary",
        "machine": machine(),
        "device": str(pipe.adapter.device),
        "steps": steps,
        "train_seconds": round(seconds, 1),
        "tokens_per_s": round(train_x.numel() / max(seconds, 1e-9), 1),
        "rank": lens.rank,
        "loss_vocab": a.vocab,
        "layers": ["embeddings"] + [f"layer {i}" for i in range(L)],
        "test_kl_logit_lens": logit,
        "test_kl_tuned_lens": tuned,
        "test_seconds": round(time.time() - t0, 1),
    }
    TunedLens(lens, Fingerprint.of(readout), about).save(out)
    print(json.dumps(about))
    return 0


if __name__ == "__main__":
    sys.exit(main())
