"""The Learn tab's numbers: the classic from-scratch path (Bloem's "Transformers from scratch") walked on a live model.

`walk(pipe, text)` runs the model once with the hook points the steps need and returns a `Walk`: one `Step` a stage
of the path that the model's family has, each with its figure's numbers, the lines of `transformer/` that compute it
(read from the source file now, so they cannot go stale) and, where the step computes something, a `Check`: the step
done in the open from the weights and the layer's input against what the model computed at its hook point.
`path(walks)` lays several models' walks out in the tutorial order (the general steps from the first walk, each
family's own step, the classifier, cross-attention or the next token, from the walk that has it).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class CodeSpan:
    """Lines of a source file, as the file holds them now."""

    path: str  # relative to the repository root: "transformer/attention.py"
    start: int  # the first line, counted from 1 as editors count
    end: int  # the last line, included
    text: str  # the file's lines start..end
    shapes: str = ""  # the tensors' shapes on this input: "x (1, 9, 128) -> q (1, 4, 9, 32)"


@dataclass(frozen=True)
class Check:
    """A step computed in the open against the model's own number at its hook point."""

    what: str  # "softmax(Q K^T / sqrt(d)) from blocks.0.hook_resid_pre vs blocks.0.attn.hook_pattern"
    difference: float  # the largest |difference|, divided by `scale`
    # the largest |value| compared where it is above 1, else 1: float32 holds about 7 digits, so values in the hundreds
    # (a feed-forward's output, a large model's residual stream) differ by 1e-5 from any other way of summing them
    scale: float = 1.0


@dataclass(frozen=True)
class Step:
    """One stage of the path, on one model and one input."""

    key: str  # stable: "tokens", "plain_attention", "qkv", "scaling", "masks", "multi_head", "positions", ...
    title: str
    text: str  # at most 120 words, plain
    part: str  # the part of the model map it highlights: "tokens", "embed", "positions", "attention", "heads", ...
    model: str  # the model it was computed on, as the app names it
    labels: tuple[str, ...]  # the tokens, as axis labels
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)  # the figure's numbers, keys documented per step
    code: CodeSpan | None = None
    check: Check | None = None


@dataclass(frozen=True)
class ModelMap:
    """The model drawn from its config, with its real sizes."""

    family: str  # "encoder", "encoder-decoder", "decoder"
    n_layers: int  # the encoder's for an encoder-decoder
    n_heads: int
    n_kv_heads: int
    d_model: int
    d_ff: int
    vocab: int
    positions: str  # "learned", "sinusoidal", "rotary"
    norm: str  # "pre-norm LayerNorm", "post-norm LayerNorm", "pre-norm RMSNorm"
    output: str  # "mean pooling -> classifier (2 labels)", "unembedding -> softmax over 8,000 tokens"
    n_decoder_layers: int = 0  # an encoder-decoder's decoder


@dataclass(frozen=True)
class Walk:
    """Every step a model's family has, on one input."""

    model: str
    text: str
    map: ModelMap
    steps: tuple[Step, ...]
