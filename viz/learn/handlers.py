"""The Learn tab's handlers: small functions of the visitor's kept walk. Only `walk_set` runs models (a new input or
model choice); moving between steps, a click on the map and the next-token sliders redraw from what is kept.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from pipelines import learn as library
from pipelines.hosting.cache import ResultCache
from pipelines.hosting.serving import ServedPipeline
from pipelines.learn.walk import ModelMap, Step

from ..inputs import check_text
from ..models.loading import redact_paths
from ..share.links import ViewLink, to_query
from ..tasks import TASKS
from .choices import GERMAN_INPUT, ModelSet

MAX_CHARS = 300  # a sentence or two: every number of a step fits on screen
NO_WALK = "Press “Walk through it” to walk the models through your sentence."
MORE = "The other models are being walked: their steps follow in a moment."
WALK_CACHE_BYTES = 64 * 2**20  # the walks kept for every visitor: the worked example's first of all
EXPIRED = "This page's walk was forgotten (pages keep it for a while): press “Walk through it” again."


@dataclass(frozen=True)
class Learned:
    """What a visitor's page keeps: the path's steps, each model's map by name, and what could not be walked."""

    steps: tuple[Step, ...]
    maps: Mapping[str, ModelMap]  # the model's name (Step.model) -> its map
    notes: tuple[str, ...] = ()  # plain sentences: a model that could not be walked, an input cut short
    links: tuple[tuple[str, str], ...] = ()  # (what it opens, the query of a link to it): each task tab on its input


@dataclass(frozen=True)
class Sampling:
    """The next-token step's live options (draw's options): nothing here runs a model."""

    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0

    def options(self) -> dict:
        return {"temperature": float(self.temperature), "top_p": float(self.top_p), "seed": int(self.seed)}


def _pipeline(served):
    """The pipeline a registry serves, as loaded (the walk reads its model's hook points in this process)."""
    return served.pipe if isinstance(served, ServedPipeline) else served


def _walk_one(registries, model, text: str, cache: ResultCache | None = None):
    """(the model's Walk, None) or (None, why it could not be walked, in a sentence). cache: walks by model and
    text, shared by every visitor (a walk is read, never changed): the preloaded example is walked once, and a
    press while the same walk runs waits for it."""
    try:
        pipe = _pipeline(registries[model.task].get(model.name))
        compute = lambda: library.walk(pipe, text, model.name)  # noqa: E731
        key = (model.task, model.name, id(pipe), text)
        return (cache.computed(key, compute) if cache is not None else compute()), None
    except Exception as e:  # noqa: BLE001 (any model's failure becomes a plain sentence, never a traceback)
        return None, f"{model.name} could not be walked: {redact_paths(f'{type(e).__name__}: {e}')}."


def _checked(raw, what: str) -> tuple[str | None, list[str]]:
    checked = check_text(raw, MAX_CHARS, what)
    return checked.text, [checked.error] if checked.text is None else list(checked.notices)


def walk_set(
    registries, chosen: ModelSet, english: str, german: str, first_only: bool = False, cache: ResultCache | None = None
) -> Learned | str:
    """Walk each model of the set through its input (the translator the German sentence, the others the English
    one) and lay the walks out as one path; a plain message when no model could be walked. first_only: the first
    model alone (its general steps come first on the path: the page shows them while the others are walked).
    cache: the walks kept by model and text (_walk_one)."""
    texts = {False: _checked(english, "sentence"), True: _checked(german, "German sentence")}
    walks, notes, links = [], [], []
    for model in chosen.models[:1] if first_only else chosen.models:
        text, said = texts[model.task in GERMAN_INPUT]
        notes += [n for n in said if n not in notes]
        if text is None:
            continue
        walk, why = _walk_one(registries, model, text, cache)
        walks += [walk] if walk is not None else []
        notes += [why] if why else []
        links += _links(model, text) if walk is not None else []
    if not walks:
        return " ".join(notes) or NO_WALK
    try:
        steps = tuple(library.path(walks))
    except Exception as e:  # noqa: BLE001
        return f"The steps could not be laid out: {redact_paths(f'{type(e).__name__}: {e}')}."
    return Learned(steps, {w.model: w.map for w in walks}, tuple(notes), tuple(links))


def _links(model, text: str) -> list[tuple[str, str]]:
    """Links to the model's task tab on the same input and model: the tab, and its Layer by layer section read."""
    title = TASKS[model.task].tab.title
    return [(f"the {title} tab", to_query(ViewLink(model.task, text, model=model.name))),
            ("its Layer by layer", to_query(ViewLink(model.task, text, model=model.name, layers=True)))]  # fmt: skip


def clamp(k, learned: Learned | None) -> int:
    """A step index within the path (0 without one)."""
    n = len(learned.steps) if learned is not None else 1
    try:
        return min(max(int(k), 0), n - 1)
    except (TypeError, ValueError):
        return 0
