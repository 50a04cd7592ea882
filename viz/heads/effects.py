"""How a head's effect is written and coloured, the same in the head table, the grid and the status line."""

import numpy as np

from ..numbers import decimals_for


def shade(value, vmax: float, rgb: tuple[int, int, int]) -> str:
    """CSS: a background of colour `rgb`, stronger the nearer |value| is to vmax; none for a missing value."""
    if value is None or not np.isfinite(value) or vmax <= 0:
        return ""
    alpha = 0.75 * min(abs(float(value)) / vmax, 1.0) ** 0.7
    return f"background-color: rgba({rgb[0]},{rgb[1]},{rgb[2]},{alpha:.2f})"


def effect_css(value, vmax: float) -> str:
    """Orange where switching the head off lowers the output (the head helps it), blue where it raises it."""
    if value is None or not np.isfinite(value):
        return ""
    return shade(value, vmax, (234, 88, 12) if value < 0 else (37, 99, 235))


def effect_decimals(values) -> int:
    """Decimals that show the largest effect to two significant digits: 3 from 0.01 up, up to 6 below. A 6 x 12-head
    model's heads each move a confident prediction by a thousandth or less, and at 3 decimals its grid read 0.000
    in nearly every cell, coloured as if it said more."""
    return decimals_for(values, least=3)
