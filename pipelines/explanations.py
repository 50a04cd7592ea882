"""SentimentPipeline.explain: signed token attributions toward the predicted label, and their faithfulness
on the same input. The default method is the benchmark's most faithful one (pipelines/default_methods.json).
"""

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import attribution
from .batching import sorted_batches
from .common import TokenSpan
from .faithfulness import Faithfulness, faithfulness
from .words import word_ids

DEFAULTS_FILE = Path(__file__).with_name("default_methods.json")


def default_method(task: str) -> dict:
    """{'method': name, 'why': one sentence} for 'sentiment' or 'translation', as the benchmark wrote it."""
    return json.loads(DEFAULTS_FILE.read_text())[task]


@dataclass
class SentimentExplanation:
    tokens: list[TokenSpan]  # the tokens the model read (a long review is cut to head + tail)
    scores: np.ndarray  # (T,) float32, signed toward `target`: > 0 supports it, < 0 speaks against it
    target: str  # the label explained (the predicted one unless asked otherwise)
    method: str  # one of attribution.METHODS
    probability: float  # p(target | review)
    words: np.ndarray  # (T,) the word index of each token (pieces of one word share it)
    ids: list[int]  # the token ids read, to score faithfulness without tokenizing again
    seconds: float  # time to compute the scores
    steps: int | None = None  # integrated gradients: interpolation steps
    delta: float | None = None  # integrated gradients: convergence delta (completeness error)

    @property
    def signed(self) -> bool:
        return self.method not in ("attention", "rollout")


@dataclass
class FaithfulnessReport:
    method: Faithfulness  # this explanation's ranking
    random: Faithfulness  # the mean of random rankings of the same tokens
    seconds: float


def target_probs(pipe, batch: list[list[int]], target: int, batch_size: int = 64) -> np.ndarray:
    """(N,) p(target) for many id lists (an empty list reads as one padding token), batched by length."""
    pad = pipe.adapter.pad_id
    ids = [seq or [pad] for seq in batch]
    out = np.zeros(len(ids), dtype=np.float64)
    with torch.no_grad():
        for rows, x in sorted_batches(ids, batch_size, pad):
            out[rows] = pipe.adapter.forward(x).logits.softmax(-1)[:, target].double().numpy()
    return out


def explain_review(pipe, text: str, method: str | None = None, target: str | None = None) -> SentimentExplanation:
    """Attribution of each token read toward `target` (default: the predicted label) by `method`."""
    method = method or default_method("sentiment")["method"]
    if method not in attribution.METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(attribution.METHODS)}")
    ids, toks, _ = pipe.encode(text)
    if not ids:
        raise ValueError("the text has no tokens")
    x = torch.tensor([ids])
    with torch.no_grad():
        probs = pipe.adapter.forward(x).logits[0].softmax(-1)
    t = int(probs.argmax()) if target is None else pipe.labels.index(target)
    words = word_ids(toks)
    start = time.perf_counter()
    attr = attribution.attribute(pipe.adapter, x, t, method, words)
    return SentimentExplanation(
        tokens=toks,
        scores=attr.scores,
        target=pipe.labels[t],
        method=method,
        probability=float(probs[t]),
        words=words,
        ids=ids,
        seconds=time.perf_counter() - start,
        steps=attr.steps,
        delta=attr.delta,
    )


def review_faithfulness(pipe, explanation: SentimentExplanation, seed: int = 0) -> FaithfulnessReport:
    """Comprehensiveness and sufficiency of the explanation's ranking and of random rankings, on its input."""
    start = time.perf_counter()
    t = pipe.labels.index(explanation.target)
    ours, rand = faithfulness(lambda b: target_probs(pipe, b, t), explanation.ids, explanation.scores, seed)
    return FaithfulnessReport(ours, rand, time.perf_counter() - start)
