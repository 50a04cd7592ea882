"""path(walks): the tutorial's steps laid out from several models' walks: each general step from the first walk,
each family's own step (the classifier, cross-attention, the next token) from the walk of the family it is the main
step of (the next token: the language model's, rather than the translator's first step), else from the first walk
that has it; training from the first walk whose model has snapshots."""

from pipelines.learn.families import FAMILIES
from pipelines.learn.walk import Step, Walk
from pipelines.learn.walking import ORDER, OWN

MAIN = {family.own[0]: family.name for family in FAMILIES.values()}  # a family's first own step is its main one


def _from(walks: list[Walk], key: str, wanted=lambda step: True) -> Step | None:
    """The step `key` of the first walk that has it (and whose step is `wanted`)."""
    return next((s for w in walks for s in w.steps if s.key == key and wanted(s)), None)


def path(walks) -> tuple[Step, ...]:
    """The steps in the tutorial's order from `walks` (the first one's model leads); ValueError without a walk."""
    walks = list(walks)
    if not walks:
        raise ValueError("path needs at least one walk")
    steps = []
    for key in ORDER:
        if key in OWN:
            step = _from([w for w in walks if w.map.family == MAIN.get(key)], key) or _from(walks, key)
        elif key == "training":
            step = _from(walks, key, lambda s: bool(s.arrays)) or _from(walks[:1], key)
        else:
            step = _from(walks[:1], key)
        if step is not None:
            steps.append(step)
    return tuple(steps)
