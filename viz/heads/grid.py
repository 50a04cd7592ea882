"""The layer x head grid: one row per (kind, layer), one column per head, each cell a head's effect, coloured."""

from functools import partial

import pandas as pd

from ..numbers import largest, number
from .effects import effect_css, effect_decimals
from .names import grid_row


def grid_frame(lines: dict[str, list], n_heads: int) -> pd.DataFrame:
    """{row name: a value per head} -> the grid's frame, a column per head."""
    return pd.DataFrame(
        [[name, *values] for name, values in lines.items()], columns=["", *[f"head {h + 1}" for h in range(n_heads)]]
    )


def grid_styler(rows: list[dict]):
    """The compact grid: one row per (kind, layer), one column per head, cells = effect, coloured."""
    n_heads = max(r["head"] for r in rows) + 1
    lines: dict[str, list] = {}
    for r in rows:
        lines.setdefault(grid_row(r["kind"], r["layer"]), [None] * n_heads)[r["head"]] = r["effect"]
    frame = grid_frame(lines, n_heads)
    vmax, decimals = largest(r["effect"] for r in rows), effect_decimals(r["effect"] for r in rows)
    heads = list(frame.columns[1:])
    shown = partial(number, decimals=decimals)
    return frame.style.format(shown, subset=heads).map(lambda v: effect_css(v, vmax), subset=heads)


def empty_grid(layers: dict[str, int], n_heads: int) -> pd.DataFrame:
    """The grid before anything is measured: its rows and columns, a dash in every cell (not Gradio's '1 2 3')."""
    return grid_frame(
        {grid_row(kind, layer): ["–"] * n_heads for kind, n in layers.items() for layer in range(n)}, n_heads
    )
