"""Named hook points: every activation of a model has a name, one call caches the ones asked for, one call replaces any
of them. The names are TransformerLens's (`blocks.3.attn.hook_pattern`), on all three families of this package.

A `HookPoint` is a plain callable, not a module: the forward passes each activation through it, and with nothing
active it returns its input after one attribute read, so the ordinary forward costs what it did without hooks.
What is active lives in a context variable of the model's `HookRegistry` (contextvars, as the batcher's client and
pause state do): a hook set in one context never runs in another context's pass over the same model. Each thread
starts in a context of its own, so one thread's hooks never reach another's (the app serves several visitors from
one model), and a call the batcher serves at a background analysis's pause point runs in a fresh context, so the
hooks that analysis had set when it paused do not reach it (pipelines.hosting.microbatch). A copy of a context
(contextvars.copy_context) carries the hooks active when it was made.

    logits, cache = model.run_with_cache(ids, names=["blocks.0.attn.hook_pattern"])
    logits = model.run_with_hooks(ids, hooks=[("blocks.0.hook_resid_pre", lambda x, name: x * 0)])

A hook is `fn(value, name)`; it returns None (keep the value) or a tensor of the same shape, which the rest of the
pass then uses. Shapes, in TransformerLens's layout: hook_q (B, T, H, hs), hook_k and hook_v (B, T, Hkv, hs) (after
rotation where there is one), hook_pattern (B, H, Tq, Tk), hook_z (B, T, H, hs), hook_result (B, T, H, D),
hook_attn_out / hook_mlp_out / hook_resid_* (B, T, D), mlp.hook_post (B, T, d_ff).
"""

from collections.abc import Callable, Iterable
from contextlib import contextmanager
from contextvars import ContextVar

import torch

HookFn = Callable[[torch.Tensor, str], torch.Tensor | None]
Names = Iterable[str] | Callable[[str], bool] | None


class HookRegistry:
    """The hook points of one model, by name, and the hooks active in the calling context."""

    def __init__(self):
        self.points: dict[str, HookPoint] = {}
        self._active: ContextVar[dict[str, list[HookFn]] | None] = _active_var()

    def __getstate__(self) -> dict:  # copies and pickles (a model deep-copied for weight averaging) start hook-free
        return {"points": self.points}

    def __setstate__(self, state: dict) -> None:
        self.points, self._active = state["points"], _active_var()

    def active(self) -> dict[str, list[HookFn]] | None:
        """{name: hooks} active in this context, None when none is."""
        return self._active.get()

    def bind(self, root: torch.nn.Module, strip: str = "") -> "HookRegistry":
        """Name every HookPoint attribute of root's modules by its module's path (`strip` taken off its front) and
        register it here; a point met twice (a shared module) is an error."""
        for path, module in root.named_modules():
            for attr, point in vars(module).items():
                if isinstance(point, HookPoint):
                    name = f"{path}.{attr}" if path else attr
                    name = name.removeprefix(strip)
                    if name in self.points:
                        raise ValueError(f"two hook points named {name!r}")
                    point.name, point.registry = name, self
                    self.points[name] = point
        return self

    def select(self, names: Names) -> list[str]:
        """The point names that `names` asks for (all of them for None); an unknown name is a KeyError."""
        if names is None:
            return list(self.points)
        if callable(names):
            return [n for n in self.points if names(n)]
        names = [names] if isinstance(names, str) else list(names)
        unknown = [n for n in names if n not in self.points]
        if unknown:
            raise KeyError(f"no hook point named {unknown[0]!r} (there are {len(self.points)}: e.g. {self.example()})")
        return names

    def example(self) -> str:
        return ", ".join(list(self.points)[:3])

    @contextmanager
    def hooks(self, hooks: Iterable[tuple[str, HookFn]]):
        """Inside: each (name, fn) runs at its point, in this context only; the ones active before are kept."""
        before = self.active()
        active = {name: list(fns) for name, fns in (before or {}).items()}
        for name, fn in hooks:
            for n in self.select(name if callable(name) else [name]):
                active.setdefault(n, []).append(fn)
        token = self._active.set(active)
        try:
            yield
        finally:
            self._active.reset(token)


def _active_var() -> ContextVar:
    """A registry's own variable: each model's hooks are its own."""
    return ContextVar("hooks", default=None)


class HookPoint:
    """One named activation: `point(x)` is x, or what the active hooks make of it."""

    __slots__ = ("name", "registry")

    def __init__(self, name: str = "", registry: HookRegistry | None = None):
        self.name, self.registry = name, registry  # named and registered when the model binds its points

    @property
    def hooks_on(self) -> bool:
        """Whether any hook of this point's model is active in this context: with none, a module may skip its points
        (and the views they read) altogether, as the plain forward does."""
        return self.registry is not None and self.registry.active() is not None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        active = self.registry.active() if self.registry is not None else None
        if not active or self.name not in active:
            return x
        for fn in active[self.name]:
            out = fn(x, self.name)
            if out is not None:
                if out.shape != x.shape:
                    raise ValueError(f"a hook on {self.name} returned {tuple(out.shape)}, not {tuple(x.shape)}")
                x = out
        return x

    @property
    def wanted(self) -> bool:
        """Whether a hook is active here in this context: for what is computed only when asked (hook_result,
        hook_pattern's explicit weights)."""
        active = self.registry.active() if self.registry is not None else None
        return bool(active) and self.name in active


class Hooked:
    """Mixed into a model with a `hook_registry`: TransformerLens's calls over its named points."""

    hook_registry: HookRegistry

    @property
    def hook_points(self) -> dict[str, HookPoint]:
        """{name: HookPoint}, in the order the forward reaches them."""
        return self.hook_registry.points

    def run_with_hooks(self, *args, hooks: Iterable[tuple[str, HookFn]] = (), **kwargs):
        """self(*args, **kwargs) with each (name, fn) of `hooks` at its point: fn(value, name) -> None or a
        replacement. A name may be a predicate over names."""
        with self.hook_registry.hooks(hooks):
            return self(*args, **kwargs)

    def run_with_cache(self, *args, names: Names = None, detach: bool = True, **kwargs):
        """(self(*args, **kwargs), {name: activation}) for the points `names` asks for (a list or a predicate over
        names; None: every point). detach=False keeps the graph, for gradients through cached values."""
        cache: dict[str, torch.Tensor] = {}

        def keep(x, name):
            cache[name] = x.detach() if detach else x

        with self.hook_registry.hooks((n, keep) for n in self.hook_registry.select(names)):
            out = self(*args, **kwargs)
        return out, cache
