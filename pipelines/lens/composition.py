"""Heads composing, from the weights alone (Elhage et al. 2021): how much an earlier head's output (its OV circuit)
feeds a later head's queries (Q-composition), keys (K-composition) or values (V-composition), and each head's OV
circuit through the embeddings and unembedding (its copying score).

For an earlier head's W_OV = W_V W_O (D x D) and a later head's W_QK = W_Q W_K^T: Q-composition
||W_QK^T W_OV||_F / (||W_QK||_F ||W_OV||_F), K-composition ||W_QK W_OV||_F / (...), V-composition with the later
head's W_OV in place of W_QK (TransformerLens's convention). Each norm's weight (the later head's input norm) is folded
into the matrices; grouped key/value heads are read as the model reads them (query head h reads K/V head
h // (H / Hkv)). Nothing D x D is formed: every norm is a trace of a product of hs x hs matrices.
"""

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

COMPOSITIONS = ("q", "k", "v")


@dataclass(frozen=True)
class Composition:
    """Composition scores of every earlier head into every later head, beside random matrices of the same shapes."""

    kind: str  # "q", "k" or "v"
    attention: str  # the kind of attention whose heads these are ("self", "causal", "encoder", "decoder")
    scores: np.ndarray  # (L, H, L, H): [l1, h1, l2, h2] head (l1, h1) into the later head (l2, h2); 0 where l1 >= l2
    baseline: np.ndarray  # (L, H, L, H) the same score for random matrices of the same shapes; 0 where l1 >= l2

    @property
    def baseline_mean(self) -> float:
        """The random baseline's mean over the pairs of heads that can compose."""
        L = self.scores.shape[0]
        earlier = np.triu(np.ones((L, L), dtype=bool), 1)  # (L, L): l1 < l2
        return float(self.baseline.transpose(0, 2, 1, 3)[earlier].mean()) if earlier.any() else 0.0

    def into(self, layer: int, head: int, n: int = 10) -> list[tuple[int, int, float]]:
        """The n earlier heads (layer, head, score) composing most into head (layer, head)."""
        s = self.scores[:layer, :, layer, head]  # (layer, H)
        order = np.argsort(-s, axis=None)[:n]
        return [(int(i // s.shape[1]), int(i % s.shape[1]), float(s.flat[i])) for i in order]

    def out_of(self, layer: int, head: int, n: int = 10) -> list[tuple[int, int, float]]:
        """The n later heads (layer, head, score) that head (layer, head) composes into most."""
        s = self.scores[layer, head, layer + 1 :]  # (L - layer - 1, H)
        order = np.argsort(-s, axis=None)[:n]
        return [(layer + 1 + int(i // s.shape[1]), int(i % s.shape[1]), float(s.flat[i])) for i in order]


@dataclass(frozen=True)
class Copying:
    """Each head's copying score: the eigenvalues of its full OV circuit W_E W_V W_O W_U (with the norms folded in),
    sum of their real parts over the sum of their absolute values; near 1: the head copies what it attends to."""

    attention: str
    scores: np.ndarray  # (L, H)


@dataclass(frozen=True)
class Stack:
    """The heads of one kind of attention and what their OV circuits read and write through: the blocks, the
    token embeddings (V, D) and the unembedding (D, V) with the norm before it."""

    attention: str
    blocks: nn.ModuleList
    embed: torch.Tensor  # (V, D)
    unembed: torch.Tensor  # (D, V)
    final_norm: nn.Module  # nn.Identity for a post-norm stack


def _norm_map(norm: nn.Module | None, w: torch.Tensor) -> torch.Tensor:
    """w (..., D, k) -> the norm's linear map folded in before it (x @ result == norm_linear(x) @ w): LayerNorm's
    centring and weight, RMSNorm's weight (the 1/rms scale, a positive number a position, left out as TransformerLens
    does)."""
    if norm is None or isinstance(norm, nn.Identity):
        return w
    w = norm.weight.to(w.dtype)[:, None] * w  # (..., D, k)
    return w - w.mean(-2, keepdim=True) if isinstance(norm, nn.LayerNorm) else w


def _out_map(norm: nn.Module | None, o: torch.Tensor) -> torch.Tensor:
    """o (..., D) rows written into the stream, through a post-norm block's norm (centring and weight) after it."""
    if norm is None:
        return o
    if isinstance(norm, nn.LayerNorm):
        o = o - o.mean(-1, keepdim=True)
    return o * norm.weight.to(o.dtype)


@dataclass(frozen=True)
class Factors:
    """Every head's matrices, norms folded, as the model reads them (K and V repeated to the query heads): W_Q, W_K,
    W_V (N, D, hs), W_O (N, hs, D); N = L * H heads, layer-major."""

    W_Q: torch.Tensor
    W_K: torch.Tensor
    W_V: torch.Tensor
    W_O: torch.Tensor
    L: int
    H: int


@torch.no_grad()
def factors(stack: Stack, dtype=torch.float32) -> Factors:
    """Every head's folded matrices, in `dtype`."""
    out = {"Q": [], "K": [], "V": [], "O": []}  # W_Q, W_K, W_V, W_O of every layer
    for block in stack.blocks:
        attn = block.attn
        before = block.attn_norm if block.norm_first else None
        for name in ("Q", "K", "V"):
            w = getattr(attn, f"W_{name}").to(dtype)  # (H, D, hs)
            out[name].append(_norm_map(before, w))
        after = None if block.norm_first else block.attn_norm
        out["O"].append(_out_map(after, attn.W_O.to(dtype)))  # (H, hs, D)
    L, H = len(stack.blocks), stack.blocks[0].attn.n_heads
    return Factors(*(torch.cat(out[n]) for n in ("Q", "K", "V", "O")), L, H)


def _sides(f: Factors, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The later head's matrix X = Lf R^T (D x D) as its two factors (N, D, hs): q: W_Q W_K^T; k: its transpose;
    v: W_V W_O."""
    if kind == "q":
        return f.W_Q, f.W_K
    if kind == "k":
        return f.W_K, f.W_Q
    if kind == "v":
        return f.W_V, f.W_O.transpose(1, 2)
    raise ValueError(f"a composition is 'q', 'k' or 'v', not {kind!r}")


def _whiten(a: torch.Tensor) -> torch.Tensor:
    """a (N, D, hs) -> U (N, hs, hs) with a^T a = U^T U (R of a's QR): ||a M||_F = ||U M||_F for any M."""
    return torch.linalg.qr(a, mode="r")[1]


def _packed(x: torch.Tensor, idx: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x (n, D, hs) -> (n, D(D+1)/2) the symmetric x x^T's upper triangle, weighted so that the dot product of two
    packed rows is the Frobenius inner product of the two matrices."""
    gram = x @ x.transpose(1, 2)  # (n, D, D), one head at a time's worth in memory per layer
    return gram.reshape(x.shape[0], -1)[:, idx] * weight


def _grams(x: torch.Tensor, H: int) -> torch.Tensor:
    """x (N, D, hs) -> (N, D(D+1)/2) packed x x^T, a layer of heads at a time."""
    D = x.shape[1]
    rows, cols = torch.triu_indices(D, D, device=x.device)
    idx = rows * D + cols
    weight = torch.where(rows == cols, 1.0, 2.0**0.5).to(x.dtype)
    return torch.cat([_packed(x[i : i + H], idx, weight) for i in range(0, x.shape[0], H)])


def scores_of(v: torch.Tensor, o: torch.Tensor, lf: torch.Tensor, r: torch.Tensor, L: int, H: int) -> np.ndarray:
    """(L, H, L, H) ||W_OV^A X^B||_F / (||W_OV^A||_F ||X^B||_F) for every earlier head A (W_OV = V O) and later head
    B (X = lf r^T), 0 where A is not earlier; v, lf, r (N, D, hs), o (N, hs, D).

    ||V O Lf R^T||_F^2 = <F_A, F_B>_F with F_A = (Uv O)^T (Uv O) and F_B = (Lf Ur^T)(Lf Ur^T)^T (Uv, Ur: R of the QR
    of V and of R, hs x hs): one symmetric D x D matrix of rank hs a head, never one a pair of heads; every pair's
    score is then one product of the heads' packed matrices."""
    dtype = torch.float32
    left = (_whiten(v) @ o).transpose(1, 2).to(dtype)  # (N, D, hs): F_A = left left^T
    right = (lf @ _whiten(r).transpose(1, 2)).to(dtype)  # (N, D, hs): F_B = right right^T
    fa, fb = _grams(left, H), _grams(right, H)  # (N, D(D+1)/2)
    norm_a, norm_b = left.pow(2).sum((1, 2)).sqrt(), right.pow(2).sum((1, 2)).sqrt()  # (N,) Frobenius norms
    inner = (fa @ fb.T).clamp_min(0).sqrt() / (norm_a[:, None] * norm_b[None, :])  # (N, N)
    out = inner.double().view(L, H, L, H).cpu().numpy()
    earlier = np.triu(np.ones((L, L), dtype=bool), 1)[:, None, :, None]  # (L, 1, L, 1)
    return np.where(earlier, out, 0.0)


def random_baseline(f: Factors, kind: str, draws: int = 64, seed: int = 0) -> float:
    """The mean composition score of `draws` pairs of random Gaussian matrices of the heads' shapes (and so ranks),
    each pair's ||V O Lf R^T||_F through its hs x hs factors."""
    g = torch.Generator().manual_seed(seed)
    Lf, R = _sides(f, kind)
    shapes = [f.W_V.shape[1:], f.W_O.shape[1:], Lf.shape[1:], R.shape[1:]]
    v, o, lr, rr = (torch.randn(draws, *s, generator=g, dtype=torch.float64) for s in shapes)
    left, right = _whiten(v) @ o, lr @ _whiten(rr).transpose(1, 2)  # (n, hs, D), (n, D, hs)
    norms = left.pow(2).sum((1, 2)).sqrt() * right.pow(2).sum((1, 2)).sqrt()  # (n,)
    return float(((left @ right).pow(2).sum((1, 2)).sqrt() / norms).mean())


@torch.no_grad()
def composition(stack: Stack, kind: str = "k") -> Composition:
    """Every pair of heads' composition scores of `kind` ("q", "k", "v"), and the random baseline in every cell where
    a head is earlier."""
    f = factors(stack)
    Lf, R = _sides(f, kind)
    scores = scores_of(f.W_V, f.W_O, Lf, R, f.L, f.H)
    earlier = np.triu(np.ones((f.L, f.L)), 1)[:, None, :, None] * np.ones((1, f.H, 1, f.H))  # (L, H, L, H)
    return Composition(kind, stack.attention, scores, earlier * random_baseline(f, kind))


# --- the OV circuit through the embeddings ----------------------------------------------------------------------


def _circuit_ends(stack: Stack, block, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """(E (V, D): the token embeddings through the block's input norm (pre-norm), U (D, V): the unembedding after the
    final norm), the norms' linear maps folded in."""
    before = block.attn_norm if block.norm_first else None
    return _out_map(before, stack.embed.to(dtype)), _norm_map(stack.final_norm, stack.unembed.to(dtype))


@torch.no_grad()
def copying_scores(stack: Stack) -> Copying:
    """(L, H): the eigenvalues of each head's W_E W_V W_O W_U (V x V) are those of W_O W_U W_E W_V (hs x hs):
    sum of their real parts over the sum of their absolute values. W_U W_E (D x D) is formed once; each layer's input
    norm then acts on its columns."""
    f = factors(stack)
    unembed = _norm_map(stack.final_norm, stack.unembed.float())  # (D, V)
    base = unembed @ stack.embed.float()  # (D, D)
    out = np.zeros((f.L, f.H))
    for layer, block in enumerate(stack.blocks):
        middle = _out_map(block.attn_norm if block.norm_first else None, base)  # (D, D): W_U' W_E'
        heads = slice(layer * f.H, (layer + 1) * f.H)
        ev = torch.linalg.eigvals((f.W_O[heads] @ (middle @ f.W_V[heads])).double())  # (H, hs)
        out[layer] = (ev.real.sum(-1) / ev.abs().sum(-1).clamp_min(1e-30)).cpu().numpy()
    return Copying(stack.attention, out)


@torch.no_grad()
def copied(stack: Stack, layer: int, head: int, n: int = 10) -> list[tuple[int, float]]:
    """[(token id, value)]: the n largest entries of the diagonal of the head's full OV circuit: the tokens it raises
    most in the output when it attends to them."""
    f = factors(stack)
    embed, unembed = _circuit_ends(stack, stack.blocks[layer])
    k = layer * f.H + head
    diag = ((embed @ f.W_V[k]) * (f.W_O[k] @ unembed).T).sum(1)  # (V,)
    top = diag.topk(min(n, diag.numel()))
    return [(int(i), float(v)) for v, i in zip(top.values, top.indices)]
