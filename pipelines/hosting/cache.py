"""Results computed once: a least-recently-used cache of model results, bounded by their estimated bytes.

Every visitor lands on the same worked example of each tab, and a request identical to a recent one (the same model,
the same input and options) gets the same answer: the served pipelines (pipelines.hosting.serving) look here first.
A key names the model (a served pipeline's own number, its source and revision), the method, and every argument
bound to its parameter (defaults filled in), so a call with other options is another key. An argument is part of a
key as its value (strings, numbers, tuples, frozen dataclasses such as a Decoding) or, for a result this cache
holds (a translation the page hands back to explain it), as that result's own key; any other argument (a head mask,
a callback but `progress`, a result no longer here) makes the call uncached.

The budget is bytes: a result's size is estimated from what it holds (tensors and arrays by their bytes, strings by
their length, OBJECT_BYTES for every other object), and putting one in evicts the least recently used until the
total is within the budget; a result larger than the whole budget is not kept. A call identical to one still being
computed waits for that one's result (ResultCache.computed). The app's budget is
pipelines.hosting.budget's `cache` share (64 MB of the 1 GB). Cached results are shared between callers: they are
read, never changed, by the app.
"""

import dataclasses
import inspect
import itertools
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future

import numpy as np
import torch

OBJECT_BYTES = 64  # an estimate for each Python object a result holds besides its tensors, arrays and strings
IGNORED = ("progress",)  # arguments that do not change a result (a callback the page shows progress by)
MISSING = object()
PLAIN = (str, int, float, bool, type(None), bytes)
_MODELS = itertools.count()


def result_bytes(value, seen: set | None = None) -> int:
    """An estimate of the bytes `value` holds: tensors and arrays by their elements, strings by their length, and
    OBJECT_BYTES for every other object, through dataclasses, containers and objects' attributes (each object once)."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        return value.element_size() * value.nelement()
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, str | bytes):
        return OBJECT_BYTES + len(value)
    if isinstance(value, PLAIN):
        return sys.getsizeof(value)
    return OBJECT_BYTES + sum(result_bytes(part, seen) for part in _parts(value))


def _parts(value) -> list:
    """What an object holds, for result_bytes."""
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    if isinstance(value, list | tuple | set | frozenset):
        return list(value)
    if dataclasses.is_dataclass(value):
        return [getattr(value, f.name) for f in dataclasses.fields(value)]
    return list(getattr(value, "__dict__", {}).values())


class ResultCache:
    """Model results by key, least recently used first out once their estimated bytes pass `budget_bytes`."""

    def __init__(self, budget_bytes: int):
        self.budget = budget_bytes
        self._entries: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._keys: dict[int, Hashable] = {}  # id of a cached result -> its key (it stands for the result in keys)
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = self.misses = 0  # for tests and benchmarks
        self._flights: dict[Hashable, Future] = {}  # keys being computed -> their result to come
        self.joined = 0  # calls that waited for an identical one's result

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable):
        """The result kept under `key` (now the most recently used), or MISSING."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return MISSING
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]

    def put(self, key: Hashable, value) -> bool:
        """Keep `value` under `key`, evicting the least recently used until within the budget; False (nothing kept)
        for a value larger than the whole budget."""
        size = result_bytes(value)
        if size > self.budget:
            return False
        with self._lock:
            self._drop(key)
            self._entries[key] = (value, size)
            self._keys[id(value)] = key
            self.bytes += size
            while self.bytes > self.budget:
                self._drop(next(iter(self._entries)))
        return True

    def _drop(self, key: Hashable) -> None:
        """Forget `key`'s entry, if any. Caller holds the lock."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.bytes -= entry[1]
            if self._keys.get(id(entry[0])) == key:
                del self._keys[id(entry[0])]

    def computed(self, key: Hashable, compute: Callable[[], object]):
        """The result kept under `key`, else compute()'s, kept; a call identical to one being computed waits for
        it and gets its result (or its error) instead of computing it again (a crowd landing on one example)."""
        if (hit := self.get(key)) is not MISSING:
            return hit
        with self._lock:
            flight, first = self._flights.get(key), False
            if flight is None:
                flight, first = self._flights.setdefault(key, Future()), True
        if not first:
            self.joined += 1
            return flight.result()
        try:
            result = compute()
            self.put(key, result)
            flight.set_result(result)
            return result
        except BaseException as e:
            flight.set_exception(e)
            raise
        finally:
            with self._lock:
                del self._flights[key]

    def stand_in(self, value) -> Hashable | None:
        """The key of `value` where it is a result this cache holds (the very object), else None."""
        with self._lock:
            key = self._keys.get(id(value))
            return key if key is not None and self._entries.get(key, (None,))[0] is value else None

    def key(self, model: Hashable, method: Callable, args: tuple, kwargs: dict) -> Hashable | None:
        """The key of method(pipe, *args, **kwargs) on `model`: the method's name and its arguments bound to their
        parameters (defaults filled in, IGNORED left out); None when an argument cannot be part of a key."""
        try:
            bound = inspect.signature(method).bind(None, *args, **kwargs)
        except TypeError:  # the call fails as it would without a cache
            return None
        bound.apply_defaults()
        parts = []
        for name, value in list(bound.arguments.items())[1:]:
            if name in IGNORED:
                continue
            part = self._part(value)
            if part is MISSING:
                return None
            parts.append((name, part))
        return model, method.__qualname__, tuple(parts)

    def _part(self, value):
        """`value` as part of a key: itself (plain values, frozen dataclasses of them), tuples for lists, a cached
        result's key; MISSING where it cannot be one."""
        if isinstance(value, PLAIN):
            return value
        if isinstance(value, list | tuple):
            parts = tuple(self._part(v) for v in value)
            return MISSING if any(p is MISSING for p in parts) else parts
        if dataclasses.is_dataclass(value) and value.__dataclass_params__.frozen:
            fields = self._part([getattr(value, f.name) for f in dataclasses.fields(value)])
            return MISSING if fields is MISSING else (type(value).__qualname__, fields)
        key = self.stand_in(value)
        return MISSING if key is None else ("cached", key)


def model_key(pipe) -> Hashable:
    """A served model's part of its keys: a number of its own (two models never share one), its source and
    revision."""
    return next(_MODELS), str(getattr(pipe, "source", None)), str(getattr(pipe, "revision", None))
