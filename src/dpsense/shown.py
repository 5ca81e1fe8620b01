"""Released numbers as a reader sees them, on the command line and in the report: a value
to the digits its accuracy gives, an interval rounded outward, and bounds, grids and
lattices as the powers of two they are. Post-processing of released values only: the
machine-readable outputs (``--json``, CSV downloads, ``to_dicts``) keep every digit."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["decimals_of", "plain", "power_of_two", "rounded"]


def plain(value: float) -> str:
    """A number in six significant digits ("inf", "-inf", "n/a" for the others)."""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if math.isnan(value):
        return "n/a"
    return f"{value:.6g}"


def decimals_of(value: Any, interval: Any, accuracy: Any) -> int | None:
    """The decimals of a released scalar ``value`` shown with its 95% ``interval`` (a
    (low, high) pair, or None) or, without one, its public 95% half-width ``accuracy``:
    two significant digits of the half-width; whole numbers stay whole; None when
    neither is public or the value is not one number."""
    if value is None or isinstance(value, bool) or np.ndim(value) != 0:
        return None
    if interval is not None:
        if np.ndim(interval[0]) != 0 or np.ndim(interval[1]) != 0:
            return None
        half = (float(interval[1]) - float(interval[0])) / 2
    elif accuracy is not None and np.ndim(accuracy) == 0:
        half = float(accuracy)
    else:
        return None
    if not math.isfinite(half) or half <= 0:
        return None
    decimals = min(12, 1 - math.floor(math.log10(half)))
    ends = [float(value), *(float(e) for e in interval or ())]
    if all(math.isfinite(e) and e == round(e) for e in ends):
        decimals = min(decimals, 0)  # whole numbers (a count) stay whole
    return decimals


def rounded(value: float, decimals: int | None, way: str = "nearest") -> str:
    """``value`` to ``decimals`` places (negative: tens, hundreds); an interval's ends are
    rounded outward (``way`` "down" for the low end, "up" for the high), so the interval
    shown holds the one released."""
    if decimals is None or not math.isfinite(value):
        return plain(value)
    scale = 10.0**decimals
    if way == "down":
        shown = math.floor(value * scale) / scale
    elif way == "up":
        shown = math.ceil(value * scale) / scale
    else:
        shown = round(value, decimals)
    return f"{shown:.{max(decimals, 0)}f}" if abs(shown) < 1e15 else plain(shown)


def power_of_two(value: float) -> str:
    """``value`` as ``2^k`` (or ``-2^k``) when it is a power of two, else as usual: private
    bounds and grids are powers of two, which their decimal expansions hide."""
    if value == 0 or not math.isfinite(value):
        return plain(value)
    mantissa, exponent = math.frexp(abs(value))
    if mantissa != 0.5 or not -60 <= exponent - 1 <= 60 or 0 <= exponent - 1 <= 10:
        return plain(value)  # not a power of two, or one read as easily in decimals
    return f"{'-' if value < 0 else ''}2^{exponent - 1}"
