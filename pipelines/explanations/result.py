"""One explanation result for every task and method."""

from dataclasses import dataclass, field

import numpy as np

from pipelines.explanations.registry import EXPLAINS
from pipelines.text import TokenSpan


@dataclass
class Explanation:
    """Which input tokens drove each output. A classifier has one output (the label explained), so `scores` is
    (T,); a translator has one output per produced token, so `scores` is (Tt, Ts), row t = step t. A language
    model's is one next token (at step at_step): `scores` (T,) over the prompt's tokens as read, `prefix_scores`
    (at_step,) over the tokens it generated before that step (the rest of what it read)."""

    task: str  # the task explained (pipelines.tasks names the tasks; registry.EXPLAINS says what its explanation is)
    method: str  # a registered method's name (pipelines.explanations.registry)
    signed: bool  # True: > 0 supports the output, < 0 speaks against it; False: a weight >= 0
    tokens: list[TokenSpan]  # the input tokens scored (a review as read; German subwords with '</s>' last)
    ids: list[int]  # their ids, to measure faithfulness without tokenizing again
    outputs: list[str]  # what is explained: [the label], or the produced tokens, one per step
    output_ids: list[int]  # [label index], or the produced token ids
    scores: np.ndarray  # (T,) or (Tt, Ts) float32
    seconds: float  # time to compute the scores
    n_prefix: int = 0  # special tokens at the start of `tokens` ([CLS]: never ranked for faithfulness)
    n_suffix: int = 0  # special tokens at the end ([SEP])
    probability: float | None = None  # classifier: p(target | review), calibrated; language model: p(token | context)
    words: np.ndarray | None = None  # classifier: (T,) the word index of each token
    prefix_scores: np.ndarray | None = None  # translator: (Tt, Tt) to <s> and earlier outputs (column j = input j);
    # language model: (at_step,) to the tokens generated before the step explained
    prefix_ids: list[int] = field(default_factory=list)  # language model: those generated tokens' ids
    at_step: int | None = None  # language model: the step explained (0 = the first token after the prompt)
    head_agreement: np.ndarray | None = None  # translator: (L, H) each cross head's rank corr. with |scores|
    translation: str = ""
    contrast: dict[int, str] = field(default_factory=dict)  # step (0-based) -> the alternative explained against
    # step -> an alternative asked for but not explained against: the method reads attention (registry.contrastive)
    contrast_not_applied: dict[int, str] = field(default_factory=dict)
    contrast_id: int | None = None  # language model: the token explained against (its faithfulness reads it too)
    steps: int | None = None  # integrated gradients: interpolation steps
    delta: float | None = None  # classifier, language model, integrated gradients: convergence delta
    deltas: np.ndarray | None = None  # translator, integrated gradients: (Tt,) convergence delta per step

    def as_dict(self) -> dict:
        """The fields under the names of the explained task (what a download holds: registry.Explains.exported)."""
        common = {"method": self.method, "signed": self.signed, "scores": self.scores, "seconds": self.seconds}
        return common | {name: getattr(self, attr) for name, attr in EXPLAINS[self.task].exported.items()}

    # The names each task's views use.
    target = property(lambda self: self.outputs[0])  # a classifier's: the label explained; a language model's token
    source_tokens = property(lambda self: self.tokens)  # a translator's
    target_tokens = property(lambda self: self.outputs)
    src_ids = property(lambda self: self.ids)
    produced = property(lambda self: self.output_ids)
