"""Activation patching (Meng et al. 2022; Wang et al. 2022): run the model on a corrupted input, put back one piece of
the clean run (a block's input at one position, one head's output), and see how much of the clean answer returns.

The metric is the logit difference between the clean answer and the corrupted one, normalised so that 0 is the
corrupted run and 1 the clean one. `exact=True` runs the model once a cell (batched: one pass a layer, a row a cell);
`exact=False` is attribution patching (Nanda 2023): one forward and one backward on the corrupted input, each cell the
first-order estimate (clean - corrupted) . d metric / d state. Everything is read and replaced through the core's hook
points (transformer/hooks.py), on the stack the task answers from (readout.py). An exact grid's cost is estimated
before it runs, and bounded where asked (cost.py): past the bound, TooCostly names the coarser grids that fit.
"""

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from pipelines.hosting.microbatch import pause_point
from pipelines.lens import cost
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
    cells: list[list[int]] | None = None  # the positions of each column of a coarser grid (None: a column a position)


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
    cells: cost.Cells | None = None,
    max_seconds: float | None = None,
) -> Patching:
    """Patch each cell of `over` from the clean ids (1, T) into the corrupted ids (1, T'). Positions are patched only
    where the inputs have the same length; heads are patched at every position then (unless last_only), else at the
    last one. said: what the note says first (what the metric compares). cells: an exact grid's positions grouped, or
    the last ones only (cost.Cells; None: each position). max_seconds: an exact grid estimated past it is not run:
    cost.TooCostly (None: no bound)."""
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
    diff = lambda logits: logits[:, clean_answer] - logits[:, corrupted_answer]  # noqa: E731  (B,)
    positions = None
    if exact:  # the corrupted run, timed: the grid's cost is known (cost.py) before anything else runs
        low, per_pass = _timed(runner, corrupted, diff)
        n, from_layer = runner.n_heads if over == "heads" else corrupted.size(1), runner.run_from is not None
        positions = cost.bounded(cells, over == "heads", n, runner.n_layers, from_layer, per_pass, max_seconds)
    if exact and runner.run_from is not None:  # what each block read on the corrupted input: the runs start there
        names_in = runner.points("hook_resid_pre")
        _, corrupted_inputs = _cache(runner, corrupted, names_in)
        runner = dataclasses.replace(runner, inputs=[corrupted_inputs[n] for n in names_in])
    clean_logits, clean_cache = _cache(runner, clean, names)
    base = float(diff(clean_logits)[0])
    if exact:
        grid = _exact(runner, corrupted, clean_cache, names, over, aligned, diff, progress, stop, positions) - low
    else:  # its forward on the corrupted ids is the corrupted run
        grid, low = _attribution(runner, corrupted, clean_cache, names, over, aligned, diff)
    scale = base - low if abs(base - low) > 1e-9 else float("nan")
    grid = grid / scale
    T = corrupted.size(1)
    columns = [f"h{h}" for h in range(runner.n_heads)] if over == "heads" else (tokens or [str(i) for i in range(T)])
    if positions is not None:  # a coarser grid: a column a run of positions, named by them
        columns = [f"{p[0]}-{p[-1]}: {''.join(columns[i] for i in p)}" if len(p) > 1 else f"{p[0]}: {columns[p[0]]}"
                   for p in positions]  # fmt: skip
    rows = [f"layer {i}" for i in range(runner.n_layers)]
    why = "." if same_length else ": the inputs differ in length."
    last = "" if aligned else f"Each head is patched at the last position only{why}"
    note = f"{said} {last}".strip()
    return Patching(grid, rows, columns, base, low, over, exact, aligned, note, positions)


@torch.no_grad()
def _timed(runner: Runner, ids: torch.Tensor, diff) -> tuple[float, float]:
    """(the metric of the run on ids (1, T), the seconds that pass took)."""
    start = time.perf_counter()
    metric = float(diff(runner.run(ids, []))[0])
    return metric, time.perf_counter() - start


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
def _exact(runner, corrupted, clean_cache, names, over, aligned, diff, progress, stop, positions=None):
    """(L, cells) the raw metric with each cell patched: a batched pass a layer, a row a cell (a head, a position, or
    the positions of `positions`' each list, patched together), cut after the first layer's in passes estimated
    within cost.PASS_S from the first's time; a pause point before each pass (as a background call, the model's
    waiting calls and decoding steps run there)."""
    cells = positions or list(range(runner.n_heads if over == "heads" else corrupted.size(1)))
    grid = np.full((runner.n_layers, len(cells)), np.nan)
    rate = None  # seconds a row takes through one block, in the first layer's pass
    for layer, name in enumerate(names):
        if stop is not None and stop():
            break
        blocks = runner.n_layers - layer if runner.inputs is not None else runner.n_layers  # the blocks a row runs
        for part in _parts(len(cells), len(cells) if rate is None else cost.rows_within(rate, blocks)):
            pause_point()
            start = time.perf_counter()
            rows = corrupted.expand(len(cells[part]), -1)  # (N, T)
            hook = _patched(name, clean_cache[name], cells[part], over, aligned)
            if runner.inputs is not None:  # from the layer's own input on
                resid = runner.inputs[layer].expand(rows.size(0), -1, -1)  # (N, T, D)
                logits = runner.run_from(layer, resid, rows, [(name, hook)])
            else:
                logits = runner.run(rows, [(name, hook)])
            grid[layer, part] = diff(logits).float().cpu().numpy()
            rate = rate or (time.perf_counter() - start) / (rows.size(0) * blocks)
        if progress is not None:
            progress(layer + 1, runner.n_layers)
    return grid


def _parts(n: int, most: int) -> list[slice]:
    """0..n-1 in the fewest runs of at most `most`, of sizes as even as can be."""
    if n == 0:
        return []
    count = -(-n // max(1, most))
    size = -(-n // count)
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


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
