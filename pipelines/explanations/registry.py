"""The one registry of explanation methods: name -> class (its label, whether it is signed, how it attributes).

Adding a method is adding one registered class (see methods.py): the app's choices, the pipelines' `explain`
and `explanation_methods`, and the faithfulness benchmark all read this registry. A method serves a task when
it implements that task's function: `review` (a classifier's label), `steps` (every step of a translation) or
`next_token` (one token a language model may produce next).
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

DEFAULTS_FILE = Path(__file__).with_name("default_methods.json")


@dataclass(frozen=True)
class Explains:
    """What one task's explanation is: the Method function that computes it, the names a download gives its fields.
    The task is named here, not read from pipelines.tasks, which sits above this package (its pipelines explain)."""

    task: str  # a pipelines.tasks name
    function: str  # the Method function a method implements to serve the task
    exported: dict[str, str]  # {the name in the file: the Explanation field or property}, in order


_SHARED = ("steps", "delta")  # integrated gradients: interpolation steps, convergence delta
REVIEW = Explains("sentiment", "review", {n: n for n in ("tokens", "ids", "target", "probability", "words", *_SHARED)})
STEPS = Explains(
    "translation",
    "steps",
    {
        "source_tokens": "tokens",
        "target_tokens": "outputs",
        "src_ids": "ids",
        "produced": "output_ids",
        **{n: n for n in ("prefix_scores", "head_agreement", "translation", "contrast", "steps", "deltas")},
    },
)
NEXT_TOKEN = Explains(
    "lm",
    "next_token",
    {
        "prompt_tokens": "tokens",
        "prompt_ids": "ids",
        **{n: n for n in ("target", "at_step", "probability", "prefix_ids", "prefix_scores", "words", *_SHARED)},
    },
)
EXPLAINS: dict[str, Explains] = {e.task: e for e in (REVIEW, STEPS, NEXT_TOKEN)}  # task name -> its explanation


@dataclass
class Attribution:
    """What a method returns: scores over the input tokens, and how they were computed."""

    scores: np.ndarray  # review, next_token: (T,) toward the target; steps: (Tt, Ts), one row per produced token
    prefix: np.ndarray | None = None  # steps: (Tt, Tt) to <s> and the earlier outputs (column j = input j)
    steps: int | None = None  # integrated gradients: interpolation steps
    delta: float | None = None  # review, next_token: convergence delta (completeness error)
    deltas: np.ndarray | None = None  # steps: (Tt,) convergence delta of each step


class Method:
    """One explanation method. Subclasses set the class attributes and implement `review` and/or `steps`."""

    name: ClassVar[str]
    label: ClassVar[str]  # shown in the app
    function_labels: ClassVar[dict[str, str]] = {}  # a different label where it serves a function: {"steps": ...}
    signed: ClassVar[bool]  # True: + supports, - speaks against; False: a weight >= 0 (where the model looks)
    # explains an output against an alternative (steps: alts; next_token: contrast); attention cannot
    contrastive: ClassVar[bool] = False

    def review(self, adapter, ids, target: int, words: np.ndarray, progress=None) -> Attribution:
        """ids (1, T) of a classifier adapter -> (T,) scores toward label index `target`; words (T,) word ids;
        progress(done, total) as a slow method goes (a method may leave this parameter out)."""
        raise NotImplementedError

    def steps(
        self, adapter, src, tgt_in, produced: list[int], alts: list[int], cross: list[np.ndarray], progress=None
    ) -> Attribution:
        """src (1, Ts), tgt_in (1, Tt) = <s> + produced[:-1]; alts[t] >= 0 makes step t contrastive (log p(tok)
        - log p(alt)); cross: per layer (H, Tt, Ts) cross-attention of this output -> (Tt, Ts) scores;
        progress(steps done, steps) as a slow method goes (a method may leave this parameter out)."""
        raise NotImplementedError

    def next_token(self, adapter, ids, target: int, words: np.ndarray, progress=None) -> Attribution:
        """ids (1, T) of a language-model adapter (the context: prompt and the tokens generated before the step)
        -> (T,) scores toward the next token `target`, its log-probability after the last position; words (T,)
        word ids; progress(done, total) as a slow method goes (a method may leave this parameter out). A
        contrastive method also takes contrast=id: the scores toward log p(target) - log p(contrast)."""
        raise NotImplementedError

    def next_tokens(self, adapter, ids, positions: list[int], targets: list[int]) -> list[Attribution] | None:
        """Several next tokens of one sequence ids (1, T) at once: targets[i] after position positions[i], each over
        ids[:, : positions[i] + 1] (a causal model: what it had read then); None where the method has no such
        batched form (every generated token attributed then explains each step alone)."""
        return None

    @classmethod
    def serves(cls, task: str) -> bool:
        fn = EXPLAINS[task].function
        return getattr(cls, fn) is not getattr(Method, fn)

    @classmethod
    def label_for(cls, task: str) -> str:
        return cls.function_labels.get(EXPLAINS[task].function, cls.label)


_METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: make a method available by its name (a later class of the same name replaces it)."""
    _METHODS[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    _METHODS.pop(name, None)


def names(task: str) -> tuple[str, ...]:
    """The methods that serve a task, in registration order."""
    return tuple(n for n, cls in _METHODS.items() if cls.serves(task))


def get(task: str, name: str | None) -> Method:
    """The method `name` (None: the task's default) as an instance; ValueError for one that does not serve it."""
    name = name or default_method(task)["method"]
    cls = _METHODS.get(name)
    if cls is None or not cls.serves(task):
        raise ValueError(f"unknown method {name!r}; choose one of {', '.join(names(task))}")
    return cls()


def label(task: str, name: str) -> str:
    cls = _METHODS.get(name)
    return cls.label_for(task) if cls else name


def is_signed(name: str) -> bool:
    cls = _METHODS.get(name)
    return bool(cls and cls.signed)


def choices(task: str, default: str | None = None) -> list[tuple[str, str]]:
    """(label, name) per method of a task, `default` (None: the project's default) marked: for the app's pickers."""
    default = default or default_method(task)["method"]
    return [(label(task, n) + (" (default)" if n == default else ""), n) for n in names(task)]


MODEL_DEFAULT = "explanation_default"  # the key of a model's own measured default in its metrics.json


def default_method(task: str, metrics: dict | None = None) -> dict:
    """{'method': name, 'why': one sentence} for a task ('sentiment', 'translation', 'lm'). metrics: a model's
    metrics.json (None: the project's default, as benchmarks/faithfulness.py wrote it for the bundled model). A model
    whose metrics record a default measured on it (MODEL_DEFAULT) gets that; any other model gets the project's
    method with a 'why' that says it was not measured on this model, never the bundled model's numbers."""
    project = json.loads(DEFAULTS_FILE.read_text())[task]
    if metrics is None:
        return project
    own = metrics.get(MODEL_DEFAULT)
    if isinstance(own, dict) and own.get("method") in _METHODS:
        return {"method": own["method"], "why": str(own.get("why", ""))}
    return {
        "method": project["method"],
        "why": "Its faithfulness has not been measured on this model.",
    }
