"""One attention score taken apart: the pre-softmax score of a head at a cell (query i, key j), as the model computes
it (scaled, rotated on a rotary model), split into (query-side part x key-side part) terms over the parts of the
residual stream that feeds the layer.

With every norm's scale frozen at its value in this pass (RMSNorm's 1/rms; LayerNorm's 1/std, its centring linear),
the attention's input is linear in the residual stream, and the residual stream at a position is a sum of parts:
`embed` (the token vectors), `pos_embed` (where positions are added), each earlier head's output through its slice of
W_O (`L{l}H{h}`; a translator's decoder also has cross-attention heads, `L{l}C{h}`), each earlier feed-forward layer's
output (`{l}_mlp_out`) and `bias` (the attention outputs' biases and every norm's bias). A post-norm model's stream
is the previous sublayer's normed sum: each norm (frozen) maps every part on its own, so the parts still add up.
q_i = R_i (W_Q^h n(x_i)) + R_i b_Q and k_j = R_j (W_K^g n(x_j)) + R_j b_K (g the key/value head h reads), so
q_i . k_j / sqrt(hs) = sum over part pairs (p, p') of q_p . k_p' / sqrt(hs) + the projection biases' terms (`rest`).
"""

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from pipelines.models.hook_names import stack_point


@dataclass(frozen=True)
class ScoreParts:
    """One cell's pre-softmax score, taken apart. Layers, heads and positions from 0; positions into the model's own
    token sequence (a translator's "cross": query = decoder position = the decoding step, key = source position)."""

    kind: str  # "self", "causal", "encoder", "decoder" or "cross" (pipelines.kinds)
    layer: int
    head: int
    query: int
    key: int
    parts: tuple[str, ...]  # (P,) the query side's parts: "embed", "pos_embed", "L0H1", "0_mlp_out", ..., "bias"
    key_parts: tuple[str, ...]  # (Pk,) the key side's: the same as parts but for "cross" (the encoder's, "encoder.")
    pairs: np.ndarray  # (P, Pk) float64: q_part . k_part / sqrt(hs)
    rest: float  # what is no pair of parts: the projections' own biases, (b_Q . K + Q . b_K + b_Q . b_K) / sqrt(hs)
    score: float  # the model's own pre-softmax score (from hook_q and hook_k)
    query_token: str = ""
    key_token: str = ""

    @property
    def query_side(self) -> np.ndarray:
        """(P,) each query-side part's total over the key side: which parts make the query look for this key."""
        return self.pairs.sum(1)

    @property
    def key_side(self) -> np.ndarray:
        """(Pk,) each key-side part's total over the query side: which parts make this key findable."""
        return self.pairs.sum(0)

    @property
    def unexplained(self) -> float:
        """score - (pairs.sum() + rest): float error only."""
        return self.score - float(self.pairs.sum()) - self.rest

    def top(self, n: int = 10) -> list[tuple[str, str, float]]:
        """The n largest terms by size: (query part, key part, value)."""
        flat = np.argsort(-np.abs(self.pairs), axis=None)[:n]
        rows, cols = np.unravel_index(flat, self.pairs.shape)
        return [(self.parts[r], self.key_parts[c], float(self.pairs[r, c])) for r, c in zip(rows, cols)]

    def top_side(self, side: str = "key", n: int = 5) -> list[tuple[str, float]]:
        """The n parts of one side ("query" or "key") with the largest totals by size."""
        labels, values = (self.parts, self.query_side) if side == "query" else (self.key_parts, self.key_side)
        order = np.argsort(-np.abs(values))[:n]
        return [(labels[i], float(values[i])) for i in order]


# --- the parts of the residual stream ------------------------------------------------------------------------------


class Stream:
    """Labelled parts of the residual stream at P positions: x (N, P, D) float64, "bias" first."""

    def __init__(self, like: torch.Tensor):
        self.labels: list[str] = ["bias"]
        self.x = torch.zeros(1, *like.shape, dtype=torch.float64, device=like.device)  # (1, P, D)

    def add(self, labels: list[str], x: torch.Tensor) -> None:
        """x (n, P, D): n more parts."""
        self.labels += labels
        self.x = torch.cat([self.x, x.to(torch.float64)])

    def add_bias(self, b: torch.Tensor) -> None:
        self.x[0] += b.to(torch.float64)

    def norm(self, module: nn.Module, inp: torch.Tensor) -> None:
        """`module` (LayerNorm, RMSNorm or Identity) frozen at its input inp (P, D): the scale (and LayerNorm's
        centring, linear) applied to every part, its bias added to "bias"."""
        if isinstance(module, nn.Identity):
            return
        inp = inp.to(torch.float64)
        w = module.weight.to(torch.float64)
        if isinstance(module, nn.LayerNorm):
            scale = (inp.var(-1, unbiased=False, keepdim=True) + module.eps).rsqrt()  # (P, 1)
            self.x = (self.x - self.x.mean(-1, keepdim=True)) * scale * w
            if module.bias is not None:
                self.x[0] += module.bias.to(torch.float64)
        else:  # RMSNorm
            self.x = self.x * (inp.pow(2).mean(-1, keepdim=True) + module.eps).rsqrt() * w

    @property
    def total(self) -> torch.Tensor:
        """(P, D) the sum of the parts: the state they make up."""
        return self.x.sum(0)


@torch.no_grad()
def embedding_stream(stack, embed: torch.Tensor, tok: torch.Tensor | None, positions: torch.Tensor | None) -> Stream:
    """The parts of what the first block reads, `embed` (P, D) (hook_embed at P positions): "embed" and, where
    positions are added, "pos_embed" (their table's rows `positions` (P,)); with an embedding norm (BERT) both go
    through it frozen at tok (P, D) (the token vectors, scaled) + positions. "embed" is what the others leave of
    hook_embed, so the parts add up to it."""
    out = Stream(embed)
    table = getattr(getattr(stack, "positions", None), "table", None)
    if table is None or positions is None:
        out.add(["embed"], embed[None])
        return out
    pos = table[positions].to(torch.float64)[None]  # (1, P, D)
    out.add(["pos_embed"], pos)
    norm = getattr(stack, "embed_norm", nn.Identity())
    if not isinstance(norm, nn.Identity):
        out.norm(norm, tok.to(torch.float64) + pos[0])
    out.add(["embed"], (embed.to(torch.float64) - out.total)[None])
    out.labels = ["bias", "embed", "pos_embed"]
    out.x = out.x[[0, 2, 1]]
    return out


def _block_names(prefix: str, i: int, block, upto: str | None) -> list[str]:
    b = stack_point(prefix, i)
    names = [b + "hook_resid_pre"]
    if upto == "attn":
        return names
    names += [b + "attn.hook_result", b + "hook_attn_out", b + "hook_resid_mid"]
    if block.cross_attn is not None:
        if upto == "cross":
            return names
        names += [b + "cross_attn.hook_result", b + "hook_cross_attn_out", b + "hook_resid_cross"]
    return names + [b + "hook_mlp_out", b + "hook_resid_post"]


def stream_names(prefix: str, blocks, layer: int, upto: str) -> list[str]:
    """The hook points stream_at reads: every point of blocks 0..layer - 1 and what block `layer` reads up to `upto`
    ("attn": its self-attention, "cross": its cross-attention, "end": past the last block)."""
    names = [f"{prefix}hook_embed"]
    for i, block in enumerate(blocks):
        if i > layer:  # upto "end": layer = len(blocks), every block whole
            break
        names += _block_names(prefix, i, block, upto if i == layer else None)
    return names


def _add_block(stream: Stream, block, g, b: str, i: int, upto: str | None) -> None:
    """Block i's writes into `stream` (its norms frozen), up to `upto` in it (None: the whole block)."""
    H = block.attn.n_heads
    if upto == "attn":
        return
    stream.add([f"L{i}H{h}" for h in range(H)], g(b + "attn.hook_result").transpose(0, 1))  # (H, P, D)
    stream.add_bias(block.attn.b_O)
    if not block.norm_first:
        stream.norm(block.attn_norm, g(b + "hook_resid_pre") + g(b + "hook_attn_out"))
    mid = g(b + "hook_resid_mid")
    if block.cross_attn is not None:
        if upto == "cross":
            return
        stream.add([f"L{i}C{h}" for h in range(H)], g(b + "cross_attn.hook_result").transpose(0, 1))
        stream.add_bias(block.cross_attn.b_O)
        if not block.norm_first:
            stream.norm(block.cross_norm, mid + g(b + "hook_cross_attn_out"))
        mid = g(b + "hook_resid_cross")
    stream.add([f"{i}_mlp_out"], g(b + "hook_mlp_out")[None])
    if not block.norm_first:
        stream.norm(block.mlp_norm, mid + g(b + "hook_mlp_out"))


def stream_at(stack, prefix: str, cache: dict, pos: list[int], layer: int, upto: str, first: Stream) -> Stream:
    """The parts of what the attention (upto "attn" or "cross") of block `layer` reads at positions `pos` (its input
    norm frozen, pre-norm), or (upto "end") of the stack's output after its final norm; `first`: the parts of
    hook_embed at pos (embedding_stream)."""
    g = lambda name: cache[name][0, pos].to(torch.float64)  # noqa: E731  (P, ...)
    stream, blocks = first, stack.blocks
    last = len(blocks) if upto == "end" else layer + 1
    for i in range(last):
        _add_block(stream, blocks[i], g, stack_point(prefix, i), i, upto if i == layer else None)
    if upto == "end":
        stream.norm(stack.final_norm, g(stack_point(prefix, len(blocks) - 1, "hook_resid_post")))
        return stream
    block = blocks[layer]
    if block.norm_first:
        if upto == "attn":
            stream.norm(block.attn_norm, g(stack_point(prefix, layer, "hook_resid_pre")))
        else:
            stream.norm(block.cross_norm, g(stack_point(prefix, layer, "hook_resid_mid")))
    return stream


# --- the score, taken apart ----------------------------------------------------------------------------------------


def _side(attn, weight: torch.Tensor, bias: torch.Tensor | None, n: int, head: int, parts: torch.Tensor):
    """parts (N, D) through one head's slice of a projection -> (N, hs) and its bias (hs,) (zeros without one)."""
    hs = attn.head_dim
    w = weight.view(n, hs, -1)[head].to(torch.float64)  # (hs, D)
    b = bias.view(n, hs)[head].to(torch.float64) if bias is not None else parts.new_zeros(hs)
    return parts @ w.T, b


def _rotated(attn, x: torch.Tensor, position: int) -> torch.Tensor:
    """x (N, hs) rotated as the head rotates position `position` (unchanged without rotary positions)."""
    if attn.rotary is None:
        return x
    cos, sin = attn.rotary.cos_sin(1, position, x.device)  # (1, hs) each
    return attn.rotary.rotate(x[None, None], cos.to(x.dtype), sin.to(x.dtype))[0, 0]


@dataclass(frozen=True)
class Cell:
    """Where a score is: the head, its (query, key) positions, and the parts each side reads (N, D), normed."""

    attn: nn.Module  # the Attention module
    head: int
    query: int
    key: int
    query_parts: torch.Tensor  # (N, D)
    key_parts: torch.Tensor  # (Nk, D)


@torch.no_grad()
def split_score(cell: Cell) -> tuple[np.ndarray, float]:
    """(pairs (N, Nk), rest): q_part . k_part / sqrt(hs) for each pair of parts, and the projection biases' terms."""
    attn, h = cell.attn, cell.head
    g = h // (attn.n_heads // attn.n_kv_heads)  # the key/value head that query head h reads
    q, bq = _side(attn, attn.q_proj.weight, attn.q_proj.bias, attn.n_heads, h, cell.query_parts)  # (N, hs), (hs,)
    k, bk = _side(attn, attn.k_proj.weight, attn.k_proj.bias, attn.n_kv_heads, g, cell.key_parts)
    q, bq = _rotated(attn, q, cell.query), _rotated(attn, bq[None], cell.query)[0]
    k, bk = _rotated(attn, k, cell.key), _rotated(attn, bk[None], cell.key)[0]
    scale = attn.head_dim**-0.5
    pairs = (q @ k.T) * scale  # (N, Nk)
    rest = (bq @ k.sum(0) + q.sum(0) @ bk + bq @ bk) * scale
    return pairs.cpu().numpy(), float(rest)


def model_score(q: torch.Tensor, k: torch.Tensor, head: int, n_heads: int) -> float:
    """The model's own pre-softmax score from hook_q[0, query] (H, hs) and hook_k[0, key] (Hkv, hs)."""
    g = head // (n_heads // k.size(0))
    return float(q[head].double() @ k[g].double()) * q.size(-1) ** -0.5


def ordered(labels: list[str]) -> list[int]:
    """The parts' order in a result: bias (the first part of a Stream) last."""
    return list(range(1, len(labels))) + [0]


# --- one cell of one pass ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One side of an attention, as a model's pass reads it: the stack, its hook points' prefix, the positions' token
    vectors where an embedding norm needs them, and the tokens' texts."""

    stack: nn.Module  # an Encoder, Decoder or CausalLM: .blocks, .final_norm, maybe .positions and .embed_norm
    prefix: str  # "" or "encoder." / "decoder."
    tokens: list[str]
    tok: torch.Tensor | None = None  # (T, D) the token vectors as the embedding norm reads them (scaled), or None


def check_index(name: str, value: int, n: int) -> int:
    if not 0 <= int(value) < n:
        raise ValueError(f"{name} {value} is out of range: 0..{n - 1}")
    return int(value)


def _stream(side: Side, cache: dict, pos: list[int], layer: int, upto: str) -> Stream:
    embed = cache[f"{side.prefix}hook_embed"][0, pos].to(torch.float64)  # (P, D)
    tok = side.tok[pos] if side.tok is not None else None
    first = embedding_stream(side.stack, embed, tok, torch.tensor(pos, device=embed.device))
    return stream_at(side.stack, side.prefix, cache, pos, layer, upto, first)


def names_for(q_side: Side, k_side: Side | None, layer: int, cross: bool) -> list[str]:
    """The hook points one cell's decomposition reads (k_side: the encoder, for cross-attention)."""
    layer = check_index("layer", layer, len(q_side.stack.blocks))
    attn = stack_point(q_side.prefix, layer, "cross_attn." if cross else "attn.")
    names = stream_names(q_side.prefix, q_side.stack.blocks, layer, "cross" if cross else "attn")
    if cross:
        names += stream_names(k_side.prefix, k_side.stack.blocks, len(k_side.stack.blocks), "end")
    return names + [attn + "hook_q", attn + "hook_k"]


@torch.no_grad()
def take_apart(cache: dict, q_side: Side, layer: int, head: int, query: int, key: int, kind: str, k_side=None):
    """ScoreParts of one cell from a cached pass holding names_for(...): self-attention within q_side's stack, or
    (k_side given: the encoder) the cross-attention of the decoder q_side to it."""
    blocks = q_side.stack.blocks
    layer = check_index("layer", layer, len(blocks))
    cross = k_side is not None
    attn = blocks[layer].cross_attn if cross else blocks[layer].attn
    head = check_index("head", head, attn.n_heads)
    query = check_index("query", query, len(q_side.tokens))
    key = check_index("key", key, len(k_side.tokens if cross else q_side.tokens))
    if cross:
        qs, ks = _stream(q_side, cache, [query], layer, "cross"), _stream(k_side, cache, [key], 0, "end")
        q_parts, k_parts, k_labels = qs.x[:, 0], ks.x[:, 0], [f"encoder.{n}" for n in ks.labels]
    else:
        qs = ks = _stream(q_side, cache, [query, key], layer, "attn")
        q_parts, k_parts, k_labels = qs.x[:, 0], qs.x[:, 1], qs.labels
    pairs, rest = split_score(Cell(attn, head, query, key, q_parts, k_parts))
    a = stack_point(q_side.prefix, layer, "cross_attn." if cross else "attn.")
    score = model_score(cache[a + "hook_q"][0, query], cache[a + "hook_k"][0, key], head, attn.n_heads)
    qi, ki = ordered(qs.labels), ordered(k_labels)
    return ScoreParts(
        kind, layer, head, query, key,
        tuple(qs.labels[i] for i in qi), tuple(k_labels[i] for i in ki), pairs[np.ix_(qi, ki)], rest, score,
        q_side.tokens[query], (k_side if cross else q_side).tokens[key],
    )  # fmt: skip
