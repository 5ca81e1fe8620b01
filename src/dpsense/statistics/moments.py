r"""Count, sum, mean, variance and standard deviation, with closed-form sensitivities.

Conventions (docs/sensitivity.md derives every formula): data are clipped to
``[l, u]``, ``w = u - l``; on the empty dataset the count and sum are 0, the mean is the
midpoint ``(l + u) / 2`` and the variance and standard deviation are 0, so every statistic
is defined on every dataset a neighbour relation can reach.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar

import numpy as np

from dpsense._arrays import FloatArray
from dpsense._exact_budget import float_up
from dpsense.errors import InputError, Param
from dpsense.neighbours import Neighbours
from dpsense.statistics._exact import (
    ETA,
    UNIT_ROUNDOFF,
    RecordGrid,
    centred_mean_parts,
    fsum_rows,
)
from dpsense.statistics._profile import FunctionProfile, IntArray, Profile
from dpsense.statistics._records import grid_sum, record_count
from dpsense.statistics.base import NO_BOUND, BoundedStatistic, Statistic

__all__ = ["Count", "Mean", "Sum"]


def _const(value: float) -> FunctionProfile:
    return FunctionProfile(
        value, lambda ks: np.full(ks.shape, value), cap=value, saturation=1, exact=True
    )


@dataclass(frozen=True)
class Count(Statistic):
    """The number of records.

    Sensitivity 1 under add-remove; 0 under substitute, where n is public.

    ``Count(distinct_units=True)`` counts the privacy units (people) of each group, SQL's
    ``COUNT(DISTINCT unit)``: its records are the kept (unit, group) pairs, one per unit
    whatever ``max_rows_per_unit`` is, so one unit changes it by at most 1 in each of at
    most ``max_groups_per_unit`` groups (docs/joins.md §4). Without a privacy unit every
    row is a unit and it is the plain count.
    """

    distinct_units: bool = field(default=False, kw_only=True)
    kind: ClassVar[str] = "count"

    def output_range(self, n: int | None = None) -> tuple[float, float]:
        """A count is a number of records: [0, inf)."""
        return (0.0, math.inf)

    def __post_init__(self) -> None:
        if not isinstance(self.distinct_units, bool):
            raise InputError(
                Param("distinct_units", of="ds.Count"),
                f" must be True or False. Got {type(self.distinct_units).__name__} instead.",
            )

    def __repr__(self) -> str:
        return "Count(distinct_units=True)" if self.distinct_units else "Count()"

    @property
    def name(self) -> str:
        """ "count", or "count(distinct units)" for a count of the units."""
        return "count(distinct units)" if self.distinct_units else "count"

    def _value(self, xc: FloatArray) -> float:
        return float(xc.shape[0])

    def _batch(self, xc: FloatArray) -> FloatArray:
        return np.full(xc.shape[0], float(xc.shape[1]))

    @property
    def value_error(self) -> float:
        """0: a count below 2^53 (any array that fits in memory) is an exact double."""
        return 0.0

    def _global(self, neighbours: Neighbours, n: int | None) -> float:
        return 1.0 if neighbours == "add-remove" else 0.0

    def profile(self, xc: FloatArray, neighbours: Neighbours) -> Profile:
        return _const(self._global(neighbours, None))

    def sensitivity_is_exact(self, neighbours: str = "add-remove") -> bool:
        return True


@dataclass(frozen=True)
class Sum(BoundedStatistic):
    r"""The sum of records clipped to ``[lower, upper]``, each on a fine public grid.

    To be computed exactly, the sum is of :math:`\varphi(x_i)`, a per-record map onto the
    grid :math:`c + \gamma\mathbb{Z}` (c the midpoint, :math:`\gamma = 2^{-40}` times the
    largest power of two <= w), clamped into ``[lower, upper]``:
    :math:`|\varphi(x) - x| \le \gamma + 2^{-53} w` and :math:`\varphi` is non-decreasing.
    The sum of :math:`\varphi` is accumulated in integers, so :meth:`_value_exact` is exact
    (``exact_value_error = 0``); the double returned by calling the statistic is its
    correctly rounded value. Sensitivities are those of :math:`\sum_i \varphi(x_i)`:

    .. math::
        GS_{\text{add-remove}} = \max(|l|, |u|), \qquad
        GS_{\text{substitute}} = \varphi(u) - \varphi(l) \le u - l,

    and under substitute :math:`LS(x) = \max(\varphi(u) - \varphi(x_{(1)}),
    \varphi(x_{(n)}) - \varphi(l))`, :math:`A(k) = \varphi(u) - \varphi(l)` for k >= 1
    (docs/sensitivity.md §Sum and §Floating-point error of f).
    """

    lower: float = NO_BOUND
    upper: float = NO_BOUND
    kind: ClassVar[str] = "sum"

    def output_range(self, n: int | None = None) -> tuple[float, float]:
        """At most ``n`` values in [l, u] (n unknown under add-remove): [min(0, l n),
        max(0, u n)]."""
        records = n if n is not None else math.inf
        return (min(0.0, self.lower * records), max(0.0, self.upper * records))

    @property
    def _grid(self) -> RecordGrid:
        return RecordGrid.for_bounds(self.lower, self.upper)

    def _value_exact(self, xc: FloatArray) -> Fraction:
        grid = self._grid  # records may be held by an engine: the same exact sum
        return grid.total(record_count(xc), grid_sum(grid, xc))

    def _value(self, xc: FloatArray) -> float:
        return float(self._value_exact(xc))

    def _batch(self, xc: FloatArray) -> FloatArray:
        grid, n = self._grid, int(xc.shape[1])
        return np.array([float(grid.total(n, k)) for k in grid.integer_sums(xc)])

    @property
    def value_error(self) -> float:
        """inf: the double of a sum of unbounded length has no data-independent error.

        :meth:`_value_exact` is exact (:attr:`exact_value_error` is 0); every dpsense
        method releases that rational, not the double.
        """
        return math.inf

    @property
    def exact_value_error(self) -> float:
        """0: the sum of the grid values is accumulated exactly in integers."""
        return 0.0

    def _span(self) -> float:
        grid = self._grid
        return float(Fraction(grid.grid) * (grid.k_high - grid.k_low))

    def _global(self, neighbours: Neighbours, n: int | None) -> float:
        if neighbours == "add-remove":
            return max(abs(self.lower), abs(self.upper))
        return self._span()

    def profile(self, xc: FloatArray, neighbours: Neighbours) -> Profile:
        if neighbours == "add-remove":
            return _const(self._global(neighbours, None))
        if xc.shape[0] == 0:
            return _const(0.0)
        grid = self._grid
        k = grid.integers(xc)
        gap = max(grid.k_high - int(k.min()), int(k.max()) - grid.k_low)
        local = float(Fraction(grid.grid) * gap)  # exact: an integer below 2^42 times 2^j
        w = self._span()
        return FunctionProfile(
            local, lambda ks: np.full(ks.shape, w), cap=w, saturation=1, exact=True
        )

    def sensitivity_is_exact(self, neighbours: str = "add-remove") -> bool:
        return True


def _centre(lower: float, upper: float) -> float:
    """A public double in [lower, upper] near the midpoint (no overflow for huge bounds)."""
    return min(max(0.5 * lower + 0.5 * upper, lower), upper)


def _width_and_magnitude(lower: float, upper: float) -> tuple[Fraction, Fraction]:
    lo, hi = Fraction(lower), Fraction(upper)
    return hi - lo, max(abs(lo), abs(hi))


def mean_errors(lower: float, upper: float) -> tuple[float, float]:
    r"""(exact, double) error bounds of the centred fsum mean on ``[lower, upper]``.

    Exact rational :math:`c + S/n`: :math:`(2u + u^2) W + \eta`; the double
    :math:`\mathrm{fl}(c + \mathrm{fl}(S/n))` adds :math:`u(1+u)^2 W + u(M + W) + 2\eta`
    (docs/sensitivity.md §Floating-point error of f, Mean).
    """
    u = UNIT_ROUNDOFF
    width, magnitude = _width_and_magnitude(lower, upper)
    exact = (2 * u + u * u) * width + ETA
    double = exact + u * (1 + u) ** 2 * width + u * (magnitude + width) + 2 * ETA
    return float_up(exact), float_up(double)


def mean_value(xc: FloatArray, lower: float, upper: float) -> float:
    """``clip(fl(c + fl(fsum(fl(x - c)) / n)))``, c the public centre (n >= 1)."""
    c = _centre(lower, upper)
    _, total = centred_mean_parts(xc, c)
    return float(min(max(c + total / xc.shape[0], lower), upper))


def mean_value_exact(xc: FloatArray, lower: float, upper: float) -> Fraction:
    """The rational ``clip(c + fsum(fl(x - c)) / n)`` (n >= 1)."""
    c = _centre(lower, upper)
    _, total = centred_mean_parts(xc, c)
    value = Fraction(c) + Fraction(total) / int(xc.shape[0])
    return Fraction(min(max(value, Fraction(lower)), Fraction(upper)))


def mean_rows(xc: FloatArray, lower: float, upper: float) -> FloatArray:
    """:func:`mean_value` of each row of a 2-D array, with the same operations."""
    c = _centre(lower, upper)
    totals = fsum_rows(xc - c)
    return np.asarray(np.clip(c + totals / xc.shape[1], lower, upper), dtype=np.float64)


class MeanOfKept(BoundedStatistic):
    """What :class:`Mean` and :class:`~dpsense.statistics.trimmed.TrimmedMean` share: the
    clipped records kept (all but :attr:`_dropped` of them) are averaged by a centred
    fsum, and the global sensitivity is w/2 under add-remove, w / (records kept) under
    substitute (0 when none is kept)."""

    @property
    def _dropped(self) -> int:
        """Records dropped before averaging (none for the mean)."""
        return 0

    @property
    def value_error(self) -> float:
        """About ``4u w + u max(|l|, |u|)`` (u = 2^-53): centred fsum, two roundings."""
        return mean_errors(self.lower, self.upper)[1]

    @property
    def exact_value_error(self) -> float:
        """About ``2u w``: the rational ``c + fsum(x - c)/n`` is not rounded again."""
        return mean_errors(self.lower, self.upper)[0]

    def _global(self, neighbours: Neighbours, n: int | None) -> float:
        if neighbours == "add-remove":
            return float_up(self._width_exact / 2)
        kept = self._need_n(n) - self._dropped
        return float_up(self._width_exact / kept) if kept > 0 else 0.0


@dataclass(frozen=True)
class Mean(MeanOfKept):
    r"""The mean of records clipped to ``[lower, upper]`` (the midpoint on empty data).

    Add-remove, with :math:`\mu` the mean of n >= 2 records and
    :math:`E = \max(u - \mu, \mu - l)`:

    .. math::
        LS(x) = \max\left(\frac{E}{n + 1}, \frac{\max_i |x_i - \mu|}{n - 1}\right),
        \qquad
        \hat A(k) = \min\left(\frac{w}{\max(n - k, 2)},
                   \frac{E + k w / (n - k)}{n - k - 1}\right) \ (k \ge 1),
        \qquad GS = \frac{w}{2}.

    Substitute (n public): :math:`LS(x) = \max(u - x_{(1)}, x_{(n)} - l)/n`,
    :math:`A(k) = w/n` for k >= 1, :math:`GS = w/n`.

    The often-quoted :math:`u/(n+1)` ignores removals and is too small; see
    docs/sensitivity.md §4 (Mean) for the corrected derivation.
    """

    lower: float = NO_BOUND
    upper: float = NO_BOUND
    kind: ClassVar[str] = "mean"

    def _value(self, xc: FloatArray) -> float:
        return mean_value(xc, self.lower, self.upper) if xc.shape[0] else self.midpoint

    def _value_exact(self, xc: FloatArray) -> Fraction:
        if xc.shape[0] == 0:
            return Fraction(self.midpoint)
        return mean_value_exact(xc, self.lower, self.upper)

    def _batch(self, xc: FloatArray) -> FloatArray:
        if xc.shape[1] == 0:
            return np.full(xc.shape[0], self.midpoint)
        return mean_rows(xc, self.lower, self.upper)

    def profile(self, xc: FloatArray, neighbours: Neighbours) -> Profile:
        n, w = xc.shape[0], self.width
        if neighbours == "substitute":
            if n == 0:
                return _const(0.0)
            local = max(self.upper - float(xc.min()), float(xc.max()) - self.lower) / n
            return FunctionProfile(
                local, lambda ks: np.full(ks.shape, w / n), cap=w / n, saturation=1, exact=True
            )
        mu = self._value(xc)
        if n == 0:
            local = w / 2.0
        else:
            add = max(self.upper - mu, mu - self.lower) / (n + 1)
            if n >= 2:
                remove = max(float(xc.max()) - mu, mu - float(xc.min())) / (n - 1)
            else:
                remove = abs(mu - self.midpoint)
            local = max(add, remove)

        # E = max(u - mu, mu - l) bounds both terms of LS(y) / (|y| - 1); k steps move the
        # mean by at most k w / (n - k), so E_y <= E + k w / (n - k) within k (docs §4).
        spread = max(self.upper - mu, mu - self.lower) if n else w / 2.0

        def bound(ks: IntArray) -> FloatArray:
            size = n - ks
            by_size = w / np.maximum(size, 2).astype(np.float64)
            safe = np.maximum(size, 3).astype(np.float64)
            by_spread = (spread + ks * w / safe) / (safe - 1.0)
            tight = np.where(size >= 3, np.minimum(by_size, by_spread), by_size)
            return np.asarray(tight, dtype=np.float64)

        return FunctionProfile(local, bound, cap=w / 2.0, saturation=max(n - 2, 1), exact=False)

    def sensitivity_is_exact(self, neighbours: str = "add-remove") -> bool:
        return neighbours == "substitute"
