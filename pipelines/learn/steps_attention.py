"""Queries, keys and values; the scaling by 1/sqrt(d); multi-head attention: layer 0 of the stack, done in the open
from what the layer read (hook_resid_pre) and its weights, against the model's hook points."""

import numpy as np

from pipelines.learn.code import code_span, shapes
from pipelines.learn.model_pass import Pass, numpy
from pipelines.learn.open_math import apply_norm, check, entropy, f64, rotate, softmax
from pipelines.learn.walk import Step
from transformer.attention import Attention, explicit_attention

LAYER = 0


def linear_heads(h: np.ndarray, proj, n: int, hs: int) -> np.ndarray:
    """h (T, D) through a projection's weights (and bias), split into n heads: (T, n, hs)."""
    y = h @ f64(proj.weight).T + (f64(proj.bias) if proj.bias is not None else 0.0)
    return y.reshape(h.shape[0], n, hs)


def projections(p: Pass) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q (T, H, hs), k and v (T, Hkv, hs) of layer 0 in the open, rotated where the model has rotary positions."""
    block = p.stack.blocks[LAYER]
    attn = block.attn
    x = f64(p.at(p.stack.point(LAYER, "hook_resid_pre")))  # (T, D)
    h = apply_norm(x, block.attn_norm) if p.stack.norm_first else x
    hs = attn.head_dim
    q = linear_heads(h, attn.q_proj, attn.n_heads, hs)
    k = linear_heads(h, attn.k_proj, attn.n_kv_heads, hs)
    v = linear_heads(h, attn.v_proj, attn.n_kv_heads, hs)
    if attn.rotary is not None:
        q, k = rotate(q, attn.rotary.base), rotate(k, attn.rotary.base)
    return q, k, v


def visible(p: Pass) -> np.ndarray:
    """(T, T) True = attend: every key, or (causal) the keys at or before the query."""
    T = len(p.labels)
    return np.tril(np.ones((T, T), dtype=bool)) if p.stack.causal else np.ones((T, T), dtype=bool)


def qkv(p: Pass) -> Step:
    q, k, v = projections(p)
    hq, hk, hv = (p.at(p.stack.point(LAYER, f"attn.hook_{n}")) for n in "qkv")
    attn = p.stack.blocks[LAYER].attn
    rotary = " The hooked q and k come after the rotation of rotary positions (step 7): so do these." if (
        attn.rotary is not None) else ""  # fmt: skip
    norm = " (through its norm first)" if p.stack.norm_first else ""
    text = (
        "Learnt parameters give each vector three roles. Three weight matrices, W_Q, W_K and W_V, map the vector a "
        f"layer reads{norm} to a query (what this token looks for), a key (what it offers to be found by) and a "
        "value (what it passes on when found). The score of token j for token i is now q_i . k_j, no longer x_i . "
        f"x_j. Each of the {attn.n_heads} heads has its own matrices, {attn.head_dim} numbers wide; here head 0 of "
        f"layer 0.{rotary}"
    )
    return p.step(
        "qkv",
        title="Queries, keys and values",
        text=text,
        part="attention",
        arrays={"q": q[:, 0].astype(np.float32), "k": k[:, 0].astype(np.float32), "v": v[:, 0].astype(np.float32)},
        code=code_span(Attention.project, shapes=shapes(q=hq[None], k=hk[None], v=hv[None])),
        check=check(
            f"hook_resid_pre @ W_Q, W_K, W_V (+ bias) vs {p.stack.point(LAYER, 'attn.hook_q')}, hook_k, hook_v",
            (q, hq),
            (k, hk),
            (v, hv),
        ),
    )


def scaling(p: Pass) -> Step:
    attn = p.stack.blocks[LAYER].attn
    q = f64(p.at(p.stack.point(LAYER, "attn.hook_q")))[:, 0]  # (T, hs) head 0, after any rotation
    k = f64(p.at(p.stack.point(LAYER, "attn.hook_k")))[:, 0]  # its key/value head
    seen = visible(p)
    raw = q @ k.T  # (T, T)
    scaled = raw / np.sqrt(attn.head_dim)
    w_raw, w = softmax(raw, seen), softmax(scaled, seen)
    pattern = p.at(p.stack.point(LAYER, "attn.hook_pattern"))[0]  # (T, T) head 0
    text = (
        f"Dot products of {attn.head_dim}-number vectors grow with their length, and a softmax of large numbers "
        "saturates: one weight near 1, the others near 0, and training can barely change it. So the scores are "
        f"divided by sqrt({attn.head_dim}) = {np.sqrt(attn.head_dim):.2f} first. The entropy of a row "
        "measures how spread its weights are: 0 when one key takes all, log(n) when n keys share equally. Compare "
        "the two maps and their entropies, head 0 of layer 0."
    )
    if attn.rotary is not None:
        text += " Here q and k are taken after the rotation of rotary positions, as the model scores them."
    return p.step(
        "scaling",
        title="Scaling by 1/sqrt(d)",
        text=text,
        part="attention",
        arrays={
            "scores": np.where(seen, raw, 0.0).astype(np.float32),
            "scaled_scores": np.where(seen, scaled, 0.0).astype(np.float32),
            "weights_unscaled": w_raw.astype(np.float32),
            "weights": w.astype(np.float32),
            "entropy_unscaled": entropy(w_raw).astype(np.float32),
            "entropy": entropy(w).astype(np.float32),
            "max_unscaled": w_raw.max(-1).astype(np.float32),
            "max": w.max(-1).astype(np.float32),
        },
        code=code_span(explicit_attention, "scores = (q", "weights = scores.softmax", shapes(pattern=pattern[None])),
        check=check(
            f"softmax(q k^T / sqrt({attn.head_dim}) + mask) vs {p.stack.point(LAYER, 'attn.hook_pattern')} head 0",
            (w, pattern),
        ),
    )


def multi_head(p: Pass) -> Step:
    attn = p.stack.blocks[LAYER].attn
    patterns = p.at(p.stack.point(LAYER, "attn.hook_pattern"))  # (H, T, T)
    z = f64(p.at(p.stack.point(LAYER, "attn.hook_z")))  # (T, H, hs)
    T, H, hs = z.shape
    w_o = f64(attn.o_proj.weight)  # (D, H * hs)
    out = z.reshape(T, H * hs) @ w_o.T + f64(attn.b_O)  # (T, D) the heads side by side, mixed by W_O
    per_head = np.einsum("the,hed->thd", z, w_o.T.reshape(H, hs, -1))  # (T, H, D) each head's share
    attn_out = p.at(p.stack.point(LAYER, "hook_attn_out"))
    text = (
        f"One head computes one kind of weighting; this layer has {H}, side by side, each with its own W_Q, W_K and "
        f"W_V of {hs} numbers a token. Each head outputs a weighted average of its values (z, {hs} numbers a token). "
        f"The {H} outputs are concatenated into {H * hs} numbers and multiplied by one more matrix, W_O, which "
        "mixes them back into the model's width. The maps show every head of layer 0: each looks somewhere else."
    )
    if attn.n_kv_heads < H:
        text += f" Here {attn.n_kv_heads} key/value heads are shared by the {H} query heads (grouped-query attention)."
    return p.step(
        "multi_head",
        title="Multi-head attention",
        text=text,
        part="heads",
        arrays={"patterns": numpy(patterns), "head_norms": np.linalg.norm(per_head, axis=-1).T.astype(np.float32)},
        code=code_span(
            Attention.mix, shapes=shapes(z=p.cache[p.stack.point(LAYER, "attn.hook_z")], out=attn_out[None])
        ),
        check=check(f"concat(hook_z) @ W_O + b_O vs {p.stack.point(LAYER, 'hook_attn_out')}", (out, attn_out)),
    )
