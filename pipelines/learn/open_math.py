"""The steps done in the open, in float64 numpy from the formulas (never the model's own modules), for the checks:
a softmax, the norms, the rotation of rotary positions, the sinusoidal table, an entropy."""

import numpy as np
import torch

from pipelines.learn.walk import Check


def f64(t) -> np.ndarray:
    return t.detach().double().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t, dtype=np.float64)


def softmax(scores: np.ndarray, visible: np.ndarray | None = None) -> np.ndarray:
    """exp(s - max) / sum over the last axis; keys where visible is False get exactly 0."""
    s = np.where(visible, scores, -np.inf) if visible is not None else scores
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def entropy(weights: np.ndarray) -> np.ndarray:
    """Each row's entropy in nats: 0 for one weight of 1, log(n) for n equal weights."""
    w = np.asarray(weights, dtype=np.float64)
    return -(np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0)).sum(axis=-1)


def layer_norm(x: np.ndarray, norm) -> np.ndarray:
    """(x - mean) / sqrt(var + eps) * weight + bias, over the last axis, with a LayerNorm's weights."""
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + norm.eps) * f64(norm.weight) + f64(norm.bias)


def rms_norm(x: np.ndarray, norm) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * weight, over the last axis, with an RMSNorm's weights."""
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + norm.eps) * f64(norm.weight)


def apply_norm(x: np.ndarray, norm) -> np.ndarray:
    """A LayerNorm, an RMSNorm or nothing (nn.Identity), done in the open."""
    if hasattr(norm, "bias") and getattr(norm, "bias", None) is not None:
        return layer_norm(x, norm)
    if hasattr(norm, "weight"):
        return rms_norm(x, norm)
    return x


def rotate(x: np.ndarray, base: float, offset: int = 0) -> np.ndarray:
    """x (T, n, hs) rotated as rotary positions do: dims i and i + hs/2 form a pair, turned by the angle
    position * base^(-2i/hs)."""
    T, _, hs = x.shape
    angles = np.arange(offset, offset + T)[:, None] * base ** (-np.arange(0, hs, 2) / hs)[None, :]  # (T, hs/2)
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]  # (T, 1, hs/2)
    x1, x2 = x[..., : hs // 2], x[..., hs // 2 :]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def sinusoidal(T: int, d: int) -> np.ndarray:
    """(T, d) Vaswani et al.'s table: sin(pos / 10000^(2i/d)) in the even dims, cos in the odd ones."""
    angles = np.arange(T)[:, None] / 10000.0 ** (np.arange(0, d, 2) / d)[None, :]
    table = np.zeros((T, d))
    table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
    return table


def biggest(*differences) -> float:
    """The largest |difference| of several arrays."""
    return float(max(np.max(np.abs(f64(d)), initial=0.0) for d in differences))


def check(what: str, *pairs) -> Check:
    """A Check of (computed in the open, the model's own) pairs: the largest |difference|, relative to the largest
    |value| of the model's where that is above 1."""
    scale = max([1.0] + [float(np.max(np.abs(f64(ref)), initial=0.0)) for _, ref in pairs])
    difference = max(biggest(f64(a) - f64(ref)) for a, ref in pairs)
    if scale > 1.0:
        what += f" (relative to the largest |value|, {scale:.3g})"
    return Check(what, difference / scale, scale)
