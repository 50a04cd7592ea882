"""Tiny, untrained model folders built from the fixtures: for tests of loading, pipelines and the app."""

import json
from pathlib import Path

import torch

from pipelines.models.tokenizers_io import BOS, EOS, PAD, save_tokenizer, train_bpe
from transformer import (
    CausalLM,
    CausalLMConfig,
    ClassifierConfig,
    Seq2SeqConfig,
    Seq2SeqTransformer,
    TransformerClassifier,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def read_jsonl(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


def make_sentiment_dir(folder: Path, max_len: int = 64, head: int = 16) -> Path:
    torch.manual_seed(0)
    texts = [r["text"] for r in read_jsonl("imdb_tiny.jsonl")]
    tok = train_bpe(texts * 3, vocab_size=400, lowercase=True, strip_html_breaks=True)
    cfg = ClassifierConfig(
        vocab_size=tok.get_vocab_size(),
        d_model=32,
        n_heads=4,
        n_layers=2,
        d_ff=64,
        max_len=max_len,
        pooling="attention",
        ngram_buckets=211,
        ngram_order=3,
        ngram_dim=8,
        pad_id=PAD,
    )
    model = TransformerClassifier(cfg)
    torch.nn.init.normal_(model.pool_query, std=0.5)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    save_tokenizer(tok, folder, model_max_length=max_len)
    (folder / "preprocessing.json").write_text(
        json.dumps({"max_len": max_len, "head": head, "labels": ["negative", "positive"]})
    )
    return folder


def make_translation_dir(folder: Path) -> Path:
    torch.manual_seed(0)
    rows = read_jsonl("multi30k_tiny.jsonl")
    tok = train_bpe(
        [r["de"] for r in rows] + [r["en"] for r in rows], vocab_size=400, lowercase=False, strip_html_breaks=False
    )
    cfg = Seq2SeqConfig(
        vocab_size=tok.get_vocab_size(),
        d_model=32,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=2,
        d_ff=64,
        max_len=64,
        pad_id=PAD,
        bos_id=BOS,
        eos_id=EOS,
    )
    model = Seq2SeqTransformer(cfg)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    save_tokenizer(tok, folder, model_max_length=64)
    (folder / "preprocessing.json").write_text(json.dumps({"beam_size": 2, "alpha": 0.6}))
    return folder


def make_lm_dir(folder: Path, max_len: int = 64) -> Path:
    """A tiny random CausalLM (grouped key/value heads, rotary positions) with a BPE trained on the fixture reviews, in
    our folder format (preprocessing.json {"task": "lm"}). Its weights are drawn wider than training's start (std
    0.2, not 0.02), so that its heads attend unevenly and its next-token distributions are not flat."""
    from pipelines.models.folders import save_folder

    torch.manual_seed(0)
    texts = [r["text"] for r in read_jsonl("imdb_tiny.jsonl")]
    tok = train_bpe(texts * 3, vocab_size=300, lowercase=False, strip_html_breaks=True)
    cfg = CausalLMConfig(
        vocab_size=tok.get_vocab_size(), d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, d_ff=64, max_len=max_len,
        pad_id=PAD, bos_id=BOS, eos_id=EOS,
    )  # fmt: skip
    model = CausalLM(cfg)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.2)
    folder.mkdir(parents=True, exist_ok=True)
    save_folder(model, tok, folder, max_len, {"task": "lm"})
    return folder


def add_snapshots(
    folder: Path, model_cls, steps: list[int], metric: str = "accuracy", source=None, noise: float = 0.5
) -> Path:
    """Give a model folder (or a run folder) snapshots/step-<N>/ for each step, as a run with --snapshots and
    training.ship leave them: a copy of the model folder `source` (default: `folder`) whose weights are moved by
    noise seeded with the step, of std `noise` (so each snapshot computes something else), and snapshot.json with
    the step, a loss and a validation score that grow with the step."""
    import shutil

    source = source or folder
    for i, step in enumerate(steps):
        sub = folder / "snapshots" / f"step-{step}"
        sub.mkdir(parents=True)
        for name in ("tokenizer.json", "tokenizer_config.json", "preprocessing.json"):
            shutil.copy2(source / name, sub / name)
        model = model_cls.from_pretrained(source)
        g = torch.Generator().manual_seed(step)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn(p.shape, generator=g) * noise)
        model.save_pretrained(sub)
        info = {"step": step, "epoch": step / 10, "loss": 2.0 / (i + 1), "metric": metric, metric: 0.5 + i / 100}
        (sub / "snapshot.json").write_text(json.dumps(info))
    return folder


def linear_in_the_last_heads(lm):
    """A copy of a language-model pipeline with the final norm taken out and the last feed-forward layer writing
    nothing: what a last-layer head writes reaches the logits directly and only so (they are linear in its output)."""
    import copy

    pipe = copy.deepcopy(lm)
    model = pipe.adapter.model
    model.final_norm = torch.nn.Identity()
    with torch.no_grad():
        model.blocks[-1].mlp.down.weight.zero_()
    return pipe


# --- an induction circuit built by hand ---------------------------------------------------------------------------

V = P = 16  # tokens and positions; the residual stream: [token one-hot | position one-hot | previous token one-hot]


def induction_model(n_heads: int = 1) -> CausalLM:
    """Two one-head layers, no feed-forward: layer 0 a previous-token head (position p looks for position p - 1 and
    writes that token into the third block of the stream), layer 1 an induction head (token t looks for a position
    whose previous token is t). Heads after the first (n_heads) are all zeros."""
    D, big = 3 * V, 30.0
    cfg = CausalLMConfig(
        vocab_size=V, d_model=D, n_heads=n_heads, n_kv_heads=n_heads, head_dim=V, n_layers=2, d_ff=4, max_len=P,
        positions="learned", norm="rmsnorm", bias=False, tie_embeddings=False,
    )  # fmt: skip
    model = CausalLM(cfg).eval()
    eye, shift = torch.eye(V), torch.diag(torch.ones(V - 1), -1)  # shift: e_p -> e_{p + 1}
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for norm in [b.attn_norm for b in model.blocks] + [b.mlp_norm for b in model.blocks] + [model.final_norm]:
            norm.weight.fill_(1.0)
        model.tok_emb.weight[:, :V] = eye
        model.positions.table[:, V : 2 * V] = eye
        prev, ind = model.blocks[0].attn, model.blocks[1].attn
        prev.q_proj.weight[:V, V : 2 * V] = big * eye  # query: my position
        prev.k_proj.weight[:V, V : 2 * V] = big * shift  # key: position p is found by position p + 1
        prev.v_proj.weight[:V, :V] = eye  # value: the token
        prev.o_proj.weight[2 * V :, :V] = eye  # written into the previous-token block
        ind.q_proj.weight[:V, :V] = big * eye  # query: my token
        ind.k_proj.weight[:V, 2 * V :] = big * eye  # key: the token before that position
        ind.v_proj.weight[:V, :V] = eye
        ind.o_proj.weight[:V, :V] = eye
    return model
