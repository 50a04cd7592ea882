"""The first two steps: tokens and their embedding vectors; self-attention with no parameters on those vectors."""

import numpy as np
import torch.nn.functional as F

from pipelines.learn.code import code_span, shapes
from pipelines.learn.model_pass import Pass, numpy
from pipelines.learn.open_math import apply_norm, check, f64, softmax
from pipelines.learn.walk import Step
from transformer.attention import explicit_attention
from transformer.causal_lm import CausalLM
from transformer.stack import LayerStack

SHOWN_DIMS = 64  # the first dims of each vector a figure draws


def embedded_in_open(p: Pass) -> np.ndarray:
    """(T, D) what the first block reads, from the embedding rows: scaled, positions added, normed (BERT)."""
    s = p.stack
    x = f64(p.tok[0]) * s.scale
    if s.table is not None:
        x = x + f64(s.table[: x.shape[0]])
    return apply_norm(x, s.embed_norm)


def tokens(p: Pass) -> Step:
    c = p.model.config
    x, emb = embedded_in_open(p), p.at(p.stack.embed_point)  # (T, D)
    hashed = getattr(p.model, "ngram_emb", None) is not None  # the scratch classifier's phrase vectors
    ngrams = " plus vectors of the short phrases ending there (hashed n-grams)" if hashed else ""
    text = (
        f"A tokenizer cuts the text into {len(p.labels)} tokens: words or pieces of words from a vocabulary of "
        f"{c.vocab_size:,}. Each token has an id, its row in the embedding matrix: a table of {c.vocab_size:,} rows "
        f"of {c.d_model} numbers learnt in training. The model reads each token as its row, its embedding vector"
        f"{ngrams}. The heatmap shows the first numbers of each vector. Everything after this step is arithmetic "
        "on these vectors."
    )
    if p.read.cut:
        text += f" (Learn reads the first {len(p.labels)} tokens of a longer text.)"
    obj = CausalLM.from_token_vectors if isinstance(p.model, CausalLM) else LayerStack.embed
    return p.step(
        "tokens",
        title="Tokens and their embedding vectors",
        text=text,
        part="embed",
        arrays={
            "ids": p.ids[0].cpu().numpy(),
            "vectors": numpy(p.tok[0, :, :SHOWN_DIMS]),
            "norms": numpy(p.tok[0].norm(dim=-1)),
        },  # fmt: skip
        code=code_span(obj, shapes=shapes(ids=p.ids, vectors=p.tok, embedded=emb[None])),
        check=check(f"embedding rows from the matrix vs {p.stack.embed_point}", (x, emb)),
    )


def plain_attention(p: Pass) -> Step:
    """x_i . x_j, a softmax per row, each output the weighted average of the inputs: no parameters at all."""
    x = p.at(p.stack.embed_point)  # (T, D) the vectors the first block reads
    x64 = f64(x)
    weights = softmax(x64 @ x64.T)  # (T, T)
    output = np.einsum("ij,jd->id", weights, x64)  # y_i = sum_j w_ij x_j
    ref_w = F.softmax(x @ x.T, dim=-1)  # torch's own softmax, float32: the reference
    ref_y = ref_w @ x
    text = (
        "Self-attention in its plainest form has no parameters. Each token's vector x_i is compared with every "
        "token's x_j by their dot product (large when they point the same way). A softmax turns each row of dot "
        "products into weights that are positive and sum to 1. Each output y_i is the weighted average of all the "
        "vectors: sum over j of w_ij x_j. Here it runs on the model's own embedding vectors of your text. A vector "
        "agrees most with itself, so the diagonal dominates: the model needs something better. The code is the "
        "model's version of these lines, with q, k and v in place of x."
    )
    return p.step(
        "plain_attention",
        title="Self-attention with no parameters",
        text=text,
        part="attention",
        arrays={"weights": weights.astype(np.float32), "output": output[:, :SHOWN_DIMS].astype(np.float32)},
        code=code_span(explicit_attention, "scores = (q", "return dropped", shapes(x=x[None], weights=ref_w[None])),
        check=check(
            "softmax(x x^T) and y = w x in float64 numpy vs torch's F.softmax and matmul",
            (weights, ref_w),
            (output, ref_y),
        ),
    )
