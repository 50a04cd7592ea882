"""The models one tab can show: a name for each, loaded on first use, at most a few kept in memory.

A tab (or any caller) asks the registry for a model by name and gets a pipeline; every consumer of the tab (the
run, the panels, compare, downloads) asks the same registry with the name the run recorded, so they all see the
model the user chose. The first entry is the default (what the API serves) and stays loaded; the others load when
first asked for, and the least recently used is dropped when more than `keep` of them are loaded.

A model with training snapshots (pipelines/models/snapshots.py) also has an entry for each, "<model>@step-<N>" with the
snapshot's revision: the training-step slider chooses among them as the model choice chooses among the models, and
they load and leave memory the same way (at most `keep` besides the default).
"""

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from pipelines.models.snapshots import Snapshot, list_snapshots

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelEntry:
    name: str  # what the model choice shows, e.g. "pre-trained (MiniLM, 6 × 12 heads)"
    source: str  # the folder or Hub repo id it loads from
    note: str = ""  # one sentence on what this model is, shown beside the choice
    snapshot: Snapshot | None = None  # a training snapshot of the model `of` (None: the model itself)
    of: str | None = None  # the name of the model this is a snapshot of
    started: str = ""  # what its training started from, in words ("": random weights); step 0 of its snapshots
    unavailable: str = ""  # why it cannot load here, in one line beside the choice (a Hub model offline); "": it can

    @property
    def revision(self) -> str | None:
        """What to load of `source`: the snapshot's revision ("step-<N>"), None for the model itself."""
        return self.snapshot.revision if self.snapshot is not None else None


def snapshot_name(model: str, snapshot: Snapshot) -> str:
    """The registry name of one snapshot of `model`: "<model>@step-<N>"."""
    return f"{model}@{snapshot.revision}"


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

    def add_snapshots(self, lister: Callable | None = None) -> "ModelRegistry":
        """An entry for each training snapshot of each model (lister(source) -> [Snapshot], by default
        pipelines.models.snapshots.list_snapshots); a model whose snapshots cannot be listed (an unreachable Hub repo)
        gets none. Returns self."""
        lister = lister or list_snapshots
        for model in self.names:
            entry = self.entries[model]
            try:  # a single file (a GGUF model) has no snapshots to list
                snapshots = lister(entry.source) if entry.source and not os.path.isfile(entry.source) else []
            except Exception as e:  # no slider for this model; it still works
                log.warning("the snapshots of %s could not be listed: %s", entry.source, e)
                snapshots = []
            for snap in snapshots:
                name = snapshot_name(model, snap)
                # no note: the model's (its heads' roles, its scores) was measured on the trained model
                self.entries[name] = ModelEntry(name, entry.source, snapshot=snap, of=model, started=entry.started)
        return self

    @property
    def names(self) -> list[str]:
        """The models themselves (what the model choice offers), without their snapshots."""
        return [n for n, e in self.entries.items() if e.snapshot is None]

    def snapshots(self, name: str | None) -> list[ModelEntry]:
        """The snapshot entries of a model (or of the model a snapshot belongs to), by step; [] without any."""
        model = self.model_of(name)
        found = [e for e in self.entries.values() if e.of == model]
        return sorted(found, key=lambda e: e.snapshot.step)

    def model_of(self, name: str | None) -> str:
        """The model a name belongs to: itself for a model, the model for one of its snapshots."""
        name = self.name_of(name)
        return self.entries[name].of or name

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
