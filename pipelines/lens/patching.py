"""Activation patching (Meng et al. 2022; Wang et al. 2022): run the model on a corrupted input, put back one piece of
the clean run (a block's input at one position, one head's output), and see how much of the clean answer returns.

The metric is the logit difference between the clean answer and the corrupted one, normalised so that 0 is the
corrupted run and 1 the clean one. `exact=True` runs the model once a cell (batched: one pass a layer, a row a cell);
`exact=False` is attribution patching (Nanda 2023): one forward and one backward on the corrupted input, each cell the
first-order estimate (clean - corrupted) . d metric / d state. Everything is read and replaced through the core's hook
points (transformer/hooks.py), on the stack the task answers from (readout.py).
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from pipelines.lens.readout import Readout

OVER = {"resid": "hook_resid_pre", "attn_out": "hook_attn_out", "mlp_out": "hook_mlp_out", "heads": "attn.hook_z"}


@dataclass(frozen=True)
class Patching:
    """The normalised metric with each cell's state patched in from the clean run."""

    grid: np.ndarray  # (rows, columns): 0 = the corrupted run, 1 = the clean one
    rows: list[str]  # the layers
    columns: list[str]  # the positions' tokens (over a stream) or the heads
    clean: float  # the clean run's logit difference (clean answer - corrupted answer)
    corrupted: float  # the corrupted run's
    over: str
    exact: bool
    aligned: bool = True  # the two inputs have the same length (positions line up)
    note: str = ""


@dataclass(frozen=True)
class Runner:
    """One task's side of patching: run(ids, hooks) -> the answer's logits (B, V) from a batch of ids (B, T), and
    the stack whose points are patched (readout.py: their names)."""

    run: Callable[[torch.Tensor, list], torch.Tensor]
    stack: Readout
    # run_from(layer, resid (B, T, D), ids (B, T), hooks): the answer's logits from block `layer`'s input on, the
    # blocks below not run again (as the head table does); None: every cell runs the whole model
    run_from: Callable | None = None
    inputs: list | None = None  # each block's input on the corrupted ids (1, T, D), where run_from is used

    @property
    def n_layers(self) -> int:
        return len(self.stack.blocks)

    @property
    def n_heads(self) -> int:
        return self.stack.blocks[0].attn.n_heads

    def points(self, name: str) -> list[str]:
        """Point `name` ("hook_resid_pre", "attn.hook_z", ...) of every block of the stack."""
        return [self.stack.point(i, name) for i in range(self.n_layers)]


def _cache(runner: Runner, ids: torch.Tensor, names: list[str], grad: bool = False):
    cache = {}

    def keep(x, name):
        cache[name] = x if grad else x.detach()

    with torch.set_grad_enabled(grad):
        logits = runner.run(ids, [(n, keep) for n in names])
    return logits, cache


def patch(
    runner: Runner,
    clean: torch.Tensor,
    corrupted: torch.Tensor,
    clean_answer: int,
    corrupted_answer: int,
    over: str = "resid",
    exact: bool = True,
    tokens: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
    stop: Callable[[], bool] | None = None,
    last_only: bool = False,
    said: str = "",
) -> Patching:
    """Patch each cell of `over` from the clean ids (1, T) into the corrupted ids (1, T'). Positions are patched only
    where the inputs have the same length; heads are patched at every position then (unless last_only), else at the
    last one. said: what the note says first (what the metric compares)."""
    if over not in OVER:
        raise ValueError(f"over must be one of {sorted(OVER)}, got {over!r}")
    same_length = clean.size(1) == corrupted.size(1)
    aligned = same_length and not (last_only and over == "heads")  # every position patched (else the last only)
    if over != "heads" and not same_length:
        raise ValueError(
            f"the two inputs have {clean.size(1)} and {corrupted.size(1)} tokens: a position of one is no position of "
            "the other, so states are patched by position only between inputs of one length (heads need no alignment)"
        )
    names = runner.points(OVER[over])
    if exact and runner.run_from is not None:  # what each block read on the corrupted input: the runs start there
        names_in = runner.points("hook_resid_pre")
        _, corrupted_inputs = _cache(runner, corrupted, names_in)
        runner = dataclasses.replace(runner, inputs=[corrupted_inputs[n] for n in names_in])
    diff = lambda logits: logits[:, clean_answer] - logits[:, corrupted_answer]  # noqa: E731  (B,)
    clean_logits, clean_cache = _cache(runner, clean, names)
    base = float(diff(clean_logits)[0])
    if exact:
        with torch.no_grad():
            low = float(diff(runner.run(corrupted, []))[0])
        grid = _exact(runner, corrupted, clean_cache, names, over, aligned, diff, progress, stop) - low
    else:  # its forward on the corrupted ids is the corrupted run
        grid, low = _attribution(runner, corrupted, clean_cache, names, over, aligned, diff)
    scale = base - low if abs(base - low) > 1e-9 else float("nan")
    grid = grid / scale
    T = corrupted.size(1)
    columns = [f"h{h}" for h in range(runner.n_heads)] if over == "heads" else (tokens or [str(i) for i in range(T)])
    rows = [f"layer {i}" for i in range(runner.n_layers)]
    why = "." if same_length else ": the inputs differ in length."
    last = "" if aligned else f"Each head is patched at the last position only{why}"
    note = f"{said} {last}".strip()
    return Patching(grid, rows, columns, base, low, over, exact, aligned, note)


def _patched(name: str, clean: torch.Tensor, cells: list, over: str, aligned: bool):
    """A hook that puts back, in row r, cell cells[r] of the clean state: a position (streams) or a head."""

    def hook(x, hook_name):
        x = x.clone()
        for row, cell in enumerate(cells):
            if over != "heads":
                x[row, cell] = clean[0, cell]
            elif aligned:
                x[row, :, cell] = clean[0, :, cell]
            else:
                x[row, -1, cell] = clean[0, -1, cell]
        return x

    return hook


@torch.no_grad()
def _exact(runner, corrupted, clean_cache, names, over, aligned, diff, progress, stop) -> np.ndarray:
    """(L, cells) the raw metric with each cell patched: one batched pass a layer, a row a cell."""
    cells = list(range(runner.n_heads if over == "heads" else corrupted.size(1)))
    grid = np.full((runner.n_layers, len(cells)), np.nan)
    for layer, name in enumerate(names):
        if stop is not None and stop():
            break
        rows = corrupted.expand(len(cells), -1)  # (N, T)
        hook = _patched(name, clean_cache[name], cells, over, aligned)
        if runner.inputs is not None:  # from the layer's own input on
            resid = runner.inputs[layer].expand(len(cells), -1, -1)  # (N, T, D)
            logits = runner.run_from(layer, resid, rows, [(name, hook)])
        else:
            logits = runner.run(rows, [(name, hook)])
        grid[layer] = diff(logits).float().cpu().numpy()
        if progress is not None:
            progress(layer + 1, runner.n_layers)
    return grid


def _attribution(runner, corrupted, clean_cache, names, over, aligned, diff) -> tuple[np.ndarray, float]:
    """((L, cells) (clean - corrupted) . grad of the metric, the corrupted run's metric), from one forward and one
    backward on the corrupted ids; the raw metric's change, so normalised as exact patching's change from the
    corrupted run."""
    logits, cache = _cache(runner, corrupted, names, grad=True)
    states = [cache[n] for n in names]
    metric = diff(logits)  # (1,)
    grads = torch.autograd.grad(metric.sum(), states)
    rows = []
    for name, state, grad in zip(names, states, grads):
        delta = clean_cache[name].float() - state.detach().float() if aligned else None
        if over == "heads":
            if aligned:
                rows.append((delta * grad.float())[0].sum(dim=(0, 2)))  # (H,): over positions and hs
            else:
                last = clean_cache[name][0, -1].float() - state.detach()[0, -1].float()  # (H, hs)
                rows.append((last * grad[0, -1].float()).sum(-1))
        else:
            rows.append((delta * grad.float())[0].sum(-1))  # (T,)
    return torch.stack(rows).cpu().numpy(), float(metric[0].detach())


@dataclass(frozen=True)
class SwitchedOff:
    """Each head's whole effect on the answer: the metric of the intact run minus that with the head's output
    (hook_z) zeroed at every position, beside its direct part (attribution.py): the difference is what the later
    heads and layers do with that head's output."""

    heads: np.ndarray  # (L, H), in the metric's units (the logit, or the logit difference)
    total: float  # the intact run's metric
    target: str
    contrast: str | None
    cross: np.ndarray | None = None  # (L, H) the decoder's cross-attention heads, where there are


def switch_off(
    runner: Runner, ids: torch.Tensor, target: int, contrast: int | None = None, progress=None, stop=None, attn="attn"
):
    """(L, H) each head switched off alone on ids (1, T): the intact metric (logit of target, minus contrast's)
    minus the switched-off one; one batched pass a layer (a row a head), from each layer's own input where the runner
    can start there. attn: which attention of each block ("cross_attn": the decoder's cross-attention). Rows a Stop
    leaves out are NaN. Returns (grid, the intact metric)."""
    names, names_in = runner.points(f"{attn}.hook_z"), runner.points("hook_resid_pre")
    metric = lambda logits: logits[:, target] - (logits[:, contrast] if contrast is not None else 0.0)  # noqa: E731
    logits, cache = _cache(runner, ids, names + (names_in if runner.run_from is not None else []))
    if runner.run_from is not None:
        runner = dataclasses.replace(runner, inputs=[cache[n] for n in names_in])
    zeros = {n: torch.zeros_like(cache[n]) for n in names}
    intact = float(metric(logits)[0])
    return intact - _exact(runner, ids, zeros, names, "heads", True, metric, progress, stop), intact
