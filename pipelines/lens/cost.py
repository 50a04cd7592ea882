"""What an exact patching grid costs, known before it runs, and the coarser grids that fit a bound.

An exact grid (pipelines.lens.patching) runs one batched pass a layer, a row a cell: cells x layers rows in all,
each over the input's tokens, from its layer's own input on where the runner can start there (layer l then runs
L - l of the L blocks: (L + 1) / 2 whole passes a row on average), else through every block. The estimate is that
count of whole one-row passes times the seconds of one, measured on the corrupted input (the pass patching runs
anyway for the corrupted metric, just before the grid). Rows batched together cost less each than a row alone, so
the estimate errs long: 2-3 times for a 15-token pair on SmolLM2, where one row is a small batch of tokens; less for
long inputs, where one row is already a large one (those the bound is for). Past a bound (BOUND_S: about a minute
on a shared 2-core machine, where the exact residual grid of a 235-token pair on SmolLM2 ran past 10 minutes)
`patch` raises TooCostly, which says what the grid would cost and names the coarser grids that fit: the positions
grouped (a cell a run of consecutive positions, patched together) or the last positions only; the page offers them
(viz/compare/patching_panel.py).
"""

import math
from dataclasses import dataclass

BOUND_S = 60.0  # seconds one click's exact grid may be estimated at, at most (the page's bound)
# seconds one pass of an exact grid may last, after its first: its pause points come about this often. Shorter costs
# more: a pass of a few rows of a small model is mostly its fixed cost (on the busy machine, passes cut to 0.5 s made
# SmolLM2's 15-token grid about 1.5 times as long)
PASS_S = 1.0
FITS = ("group", "last")  # Cells.fit: the finest grid of that kind within the bound


@dataclass(frozen=True)
class Cells:
    """Which positions an exact grid over a stream patches, a column a cell: each position alone (group 1), `group`
    consecutive positions together, or the last `last` positions only (None: every one). fit "group" or "last": the
    finest such grid whose estimate is within the bound (a grid of heads has a head a cell whatever this says)."""

    group: int = 1
    last: int | None = None
    fit: str | None = None

    def __post_init__(self):
        if self.group < 1 or (self.last is not None and self.last < 1) or self.fit not in (None, *FITS):
            raise ValueError(f"cells: group >= 1, last >= 1 or None, fit one of {FITS} or None; got {self}")

    def positions(self, T: int) -> list[list[int]]:
        """The positions of each cell over T tokens, in order."""
        first = 0 if self.last is None else max(0, T - self.last)
        return [list(range(s, min(s + self.group, T))) for s in range(first, T, self.group)]


@dataclass(frozen=True)
class GridCost:
    """What an exact grid would cost: its cells a layer, its layers, the whole one-row passes that comes to, and the
    seconds at the measured seconds of one."""

    cells: int
    layers: int
    passes: float
    seconds: float


def estimate(cells: int, layers: int, from_layer: bool, per_pass: float) -> GridCost:
    """The cost of an exact grid of `cells` a layer over `layers` layers, each row run from its layer's input on
    (from_layer) or through every block, at per_pass seconds a whole one-row pass."""
    passes = cells * ((layers + 1) / 2 if from_layer else layers)
    return GridCost(cells, layers, passes, passes * per_pass)


class TooCostly(ValueError):
    """An exact grid estimated past the bound: `cost`, the bound, and `options` (the coarser Cells that fit, each
    with its cost; none for a grid of heads, or where not even one cell a layer fits)."""

    def __init__(self, cost: GridCost, bound: float, options: list[tuple[Cells, GridCost]]):
        self.cost, self.bound, self.options = cost, bound, options
        coarser = " or ".join(f"{described(c)} (about {duration(g.seconds)})" for c, g in options)
        instead = f"patch {coarser}, or read" if options else "read"
        super().__init__(
            f"the exact grid of {cost.cells} cells x {cost.layers} layers would take about {duration(cost.seconds)} "
            f"here ({cost.passes:.0f} passes of the model at {cost.seconds / cost.passes:.2f} s), past the bound of "
            f"{duration(bound)}: {instead} the attribution patching estimate (one forward and one backward pass)"
        )

    def __reduce__(self):  # rebuilt from its parts where it crosses a process (a model's own, hosting/processes.py)
        return TooCostly, (self.cost, self.bound, self.options)


def described(cells: Cells) -> str:
    if cells.last is not None:
        return f"the last {cells.last} positions only"
    return f"the positions in groups of {cells.group}" if cells.group > 1 else "every position"


def duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def coarser(T: int, layers: int, from_layer: bool, per_pass: float, bound: float) -> list[tuple[Cells, GridCost]]:
    """The finest grid of grouped positions and the longest of last positions within `bound`, each with its cost
    (none where one cell a layer does not fit)."""
    one = estimate(1, layers, from_layer, per_pass).seconds
    most = int(min(T, bound // one)) if one > 0 else T
    if most < 1:
        return []
    group = math.ceil(T / most)
    grouped, last = Cells(group=group), Cells(last=most)
    return [(c, estimate(len(c.positions(T)), layers, from_layer, per_pass)) for c in (grouped, last)]


def rows_within(rate: float, blocks: int) -> int:
    """The most rows a pass of an exact grid through `blocks` blocks may take to last about PASS_S, at `rate`
    seconds a row a block (measured on the grid's first pass, a whole layer's rows batched); at least one. The
    parts follow the measured time, so two runs of one grid may batch its rows differently: their cells agree to
    float rounding (about 1e-6)."""
    return max(1, int(PASS_S / max(rate * blocks, 1e-12) + 1e-9))


def bounded(cells: Cells | None, heads: bool, n: int, layers: int, from_layer: bool, per_pass: float,
            bound: float | None) -> list[list[int]] | None:  # fmt: skip
    """The positions of each cell of an exact grid (None: a cell a position, or a head a cell where `heads`) over n
    positions (or n heads), checked against `bound` seconds (None: no bound): TooCostly past it. A Cells with a
    `fit` becomes the finest grid of its kind within the bound."""
    cells = None if heads else cells
    if cells is not None and cells.fit is not None:
        options = coarser(n, layers, from_layer, per_pass, math.inf if bound is None else bound)
        if not options:
            raise TooCostly(estimate(n, layers, from_layer, per_pass), bound, [])
        cells = options[FITS.index(cells.fit)][0]
    positions = None if cells is None else cells.positions(n)
    positions = None if positions == [[i] for i in range(n)] else positions  # every position, each alone
    cost = estimate(n if positions is None else len(positions), layers, from_layer, per_pass)
    if bound is not None and cost.seconds > bound:
        raise TooCostly(cost, bound, [] if heads else coarser(n, layers, from_layer, per_pass, bound))
    return positions
