"""The models one tab can show: a name for each, loaded on first use, at most a few kept in memory.

A tab (or any caller) asks the registry for a model by name and gets a pipeline; every consumer of the tab (the
run, the panels, compare, downloads) asks the same registry with the name the run recorded, so they all see the
model the user chose. The first entry is the default (what the API serves) and stays loaded; the others load when
first asked for, and the least recently used is dropped when more than `keep` of them are loaded.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelEntry:
    name: str  # what the model choice shows, e.g. "pre-trained (MiniLM, 6 × 12 heads)"
    source: str  # the folder or Hub repo id it loads from
    note: str = ""  # one sentence on what this model is, shown beside the choice


class ModelRegistry:
    """Named models of one task, loaded lazily by `load(entry)`; `wrap` (e.g. the server's batching stand-in)
    is applied to each pipeline as it loads."""

    def __init__(self, entries: list[ModelEntry], load: Callable, keep: int = 2, wrap: Callable = lambda p: p):
        if not entries:
            raise ValueError("a model registry needs at least one model")
        self.entries = {e.name: e for e in entries}
        self._load, self._wrap, self.keep = load, wrap, keep
        self._loaded: OrderedDict[str, object] = OrderedDict()  # name -> pipeline, least recently used first
        self._lock = threading.Lock()

    @classmethod
    def of(cls, pipeline, name: str = "model") -> "ModelRegistry":
        """A registry of one pipeline that is already loaded."""
        registry = cls([ModelEntry(name, str(getattr(pipeline, "source", "")))], load=None)
        registry.preload({name: pipeline})
        return registry

    def preload(self, pipelines: dict[str, object]) -> None:
        """Pipelines already loaded (and wrapped), by entry name."""
        with self._lock:
            self._loaded.update(pipelines)

    @property
    def names(self) -> list[str]:
        return list(self.entries)

    @property
    def default(self) -> str:
        return self.names[0]

    def name_of(self, name: str | None) -> str:
        """`name` when it is one of ours; the default for None or a name no longer offered (an old share link)."""
        return name if name in self.entries else self.default

    def get(self, name: str | None = None):
        """The pipeline of `name` (the default for None or an unknown name), loading it on first use.
        Loading errors (transformer.CheckpointError and the like) reach the caller."""
        name = self.name_of(name)
        with self._lock:
            if name in self._loaded:
                self._loaded.move_to_end(name)
                return self._loaded[name]
            pipe = self._wrap(self._load(self.entries[name]))
            self._loaded[name] = pipe
            self._evict()
            return pipe

    def _evict(self) -> None:
        """Drop the least recently used models beyond the default and `keep` others."""
        others = [n for n in self._loaded if n != self.default]
        for name in others[: max(0, len(others) - self.keep)]:
            del self._loaded[name]

    def loaded(self) -> list[str]:
        """Names of the models in memory now (least recently used first)."""
        return list(self._loaded)
