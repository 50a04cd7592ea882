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
    rest: float  # what is no pair of parts: the projections' own biases (b_Q . k + q . b_K - b_Q . b_K)
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
