r"""Budget arithmetic with directed rounding: every privacy parameter on its safe side.

A double quotient rounds to the nearest double, which may be the one below:
``1 / (1/3)`` is ``3.0`` in floating point, but the double ``1/3`` is slightly less than
a third, so a scale of 3 gives a count *more* than the epsilon it claims. Every
privacy-relevant number is therefore computed here from the exact binary value of its
inputs, in :class:`fractions.Fraction` arithmetic, and rounded once to a double in the
direction that keeps the guarantee (docs/noise.md §8):

* noise scales, sensitivities, thresholds, rho: **up** (:func:`float_up`,
  :func:`quotient_up`);
* an epsilon or a delta handed to a sub-mechanism, and the parts of a split budget:
  **down** (:func:`float_down`, :func:`quotient_down`, :func:`difference_down`).

Logarithms, exponentials and square roots have no exact rational value: :func:`log_bounds`,
:func:`exp_bounds` and :func:`sqrt_bounds` return rationals that enclose them (mpmath's
outward-rounded interval routines at 96 bits, widened by a further relative
:math:`2^{-80}`; square roots exactly with integer square roots), and the caller takes
the end that is on its safe side.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Final, TypeAlias, TypeVar

__all__ = [
    "difference_down",
    "exact",
    "exp_bounds",
    "float_down",
    "float_up",
    "log_bounds",
    "product_down",
    "product_up",
    "quotient_down",
    "quotient_up",
    "rational_at_least",
    "rational_ceil",
    "sqrt_bounds",
]

Real: TypeAlias = "int | float | Fraction"
"""A finite real given exactly: a double stands for its exact binary value."""

_PRECISION: Final = 96
"""Bits of mpmath's interval evaluation of log and exp."""
_WIDEN: Final = Fraction(1, 2**80)
"""Relative widening of those intervals: a margin of 2^16 units in their last place, so
that an error of a few units in mpmath's directed rounding cannot put a bound inside."""
_MAX_DOUBLE: Final = Fraction(sys.float_info.max)

_F = TypeVar("_F", bound=Callable[..., Any])


def _memo(fn: _F) -> _F:
    """``fn`` remembering its last few thousand answers. Each function here is a pure
    function of the exact values of its arguments, and equal keys are equal exact values
    (an int, a double and a Fraction of one value hash alike and give one answer), so a
    remembered answer is the answer; an unhashable argument is computed afresh. A release
    asks the same few budget questions each time (its shares, scales and thresholds)."""
    cached = functools.lru_cache(maxsize=4096)(fn)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            hash((args, tuple(kwargs.items())))
        except TypeError:
            return fn(*args, **kwargs)
        return cached(*args, **kwargs)

    return call  # type: ignore[return-value]


def exact(value: Real) -> Fraction:
    """The exact rational value of a finite int, double or Fraction."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("budget arithmetic needs finite numbers")
    return Fraction(value)


@_memo
def float_up(value: Real) -> float:
    """The smallest double >= ``value`` (``inf`` above the largest double)."""
    q = exact(value)
    if q > _MAX_DOUBLE:
        return math.inf
    if q < -_MAX_DOUBLE:
        return -sys.float_info.max
    f = float(q)  # correctly rounded: an int / int true division
    while Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f + 0.0  # -0.0 (a tiny negative q) prints as "-0": zero has one sign here


@_memo
def float_down(value: Real) -> float:
    """The largest double <= ``value`` (``-inf`` below the smallest double)."""
    return -float_up(-exact(value)) + 0.0


@_memo
def quotient_up(numerator: Real, denominator: Real) -> float:
    """The smallest double >= ``numerator / denominator`` (a noise scale, a threshold)."""
    return float_up(exact(numerator) / exact(denominator))


@_memo
def quotient_down(numerator: Real, denominator: Real) -> float:
    """The largest double <= ``numerator / denominator`` (an epsilon share, a delta)."""
    return float_down(exact(numerator) / exact(denominator))


@_memo
def product_up(left: Real, right: Real) -> float:
    """The smallest double >= ``left * right``."""
    return float_up(exact(left) * exact(right))


@_memo
def product_down(left: Real, right: Real) -> float:
    """The largest double <= ``left * right``."""
    return float_down(exact(left) * exact(right))


@_memo
def difference_down(total: Real, used: Real) -> float:
    """The largest double r with ``used + r <= total`` exactly: the rest of a budget."""
    return float_down(exact(total) - exact(used))


def rational_ceil(value: Real, denominator: int) -> Fraction:
    """The smallest multiple of ``1 / denominator`` that is >= ``value``."""
    return Fraction(math.ceil(exact(value) * denominator), denominator)


def rational_at_least(value: Real, max_denominator: int) -> Fraction:
    """``value`` itself when its denominator is at most ``max_denominator``, else
    :func:`rational_ceil` of it (a noise scale for an exact sampler: never smaller)."""
    q = exact(value)
    if q.denominator <= max_denominator:
        return q
    return rational_ceil(q, max_denominator)


@_memo
def sqrt_bounds(value: Real, bits: int = 64) -> tuple[Fraction, Fraction]:
    """Rationals ``lo <= sqrt(value) <= hi``, equal when the root is rational, else
    consecutive multiples of ``2^-bits / d`` (d the denominator of ``value``)."""
    q = exact(value)
    if q < 0:
        raise ValueError("sqrt_bounds needs a value >= 0")
    scaled = (q.numerator * q.denominator) << (2 * bits)  # sqrt(p/d) = sqrt(p d) / d
    root = math.isqrt(scaled)
    scale = q.denominator << bits
    low = Fraction(root, scale)
    return low, (low if root * root == scaled else Fraction(root + 1, scale))


@_memo
def log_bounds(value: Real) -> tuple[Fraction, Fraction]:
    """Rationals ``lo <= ln(value) <= hi`` for ``value > 0`` (relative width about 2^-80)."""
    q = exact(value)
    if q <= 0:
        raise ValueError("log_bounds needs a value > 0")
    if q == 1:
        return Fraction(0), Fraction(0)
    from mpmath.libmp import libmpi as mi

    return _widened(mi.mpi_log(_enclose(q), _PRECISION))


@_memo
def exp_bounds(value: Real) -> tuple[Fraction, Fraction]:
    """Rationals ``lo <= exp(value) <= hi`` (relative width about 2^-80)."""
    q = exact(value)
    if q == 0:
        return Fraction(1), Fraction(1)
    from mpmath.libmp import libmpi as mi

    return _widened(mi.mpi_exp(_enclose(q), _PRECISION))


def _enclose(q: Fraction) -> Any:
    """An mpmath interval (outward rounded) that contains the rational q."""
    from mpmath.libmp import from_int
    from mpmath.libmp import libmpi as mi

    return mi.mpi_div((from_int(q.numerator),) * 2, (from_int(q.denominator),) * 2, _PRECISION)


def _widened(interval: Any) -> tuple[Fraction, Fraction]:
    from mpmath.libmp import to_rational

    low, high = (Fraction(*to_rational(end)) for end in interval)
    return low - abs(low) * _WIDEN, high + abs(high) * _WIDEN
