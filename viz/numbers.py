"""Numbers as the page writes them."""

import math
from collections.abc import Iterable

import numpy as np


def shown(value, decimals: int = 3) -> float:
    """The value as number() writes it (rounded to `decimals`, a zero without sign), NaN for a dash: what a reader
    compares."""
    if value is None or not math.isfinite(float(value)):
        return math.nan
    return round(float(value), decimals) + 0.0  # + 0.0: -0.0 becomes 0.0


def number(value, decimals: int = 3) -> str:
    """A number to `decimals` decimals (3 unless told); one that rounds to zero shows as 0.000, never -0.000, and
    a missing or non-finite one as a dash."""
    value = shown(value, decimals)
    return "–" if math.isnan(value) else f"{value:.{decimals}f}"


def largest(values: Iterable) -> float:
    """The largest |value| of those that are numbers (None, NaN and infinities left out); 0.0 for none."""
    return max((abs(float(v)) for v in values if v is not None and math.isfinite(float(v))), default=0.0)


def decimals_for(values: Iterable, least: int, most: int = 6) -> int:
    """Decimals that show the largest |value| to two significant digits: at least `least`, at most `most`. A
    pre-trained model's head effects and gradients are often thousandths, which fixed decimals wrote as zeros."""
    top = largest(values)
    return least if top <= 0 else int(min(most, max(least, 1 - math.floor(math.log10(top)))))


def points(change: float) -> str:
    """A change of probability in percentage points, signed, to two significant digits (at least one decimal,
    at most three): "+4.2 points", "+0.040 points"; one that rounds to zero has no sign, never "-0.0"."""
    value = 100 * float(change)
    decimals = decimals_for([value], least=1, most=3)
    return f"{'+' if shown(value, decimals) > 0 else ''}{number(value, decimals)} points"


def correlations(a: np.ndarray, b: np.ndarray) -> str:
    """'Pearson x.xx, Spearman y.yy' of two arrays of one shape over the cells both have (finite), or why not."""
    both = np.isfinite(a) & np.isfinite(b)
    x, y = a[both], b[both]
    if x.size < 3 or np.std(x) == 0 or np.std(y) == 0:
        return "too few cells with a spread to correlate"
    rank = lambda v: np.argsort(np.argsort(v)).astype(float)  # noqa: E731
    return f"Pearson {np.corrcoef(x, y)[0, 1]:.2f}, Spearman {np.corrcoef(rank(x), rank(y))[0, 1]:.2f}"
