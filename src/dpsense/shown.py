"""Released numbers as a reader sees them, on the command line and in the report: a value
to the digits its accuracy gives, an interval rounded outward, and bounds, grids and
lattices as the powers of two they are. Post-processing of released values only: the
machine-readable outputs (``--json``, CSV downloads, ``to_dicts``) keep every digit.

A value is never shown as something it is not: rounding to its interval's precision stops
at two significant digits of the value, and a rounding that would change the value's
leading digit or its place (773 shown as 800, 367083 as 0, 9.9999996 as 10) takes more
digits instead (``leading_digit``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "caps_covered",
    "decimals_of",
    "leading_digit",
    "plain",
    "power_of_two",
    "rounded",
    "significant",
]


def leading_digit(value: float) -> tuple[int, int] | None:
    """The first significant digit of ``value`` and its place (the power of ten it
    multiplies); None for zero and non-finite values."""
    if value == 0 or not math.isfinite(value):
        return None
    text = f"{abs(value):.17e}"  # d.ddd...e+XX, exact enough for a float's first digit
    return int(text[0]), int(text.split("e")[1])


def _keeps(value: float, text: str) -> bool:
    """Whether ``text`` shows the leading digit of ``value`` in its place (and its sign)."""
    try:
        shown = float(text)
    except ValueError:
        return True
    if value == 0:
        return shown == 0
    return leading_digit(shown) == leading_digit(value) and (shown < 0) == (value < 0)


def significant(value: float, digits: int = 6) -> str:
    """``value`` in ``digits`` significant digits, or more where that many would change
    its leading digit (9.9999996 is not shown as "10")."""
    for more in range(digits, 18):
        text = f"{value:.{more}g}"
        if _keeps(value, text):
            return text
    return repr(float(value))


def parameter(value: float, digits: int = 4) -> str:
    """A public parameter (an epsilon, a delta, a weight) in ``digits`` significant digits,
    rounded as usual: a split of 1 in five is "0.2", not its float 0.19999999999999998.
    Released values use :func:`significant`, which never carries into a new leading digit."""
    return f"{value:.{digits}g}"


def plain(value: float) -> str:
    """A number in six significant digits ("inf", "-inf", "n/a" for the others)."""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if math.isnan(value):
        return "n/a"
    return significant(value)


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
    shown holds the one released. A value (``way`` "nearest") keeps at least two
    significant digits, and more where rounding would change its leading digit."""
    if decimals is None or not math.isfinite(value):
        return plain(value)
    if way == "nearest":
        return _nearest(value, decimals)
    return _to(value, decimals, way)


def _nearest(value: float, decimals: int) -> str:
    """``value`` rounded to ``decimals`` places, or to as many more as keep two significant
    digits and its leading digit in its place."""
    lead = leading_digit(value)
    if lead is not None:
        decimals = max(decimals, 1 - lead[1])  # two significant digits at least
    if decimals > 20:
        return plain(value)  # a tiny value: as a float prints it
    for more in range(decimals, decimals + 17):
        text = _to(value, more, "nearest")
        if _keeps(value, text):
            return text
    return plain(value)


def _to(value: float, decimals: int, way: str) -> str:
    """``value`` to ``decimals`` places, rounded ``way``."""
    scale = 10.0**decimals
    if way == "nearest":
        return _text(round(value, decimals), decimals)
    step = -1 if way == "down" else 1
    end = math.floor(value * scale) if way == "down" else math.ceil(value * scale)
    text = _text(end / scale, decimals)
    if (float(text) - value) * step < 0:  # value * scale rounded across an end: one more
        text = _text((end + step) / scale, decimals)
    return text


def _text(shown: float, decimals: int) -> str:
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


def caps_covered(unit: str, rows: int, groups: int | None = None) -> str:
    """What a table release's 95% interval covers, in one sentence: the statistic after
    each ``unit``'s rows are capped at ``rows`` (per group, and at ``groups`` groups,
    when grouped), not the statistic of every row (docs/tables.md §5)."""
    per = f"{rows} row{'s' if rows != 1 else ''}"
    if groups is not None:
        per += f" per group and {groups} group{'s' if groups != 1 else ''}"
    return (
        f"Each 95% interval covers the statistic after each {unit}'s rows are capped at "
        f"{per}, not the statistic of every row: rows beyond the caps are left out "
        "(choose the caps with dpsense caps, not private)."
    )
