"""The next token's sampling, redrawn without the model: the probabilities at a temperature, the nucleus of top-p,
the entropy and one token drawn with a seed, from a step's logits (pure numpy). The same rule as
transformer.generation.next_token: temperature 0 is greedy; a token stays in the nucleus when the tokens before it
(most likely first) fall short of top_p."""

from dataclasses import dataclass

import numpy as np

from pipelines.learn.open_math import entropy, softmax


@dataclass(frozen=True)
class SampleView:
    raw: np.ndarray  # (K,) softmax(logits): the probabilities at temperature 1
    scaled: np.ndarray  # (K,) softmax(logits / temperature) (temperature 0: all on the most likely)
    kept: np.ndarray  # (K,) bool: in the nucleus (the smallest set of likeliest tokens whose mass reaches top_p)
    nucleus: np.ndarray  # (K,) scaled within the nucleus, renormalised: what the sample is drawn from
    cut: int  # the tokens kept
    entropy_raw: float  # nats
    entropy: float  # of scaled, nats
    token: int  # the index (into logits) drawn with the seed
    temperature: float
    top_p: float
    seed: int


def sample_view(logits, temperature: float = 1.0, top_p: float = 1.0, seed: int = 0) -> SampleView:
    """logits (K,) (a next-token step's "logits", most likely first or not) -> SampleView. ValueError for no logits,
    a negative temperature or top_p outside (0, 1]."""
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 1 or logits.size == 0:
        raise ValueError("sample_view needs a non-empty vector of logits")
    if temperature < 0 or not 0 < top_p <= 1:
        raise ValueError(f"temperature must be >= 0 and top_p in (0, 1]; got {temperature}, {top_p}")
    raw = softmax(logits)
    if temperature == 0:
        scaled = np.eye(logits.size)[int(np.argmax(logits))]
    else:
        scaled = softmax(logits / temperature)
    order = np.argsort(-scaled, kind="stable")
    before = np.cumsum(scaled[order]) - scaled[order]  # the mass of the likelier tokens
    kept = np.zeros(logits.size, dtype=bool)
    kept[order[before < top_p]] = True
    nucleus = np.where(kept, scaled, 0.0)
    nucleus = nucleus / nucleus.sum()
    token = int(np.random.default_rng(seed).choice(logits.size, p=nucleus))
    return SampleView(raw, scaled, kept, nucleus, int(kept.sum()), float(entropy(raw)), float(entropy(scaled)), token,
                      float(temperature), float(top_p), int(seed))  # fmt: skip
