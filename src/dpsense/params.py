"""Validated privacy and data parameters.

One message template for every constraint (after scikit-learn's parameter validation):
``The 'epsilon' parameter of release must be a float in (0, inf). Got -1 instead.``
Validation happens once, where a value enters the library.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from dpsense._exact_budget import difference_down, exact, log_bounds, quotient_down
from dpsense.errors import Assign, Door, InputError, Param

__all__ = [
    "Bounds",
    "check_beta",
    "check_delta",
    "check_epsilon",
    "check_finite",
    "check_int",
    "check_probability",
    "check_sensitivity",
    "rest_of_budget",
    "smooth_beta",
    "validate_bounds",
]


def _fail(name: str, where: str, expected: str, got: object) -> InputError:
    return InputError(Param(name, of=where), f" must be {expected}. Got {got!r} instead.")


def _as_float(value: object, name: str, where: str, expected: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _fail(name, where, expected, value)
    return float(value)


def check_finite(value: object, name: str, *, where: str = "dpsense") -> float:
    """A finite real number."""
    v = _as_float(value, name, where, "a finite float")
    if not math.isfinite(v):
        raise _fail(name, where, "a finite float", value)
    return v


def check_epsilon(value: object, name: str = "epsilon", *, where: str = "dpsense") -> float:
    """epsilon in (0, inf)."""
    v = _as_float(value, name, where, "a float in (0, inf)")
    if not (v > 0 and math.isfinite(v)):
        raise _fail(name, where, "a float in (0, inf)", value)
    return v


def check_delta(
    value: object, name: str = "delta", *, where: str = "dpsense", positive: bool = False
) -> float:
    """delta in [0, 1) (or (0, 1) with ``positive=True``)."""
    expected = "a float in (0, 1)" if positive else "a float in [0, 1)"
    v = _as_float(value, name, where, expected)
    if not (0.0 <= v < 1.0) or (positive and v == 0.0):
        raise _fail(name, where, expected, value)
    return v


def check_sensitivity(value: object, *, where: str = "dpsense", positive: bool = False) -> float:
    """A sensitivity: a finite float >= 0 (> 0 with ``positive=True``)."""
    v = check_finite(value, "sensitivity", where=where)
    if v < 0 or (positive and v == 0):
        raise _fail("sensitivity", where, "a float > 0" if positive else "a float >= 0", value)
    return v


def check_beta(value: object, name: str = "beta", *, where: str = "dpsense") -> float:
    """The smoothing parameter beta in (0, inf)."""
    return check_epsilon(value, name, where=where)


def check_probability(value: object, name: str = "p", *, where: str = "dpsense") -> float:
    """A quantile level p in the open interval (0, 1)."""
    v = _as_float(value, name, where, "a float in (0, 1)")
    if not (0.0 < v < 1.0):
        raise _fail(name, where, "a float in (0, 1)", value)
    return v


def check_int(value: object, name: str, *, where: str = "dpsense", minimum: int = 0) -> int:
    """An integer >= ``minimum``."""
    expected = f"an int >= {minimum}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise _fail(name, where, expected, value)
    v = int(value)
    if v < minimum:
        raise _fail(name, where, expected, value)
    return v


@dataclass(frozen=True)
class Bounds:
    """Public clipping bounds ``[lower, upper]`` with ``lower < upper``."""

    lower: float
    upper: float


def validate_bounds(lower: object, upper: object, *, where: str = "dpsense") -> Bounds:
    """Check public bounds: both finite and ``lower < upper``.

    Missing bounds are an error: dpsense never infers them from the data.
    """
    if lower is None or upper is None:
        missing = "lower" if lower is None else "upper"
        raise InputError(
            Param(missing, of=where),
            " is required: dpsense needs public bounds [lower, upper] chosen without looking "
            "at the data (they are never inferred). If you do not know them, spend part of "
            "the budget on ",
            Door("ds.private_bounds", "(...)"),
            " (CLI: dpsense bounds) and pass what it releases.",
        )
    lo = check_finite(lower, "lower", where=where)
    hi = check_finite(upper, "upper", where=where)
    if not lo < hi:
        raise InputError(
            f"The bounds of {where} must satisfy lower < upper. Got ",
            Assign("lower", f"{lo:g}"),
            ", ",
            Assign("upper", f"{hi:g}"),
            "; swap them or widen the interval.",
        )
    return Bounds(lo, hi)


def smooth_beta(epsilon: float, delta: float = 0.0) -> float:
    r"""The smoothing parameter beta used by the smooth-sensitivity framework.

    With ``delta > 0`` this is the Laplace instantiation of NRS07 (Lemma 2.6):

    .. math:: \beta = \frac{\varepsilon}{2 \ln(2/\delta)}

    With ``delta == 0`` it is the Cauchy instantiation (pure epsilon),
    :math:`\beta = \varepsilon / 6`. Either is rounded down from its exact value (a
    smaller beta keeps every guarantee; docs/noise.md §8).

    References
    ----------
    Nissim, Raskhodnikova and Smith, "Smooth sensitivity and sampling in private data
    analysis", STOC 2007, Lemma 2.6 and Example 2.9.
    """
    eps = check_epsilon(epsilon, where="smooth_beta")
    dlt = check_delta(delta, where="smooth_beta")
    if dlt == 0.0:
        return quotient_down(eps, 6)
    # rounded down (a smaller beta is still admissible): ln(2/delta) from above
    return quotient_down(eps, 2 * log_bounds(2 / exact(dlt))[1])


def rest_of_budget(total: float, used: float) -> float:
    """The largest double r with ``used + r <= total`` in exact arithmetic.

    ``total - used`` in floating point may round up by half an ulp, which would make the
    parts of a split budget add up to more than the total.
    """
    return difference_down(total, used)
