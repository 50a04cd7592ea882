"""Positions: learned, sinusoidal or rotary, as the model has them, and what layer 0's attention does without them
(the same pass with the positions taken out at the core's hook points)."""

import numpy as np
import torch

from pipelines.learn.code import code_span, shapes
from pipelines.learn.model_pass import Pass, keeper
from pipelines.learn.open_math import apply_norm, check, f64, rotate, sinusoidal, softmax
from pipelines.learn.steps_attention import linear_heads, visible
from pipelines.learn.walk import Step
from transformer.embeddings import Positions, Rotary, sinusoidal_table

SHOWN_DIMS = 64

WORDS = {
    "learned": "This model learnt one vector per position in training, added to each token's vector.",
    "sinusoidal": "This model adds a fixed vector per position: sines and cosines of the position at "
    "frequencies that fall along the vector (as in the original transformer), computed, not learnt.",
    "rotary": "This model rotates each query and key by an angle proportional to its position, pair of numbers by "
    "pair (rotary positions): a score q . k then depends on the distance between the two tokens. Nothing is added "
    "to the vectors.",
}


def _unrotated(p: Pass) -> tuple[torch.Tensor, torch.Tensor]:
    """Layer 0's q (1, T, H, hs) and k (1, T, Hkv, hs) before the rotation, from hook_resid_pre and the weights."""
    block = p.stack.blocks[0]
    attn = block.attn
    x = f64(p.at(p.stack.point(0, "hook_resid_pre")))  # (T, D)
    h = apply_norm(x, block.attn_norm) if p.stack.norm_first else x
    q = linear_heads(h, attn.q_proj, attn.n_heads, attn.head_dim)
    k = linear_heads(h, attn.k_proj, attn.n_kv_heads, attn.head_dim)
    as_tensor = lambda a: torch.tensor(a, dtype=p.tok.dtype, device=p.ids.device)[None]  # noqa: E731
    return as_tensor(q), as_tensor(k)


def replaced(value: torch.Tensor):
    """A hook that puts `value` in place of what passes its point."""
    return lambda x, name: value


def without_positions(p: Pass) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Layer 0's pattern (H, T, T) in a pass without positions: hook_embed without the position vectors, or layer 0's
    hook_q and hook_k without their rotation; and what was fed in their place ({"x"} or {"q", "k"})."""
    s, point = p.stack, p.stack.point(0, "attn.hook_pattern")
    if s.positions == "rotary":
        q, k = _unrotated(p)
        fed = {"q": q, "k": k}
        hooks = [(s.point(0, "attn.hook_q"), replaced(q)), (s.point(0, "attn.hook_k"), replaced(k))]
    else:
        fed = {"x": s.embed_norm(p.tok * s.scale)}  # (1, T, D) the tokens alone
        hooks = [(s.embed_point, replaced(fed["x"]))]
    cache = {}
    p.hooked(hooks + [(point, keeper(cache, stop=True))])
    return cache[point][0], fed


def _recomputed(p: Pass, fed: dict[str, torch.Tensor]) -> np.ndarray:
    """Layer 0's pattern without positions in the open, from what was fed in their place: (H, T, T)."""
    attn, block = p.stack.blocks[0].attn, p.stack.blocks[0]
    if "q" in fed:
        q, k = f64(fed["q"][0]), f64(fed["k"][0])
    else:
        x = f64(fed["x"][0])
        x = apply_norm(x, block.attn_norm) if p.stack.norm_first else x
        q = linear_heads(x, attn.q_proj, attn.n_heads, attn.head_dim)
        k = linear_heads(x, attn.k_proj, attn.n_kv_heads, attn.head_dim)
    k = np.repeat(k, attn.n_heads // attn.n_kv_heads, axis=1)  # each key head serves its query heads
    scores = np.einsum("qhe,khe->hqk", q, k) / np.sqrt(attn.head_dim)
    return softmax(scores, visible(p)[None])


def _table(p: Pass) -> tuple[np.ndarray, list, object]:
    """(what the figure shows of the positions, the formula's (open, model's) pair to check, the code that makes
    them)."""
    s, T = p.stack, len(p.labels)
    if s.positions == "rotary":
        rot = p.stack.blocks[0].attn.rotary
        q = f64(_unrotated(p)[0][0])
        pairs = [(rotate(q, rot.base), p.at(s.point(0, "attn.hook_q")))]
        angles = np.arange(T)[:, None] * rot.base ** (-np.arange(0, rot.head_dim, 2) / rot.head_dim)[None, :]
        return np.cos(angles).astype(np.float32), pairs, Rotary.rotate
    table = f64(s.table[:T])
    if s.positions == "sinusoidal":
        return table[:, :SHOWN_DIMS].astype(np.float32), [(sinusoidal(T, table.shape[1]), table)], sinusoidal_table
    return table[:, :SHOWN_DIMS].astype(np.float32), [], Positions.forward


def positions(p: Pass) -> Step:
    point = p.stack.point(0, "attn.hook_pattern")
    with_pos = p.at(point)  # (H, T, T)
    without, fed = without_positions(p)
    change = (without.float() - with_pos.float()).abs().amax(dim=(1, 2))  # (H,)
    table, pairs, obj = _table(p)
    what = "layer 0's pattern without positions, in the open, vs the hooked pass's " + point
    what += {"sinusoidal": "; the table vs its formula", "rotary": "; q rotated by the formula vs hook_q"}.get(
        p.stack.positions, "")  # fmt: skip
    text = (
        "Attention by itself ignores order: shuffle the tokens and each gets the same output, shuffled. So "
        f"positions are put in. {WORDS[p.stack.positions]} Taken out (the same pass with them removed), layer 0's "
        f"heads change by up to {float(change.max()):.2f} in a weight."
    )
    return p.step(
        "positions",
        title=f"Positions ({p.stack.positions})",
        text=text,
        part="positions",
        arrays={
            "table": table,
            "weights": with_pos[0].float().cpu().numpy(),
            "weights_without": without[0].float().cpu().numpy(),
            "change": change.cpu().numpy(),
        },  # fmt: skip
        code=code_span(obj, shapes=shapes(pattern=with_pos[None], without=without[None])),
        check=check(what, (_recomputed(p, fed), without), *pairs),
    )
