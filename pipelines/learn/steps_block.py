"""The block: the residual stream, the norms and the feed-forward, and how much each part adds, layer by layer."""

import math

import numpy as np
import torch
from torch import nn

from pipelines.learn.code import code_span, shapes
from pipelines.learn.model_pass import Pass, numpy
from pipelines.learn.open_math import apply_norm, check, f64
from pipelines.learn.walk import Step
from transformer.layers import Block

SHOWN_DIMS = 64


def _size(t) -> float:
    """The mean length of a (T, D) activation's vectors."""
    return float(t.float().norm(dim=-1).mean())


def _rebuilt(p: Pass, layer: int) -> np.ndarray:
    """Block `layer`'s output from its input and its two sublayers' outputs, in the open: pre-norm adds them,
    post-norm norms after each sum."""
    s, block = p.stack, p.stack.blocks[layer]
    x, a, m = (f64(p.at(s.point(layer, n))) for n in ("hook_resid_pre", "hook_attn_out", "hook_mlp_out"))
    if s.norm_first:
        return x + a + m
    return apply_norm(apply_norm(x + a, block.attn_norm) + m, block.mlp_norm)


def block(p: Pass) -> Step:
    s, n = p.stack, len(p.stack.blocks)
    sizes = {key: np.array([_size(p.at(s.point(i, point))) for i in range(n)], dtype=np.float32)
             for key, point in (("resid", "hook_resid_pre"), ("attn", "hook_attn_out"), ("mlp", "hook_mlp_out"),
                                ("post", "hook_resid_post"))}  # fmt: skip
    if s.norm_first:
        norm = "Each sublayer reads its input through a norm first (pre-norm) and adds its output to the stream."
    else:
        norm = "After each addition a LayerNorm rescales the stream (post-norm, as BERT and the original model)."
    text = (
        f"Attention is one half of a block; the model stacks {n} blocks. Each block reads the residual stream (the "
        "vector every token carries from layer to layer), and its attention and its feed-forward network each add "
        f"their output to it: x + attention(x), then + feed-forward. {norm} A norm rescales each vector to a "
        "standard size. The bars compare the stream's size with what each part adds, layer by layer."
    )
    return p.step(
        "block",
        title="The block: residual stream, norms, feed-forward",
        text=text,
        part="block",
        arrays=sizes,
        code=code_span(
            Block.forward,
            "x = at(self.hook_resid_pre",
            "x = at(self.hook_resid_post",
            shapes(resid=p.cache[s.point(0, "hook_resid_pre")]),
        ),  # fmt: skip
        check=check(
            "hook_resid_pre + hook_attn_out (+ norm) + hook_mlp_out (+ norm) vs hook_resid_post, every layer",
            *[(_rebuilt(p, i), p.at(s.point(i, "hook_resid_post"))) for i in range(n)],
        ),
    )


def _hidden(h: np.ndarray, mlp) -> np.ndarray:
    """The feed-forward's hidden activation (T, d_ff) in the open: ReLU, the erf GELU or SwiGLU."""
    if hasattr(mlp, "gate"):
        g = h @ f64(mlp.gate.weight).T
        return g / (1 + np.exp(-g)) * (h @ f64(mlp.up.weight).T)  # silu(gate) * up
    u = h @ f64(mlp.up.weight).T + f64(mlp.up.bias)
    if isinstance(mlp.act, nn.GELU):
        return 0.5 * u * (1 + torch.special.erf(torch.from_numpy(u / math.sqrt(2))).numpy())
    return np.maximum(u, 0.0)


def feed_forward(p: Pass) -> Step:
    s, block_0 = p.stack, p.stack.blocks[0]
    mlp = block_0.mlp
    mid = f64(p.at(s.point(0, "hook_resid_mid")))  # (T, D) what the feed-forward reads (through its norm, pre-norm)
    h = apply_norm(mid, block_0.mlp_norm) if s.norm_first else mid
    hidden = _hidden(h, mlp)  # (T, d_ff)
    out = hidden @ f64(mlp.down.weight).T + (f64(mlp.down.bias) if mlp.down.bias is not None else 0.0)
    mlp_out = p.at(s.point(0, "hook_mlp_out"))
    kind = "SwiGLU (a gated unit: silu(gate x) times up x)" if hasattr(mlp, "gate") else type(mlp.act).__name__
    text = (
        "The feed-forward network (also called the MLP) works on each token alone, with no look at the others: "
        f"it widens the vector from {h.shape[1]} to {hidden.shape[1]} numbers, applies a non-linear function "
        f"({kind}), and projects back. Attention moves information between tokens; the feed-forward transforms "
        "what each token holds, and holds much of what the model has learnt. The map shows the first hidden "
        "units of layer 0 for each token."
    )
    return p.step(
        "feed_forward",
        title="The feed-forward network",
        text=text,
        part="mlp",
        arrays={"hidden": hidden[:, :SHOWN_DIMS].astype(np.float32), "active": (hidden > 0).mean(-1).astype(np.float32),
                "out_norms": numpy(mlp_out.norm(dim=-1)), "in_norms": np.linalg.norm(mid, axis=-1).astype(np.float32)},
        code=code_span(type(mlp), shapes=shapes(x=p.cache[s.point(0, "hook_resid_mid")],
                                                hidden=p.cache[s.point(0, "mlp.hook_post")], out=mlp_out[None])),
        check=check("down(act(up(x))) in the open vs " + s.point(0, "hook_mlp_out"), (out, mlp_out)),
    )  # fmt: skip
