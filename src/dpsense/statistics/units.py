r"""Unit-level sensitivities: neighbours that add or remove all rows of one privacy unit.

After contribution bounding, a unit has at most ``m`` rows in a group, so a unit-level
neighbour of a group's data adds, or removes, at most ``m`` rows. :func:`per_unit` returns
the same statistic (same class, so every method recognises it) whose sensitivities are
measured in units:

* global sensitivity ``m * GS`` (triangle inequality along the m moves); a quantile's stays
  the data range ``u - l``, which bounds every change of a value in ``[l, u]``;
* the profile :math:`\hat A_{unit}(k) = m \cdot \hat A_{row}((k+1)m - 1)` for every
  statistic (the m single-row steps of a unit, each bounded by a row-level local
  sensitivity);
* for quantiles also :math:`\hat A_{row}(km + D(m, p))`, one gap instead of m, where the
  lag :math:`D(m, p)` (:func:`quantile_unit_lag`) is the number of row moves that turn a
  unit's jump into one row's jump: ``m - 1`` for the median, up to ``2m - 2`` for levels
  near 0 or 1. The profile is the smaller of the two. docs/tables.md §3 proves both; the
  tests check them against brute force over every small multiset.

Both are admissible in units whenever the row-level profile is admissible in rows, so
smooth bounds, propose-test-release and the distance to instability keep their proofs with
"neighbour" read as "one unit".

Mechanisms whose noise is calibrated to a global sensitivity read the factor with
:func:`rows_per_unit` (the exponential mechanism and the mean estimators use group
privacy).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from dpsense._arrays import FloatArray
from dpsense._exact_budget import exact, exp_bounds, float_down, product_up, quotient_down
from dpsense.errors import InputError, Name
from dpsense.neighbours import Neighbours
from dpsense.statistics._profile import IntArray, Profile
from dpsense.statistics.base import Statistic
from dpsense.statistics.moments import Count
from dpsense.statistics.quantile import Quantile

__all__ = [
    "UnitProfile",
    "counted_rows",
    "counts_units",
    "group_privacy_budget",
    "per_unit",
    "quantile_unit_lag",
    "rows_per_unit",
]


def quantile_unit_lag(rows: int, num: int, den: int) -> int:
    r"""The row moves :math:`D(m, p)` that make one unit's change of a p-quantile one gap.

    If y changes to z by adding or removing at most m rows, some dataset within
    ``D(m, p)`` row moves of y has a row-level local sensitivity of at least
    :math:`|f(y) - f(z)|` (docs/tables.md §3, Lemma), so
    :math:`A_{unit}(x, k) \le A_{row}(x, km + D(m, p))`. With :math:`q = \max(p, 1-p)`,

    .. math::
        D = \max\Big(m - 1,\ \max_{M < pm} \big(M + m - \min(m,
            \lfloor (q + (1-p)M)/p \rfloor)\big),\
            \max_{M < (1-p)m} \big(M + m - \min(m, \lfloor (q + pM)/(1-p) \rfloor)\big)\Big),

    computed in integers from ``p = num / den``. It is ``m - 1`` for the median and at most
    ``2m - 2``.
    """
    a, b, m = num, den, rows
    q = max(a, b - a)
    lag = m - 1
    for M in range(m):
        if M * b < a * m:  # M < p m: a unit adding m rows above the gap
            lag = max(lag, M + m - min(m, (q + (b - a) * M) // a))
        if M * b < (b - a) * m:  # M < (1 - p) m: a unit adding m rows below it
            lag = max(lag, M + m - min(m, (q + a * M) // (b - a)))
    return lag


class UnitProfile(Profile):
    r"""A row-level profile read in units of ``m`` rows.

    :math:`\hat A_{unit}(k) = \min(m \hat A_{row}((k+1)m - 1),\ \hat A_{row}(km + D),\
    \mathrm{cap})`, the middle term only when a lag ``D`` is given (quantiles).
    """

    def __init__(self, inner: Profile, rows: int, lag: int | None, cap: float) -> None:
        self._inner = inner
        self._rows = rows
        self._lag = lag
        self.cap = cap
        self.exact = inner.exact and rows == 1

    def at(self, ks: IntArray) -> FloatArray:
        ks = np.asarray(ks, dtype=np.int64)
        out = self._rows * self._inner.at((ks + 1) * self._rows - 1)
        if self._lag is not None:
            out = np.minimum(out, self._inner.at(ks * self._rows + self._lag))
        return np.minimum(out, self.cap)

    def _saturated_by(self, k: int) -> bool:
        row_k = (k + 1) * self._rows - 1
        if self._lag is not None:
            row_k = min(row_k, k * self._rows + self._lag)
        return self._inner._saturated_by(row_k)

    def value(self) -> float:
        """The statistic's value, when the row-level profile knows it (quantiles)."""
        value = getattr(self._inner, "value", None)
        if not callable(value):
            raise AttributeError("value")
        return float(value())


@cache
def _unit_class(cls: type[Statistic]) -> type[Statistic]:
    def profile(self: Any, xc: FloatArray, neighbours: Neighbours) -> Profile:
        inner = cls.profile(self, xc, neighbours)
        m = self._rows_per_unit
        if isinstance(self, Quantile):
            lag = quantile_unit_lag(m, *self.level)
            return UnitProfile(inner, m, lag, inner.cap)
        return UnitProfile(inner, m, None, m * inner.cap)

    def _global(self: Any, neighbours: Neighbours, n: int | None) -> float:
        row = float(cls._global(self, neighbours, n))
        return row if isinstance(self, Quantile) else product_up(self._rows_per_unit, row)

    def sensitivity_is_exact(self: Any, neighbours: str = "add-remove") -> bool:
        return False

    return type(
        cls.__name__,
        (cls,),
        {
            "profile": profile,
            "_global": _global,
            "sensitivity_is_exact": sensitivity_is_exact,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
        },
    )


def per_unit(statistic: Statistic, rows: int) -> Statistic:
    """``statistic`` with sensitivities measured in units of at most ``rows`` rows.

    ``rows == 1`` returns the statistic itself, and so does a count of the units
    (``Count(distinct_units=True)``), whose records are one per unit and group whatever
    ``rows`` is (:func:`counted_rows`). The returned object is an instance of a subclass of
    the statistic's class and compares by its fields as the original does.
    """
    if rows < 1:
        raise InputError(
            Name("max_rows_per_unit"), f" must be an integer >= 1. Got {rows!r} instead."
        )
    if counted_rows(statistic, rows) == 1:
        return statistic
    base = type(statistic)
    while getattr(base, "_unit_base", None) is not None:  # already per unit
        base = base._unit_base  # type: ignore[attr-defined]
    cls = _unit_class(base)
    cls._unit_base = base  # type: ignore[attr-defined]
    out = object.__new__(cls)
    out.__dict__.update(statistic.__dict__)
    object.__setattr__(out, "_rows_per_unit", int(rows))
    return out


def counted_rows(statistic: Statistic, rows: int) -> int:
    """The records one unit has in a group of ``statistic``'s input when it keeps at most
    ``rows`` rows there: ``rows``, or 1 for a count of the units (its records are the kept
    (unit, group) pairs: a unit's many rows in a group count once, docs/joins.md §4)."""
    return 1 if counts_units(statistic) else rows


def counts_units(statistic: Statistic) -> bool:
    """True for a count of the units, ``Count(distinct_units=True)``."""
    return isinstance(statistic, Count) and statistic.distinct_units


def rows_per_unit(statistic: Statistic) -> int:
    """The ``m`` of a :func:`per_unit` statistic (1 for a row-level one)."""
    return int(getattr(statistic, "_rows_per_unit", 1))


def group_privacy_budget(epsilon: float, delta: float, rows: int) -> tuple[float, float]:
    r"""The row-level (epsilon, delta) that gives (epsilon, delta) for groups of ``rows``.

    Group privacy (Dwork and Roth 2014, Theorem 2.2 and its approximate form, Vadhan 2017
    Lemma 2.2): an (e, d)-DP mechanism is :math:`(m e, m e^{(m-1)e} d)`-DP for groups of m
    records, so running it at :math:`e = \epsilon/m`,
    :math:`d = \delta / (m e^{(m-1)e})` gives :math:`(\epsilon, \delta)` per unit.
    Both are rounded down from their exact values, the exponential enclosed from above
    (docs/noise.md §8).
    """
    if rows == 1:
        return epsilon, delta
    eps = quotient_down(epsilon, rows)
    if delta == 0:
        return eps, 0.0
    growth = exp_bounds((rows - 1) * exact(eps))[1]
    return eps, float_down(exact(delta) / (rows * growth))
