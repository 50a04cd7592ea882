"""Which models the Learn tab walks: our small from-scratch models first (every head visible at once), the
pre-trained ones one click away. Read from the tabs' own model registries (app.build_demo): a model the app serves
is walked as it is loaded there, never loaded twice.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pipelines.tasks import LM, SENTIMENT, TRANSLATION

# The walks' order (pipelines.learn.path takes the general steps from the first walk, and each family's own step from
# the first walk that has it): the classifier leads (the smallest), the language model's next token comes before the
# translator's (the translator predicts its next English token too, but sampling is the generative model's story)
ORDER = (SENTIMENT.name, LM.name, TRANSLATION.name)
GERMAN_INPUT = frozenset({TRANSLATION.name})  # the tasks that read the German box; the others read the English one
FROM_SCRATCH = "our small models, trained here from scratch"
PRE_TRAINED = "pre-trained models"


@dataclass(frozen=True)
class LearnModel:
    task: str  # the task's name (viz.tasks)
    name: str  # the model's name in that task's registry


@dataclass(frozen=True)
class ModelSet:
    label: str  # what the choice shows
    models: tuple[LearnModel, ...]


def from_scratch(entry) -> bool:
    """A model of our own folders trained from random weights (its metrics.json names no starting point)."""
    return not entry.started and Path(entry.source).is_dir()


def _first(registry, wanted) -> str | None:
    usable = [n for n in registry.names if not registry.entries[n].unavailable]
    return next((n for n in usable if wanted(registry.entries[n])), None)


def model_sets(registries: Mapping[str, object]) -> list[ModelSet]:
    """The choices, from scratch first: for each, the first model of each task's registry of that kind (a task
    whose registry holds none, or whose tab has no model, is left out); a set with no model is not offered."""
    sets = []
    for label, wanted in ((FROM_SCRATCH, from_scratch), (PRE_TRAINED, lambda e: not from_scratch(e))):
        found = [(task, _first(registries[task], wanted)) for task in ORDER if registries.get(task) is not None]
        models = tuple(LearnModel(task, name) for task, name in found if name is not None)
        if models:
            names = ", ".join(m.name for m in models)
            sets.append(ModelSet(f"{label}: {names}", models))
    return sets
