"""Training-step throughput of the library's encoder-decoder against torch.nn.Transformer at the same size.

Both models get the same batches, optimizer and loss; their steps are interleaved (A, B, A, B, ...) so
that any background load on the machine slows both alike, and the median step time of each is reported.
On a GPU (the default when there is one) the steps run as `python -m training` runs them: bf16 autocast, TF32.

    python -m benchmarks.train_step [--steps 30] [--d-model 256] [--layers 3] [--batch 128] [--len 16] [--device cuda]
"""

import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from training.engine.device import Precision, describe_device  # noqa: E402
from transformer import Seq2SeqConfig, Seq2SeqTransformer  # noqa: E402
from transformer.embeddings import sinusoidal_table  # noqa: E402


class TorchSeq2Seq(nn.Module):
    """The same architecture on torch.nn.Transformer: tied embeddings, sinusoidal positions, post-norm."""

    def __init__(self, c: Seq2SeqConfig):
        super().__init__()
        self.c = c
        self.emb = nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad_id)
        self.register_buffer("pos", sinusoidal_table(c.max_len, c.d_model), persistent=False)
        self.core = nn.Transformer(
            c.d_model, c.n_heads, c.n_encoder_layers, c.n_decoder_layers, c.d_ff, c.dropout, batch_first=True
        )
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.lm_head.weight = self.emb.weight

    def embed(self, ids):
        return self.emb(ids) * math.sqrt(self.c.d_model) + self.pos[: ids.size(1)]

    def forward(self, src, tgt):
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), dtype=torch.bool, device=src.device)
        x = self.core(
            self.embed(src),
            self.embed(tgt),
            tgt_mask=causal,
            src_key_padding_mask=src == self.c.pad_id,
            memory_key_padding_mask=src == self.c.pad_id,
        )
        return self.lm_head(x)


def batch(cfg: Seq2SeqConfig, B: int, T: int, g: torch.Generator):
    """Random ids with some right padding, like a length-bucketed batch."""
    src = torch.randint(4, cfg.vocab_size, (B, T), generator=g)
    tgt = torch.randint(4, cfg.vocab_size, (B, T + 1), generator=g)
    for row, cut in enumerate(torch.randint(T - 3, T + 1, (B,), generator=g).tolist()):
        src[row, cut:] = 0
        tgt[row, cut + 1 :] = 0
    return src, tgt


def time_steps(models: dict, cfg: Seq2SeqConfig, a, precision: Precision) -> tuple[dict, torch.Tensor]:
    """({name: step seconds after warm-up}, the last target batch), the models' steps interleaved."""
    device = precision.device
    opts = {k: torch.optim.AdamW(m.parameters(), lr=1e-4) for k, m in models.items()}
    times = {k: [] for k in models}
    g = torch.Generator().manual_seed(0)
    for step in range(a.warmup + a.steps):
        src, tgt = (t.to(device) for t in batch(cfg, a.batch, a.len, g))
        for name, model in models.items():
            model.train()
            t0 = time.perf_counter()
            with precision.autocast():
                out = model(src, tgt[:, :-1])
                logits = out.logits if hasattr(out, "logits") else out
                loss = F.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=0)
            opts[name].zero_grad()
            loss.backward()
            opts[name].step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)  # the step's kernels are done before the clock stops
            if step >= a.warmup:
                times[name].append(time.perf_counter() - t0)
    return times, tgt


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--d-ff", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--len", type=int, default=16, help="tokens per sentence (Multi30k averages about 15)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    cfg = Seq2SeqConfig(
        vocab_size=a.vocab,
        d_model=a.d_model,
        n_heads=a.heads,
        n_encoder_layers=a.layers,
        n_decoder_layers=a.layers,
        d_ff=a.d_ff,
        dropout=0.1,
    )
    torch.manual_seed(0)
    device = torch.device(a.device)
    precision = Precision.for_device(device)
    precision.enable_tf32()
    models = {"ours": Seq2SeqTransformer(cfg).to(device), "torch.nn.Transformer": TorchSeq2Seq(cfg).to(device)}
    params = {k: sum(p.numel() for p in m.parameters()) for k, m in models.items()}
    times, tgt = time_steps(models, cfg, a, precision)
    tokens = int((tgt[:, 1:] != 0).sum())  # target tokens in a (typical) batch
    result = {"config": vars(a), "threads": torch.get_num_threads(), "torch": torch.__version__, "models": {}}
    result.update(device=describe_device(device), precision=precision.describe())
    for name in models:
        med = statistics.median(times[name])
        result["models"][name] = {
            "parameters": params[name],
            "median_step_s": round(med, 4),
            "target_tokens_per_s": round(tokens / med),
        }
        print(
            f"{name:>22}: {params[name] / 1e6:.2f}M params, median step {med * 1000:.0f} ms, "
            f"{tokens / med:,.0f} target tokens/s"
        )
    ratio = statistics.median(times["torch.nn.Transformer"]) / statistics.median(times["ours"])
    result["throughput_ratio_ours_over_torch"] = round(ratio, 3)
    print(f"throughput ratio (ours / torch.nn.Transformer): {ratio:.2f}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
