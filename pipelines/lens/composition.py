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
