"""Numbers as the page writes them."""

import math


def number(value, decimals: int = 3) -> str:
    """A number to `decimals` decimals (3 unless told); one that rounds to zero shows as 0.000, never -0.000, and
    a missing or non-finite one as a dash."""
    if value is None or not math.isfinite(float(value)):
        return "–"
    text = f"{float(value):.{decimals}f}"
    return text[1:] if float(text) == 0 and text.startswith("-") else text
