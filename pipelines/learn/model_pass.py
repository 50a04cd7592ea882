"""One pass of a model over the visitor's input, with every hook point the steps read cached, and what the steps
need to know of the stack they walk (its blocks, its positions, its norms): every step is derived from this."""

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from pipelines.learn.walk import Step

MAX_TOKENS = 32  # the tokens a walk reads: every map fits a figure of a few hundred cells, every number a screen


@dataclass(frozen=True)
class Stack:
    """The self-attention stack the general steps walk: the classifier's and the translator's encoder, the language
    model's blocks. `prefix` names its hook points ("" or "encoder.")."""

    prefix: str
    blocks: nn.ModuleList
    positions: str  # "learned", "sinusoidal" or "rotary"
    table: torch.Tensor | None  # (max_len, D) the position vectors added to the tokens (None: rotary)
    scale: float  # the token vectors are multiplied by it before positions are added
    embed_norm: nn.Module  # a LayerNorm over tokens + positions (BERT), else nn.Identity
    causal: bool  # each position reads itself and the positions before it only
    norm_first: bool  # pre-norm (the norm before each sublayer) or post-norm (after the sum)
    final_norm: nn.Module  # nn.Identity for a post-norm stack

    def point(self, layer: int, name: str) -> str:
        """A block's hook point: point(0, "hook_resid_pre"), point(0, "attn.hook_q")."""
        return f"{self.prefix}blocks.{layer}.{name}"

    @property
    def embed_point(self) -> str:
        return f"{self.prefix}hook_embed"

    @property
    def final_point(self) -> str:
        return f"{self.prefix}hook_final"


@dataclass(frozen=True)
class Read:
    """The input as the model reads it: its ids, their labels, and what a family adds (the translator's output)."""

    ids: list[int]
    tokens: list[str]
    extra: Mapping[str, object] = field(default_factory=dict)
    cut: bool = False  # the text had more than MAX_TOKENS tokens: the first ones are read


@dataclass(frozen=True)
class Pass:
    """The cached pass every step reads."""

    family: object  # the Family (families.py)
    pipe: object
    model: nn.Module
    stack: Stack
    ids: torch.Tensor  # (1, T) what the stack reads
    labels: tuple[str, ...]  # "i:token", unique axis labels
    tok: torch.Tensor  # (1, T, D) the token vectors (embedding rows, plus hashed n-grams), before scale and positions
    cache: Mapping[str, torch.Tensor]
    output: object  # the model's own output on this input
    name: str  # the model, as the app names it
    read: Read

    def at(self, name: str) -> torch.Tensor:
        """The cached activation `name` of the one input (batch row 0)."""
        return self.cache[name][0]

    def step(self, key: str, **fields) -> Step:
        return Step(key=key, model=self.name, labels=fields.pop("labels", self.labels), **fields)

    def hooked(self, hooks, ids: torch.Tensor | None = None, lengths: list[int] | None = None, model=None):
        """The output of the model (or of `model`, one of its training snapshots) on ids (default: this input) with
        `hooks` at their points (transformer/hooks.py); None when a hook ended the pass early (Enough)."""
        model = self.model if model is None else model
        try:
            with model.hook_registry.hooks(hooks), torch.no_grad():
                return self.family.forward(model, self.read, self.ids if ids is None else ids, lengths)
        except Enough:
            return None


class Enough(Exception):
    """Raised by a hook that has what its pass was run for: the rest of the model need not run."""


def keeper(cache: dict, stop: bool = False):
    """A hook that keeps what passes its point in `cache` (and changes nothing); stop: then ends the pass (Enough)."""

    def keep(x: torch.Tensor, name: str) -> None:
        cache[name] = x.detach()
        if stop:
            raise Enough(name)

    return keep


def labels(tokens: list[str]) -> tuple[str, ...]:
    """Unique axis labels "i:token" (plotly merges repeated category labels)."""
    return tuple(f"{i}:{' '.join(t.split()) or '␣'}" for i, t in enumerate(tokens))


def numpy(t: torch.Tensor) -> np.ndarray:
    """A tensor as float32 numpy, for a step's arrays."""
    return t.detach().float().cpu().numpy()


def cached_points(name: str) -> bool:
    """Every hook point but hook_result (each head's output through W_O, made only when asked: D times hook_z)."""
    return not name.endswith("hook_result")
