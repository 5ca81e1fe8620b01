r"""Accurate evaluation of statistics, with data-independent error bounds.

Every statistic's value is computed in one of two ways whose error is proved in
docs/sensitivity.md §Floating-point error of f (unit roundoff :math:`u = 2^{-53}`):

* **centred correctly rounded sums** (:func:`centred_mean_parts`): with a public centre
  c in [l, u], each :math:`d_i = \mathrm{fl}(x_i - c)` errs by at most :math:`u w`, and
  ``math.fsum`` (Shewchuk 1997) returns the correctly rounded sum of the :math:`d_i`;
  the mean's error is then a few :math:`u w`, independent of the data and of n;
* **integer accumulation on a public power-of-two grid** (:class:`RecordGrid`): a
  per-record map :math:`\varphi(x) = c + \gamma k(x)` with
  :math:`k(x) = \operatorname{rint}(\mathrm{fl}(x - c)/\gamma)` clamped so that
  :math:`\varphi(x) \in [l, u]`; sums of :math:`\varphi` are exact integers times
  :math:`\gamma`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import FloatArray

__all__ = [
    "ETA",
    "UNIT_ROUNDOFF",
    "RecordGrid",
    "centred_mean_parts",
    "fsum_rows",
    "half_ulp_bound",
]

UNIT_ROUNDOFF: Final = Fraction(1, 2**53)
"""u = 2^-53: round to nearest errs by at most u |r| for a normal result r."""
ETA: Final = Fraction(1, 2**1074)
"""The smallest subnormal: an absolute allowance for results that underflow."""
GRID_BITS: Final = 40
"""The record grid is 2^-40 times the largest power of two <= w."""
_BLOCK: Final = 1 << 21  # |k| <= 2^41, so a block of 2^21 records sums below 2^62


def half_ulp_bound(magnitude: Fraction) -> Fraction:
    """A bound on ``|fl(r) - r|`` for every real ``|r| <= magnitude``: ``u |r| + eta``."""
    return UNIT_ROUNDOFF * magnitude + ETA


def fsum_rows(d: FloatArray) -> FloatArray:
    """``math.fsum`` of each row of a 2-D array (correctly rounded row sums)."""
    rows = d if d.shape[1] > 256 else d.tolist()  # long rows: no Python list copy
    return np.array([math.fsum(row) for row in rows], dtype=np.float64)


def centred_mean_parts(xc: FloatArray, centre: float) -> tuple[FloatArray, float]:
    """``d = fl(x - c)`` and the correctly rounded ``S = fsum(d)`` (one dataset)."""
    d = xc - centre
    return d, math.fsum(d)


@dataclass(frozen=True)
class RecordGrid:
    r"""The per-record map :math:`\varphi(x) = c + \gamma k(x)` onto a public grid.

    :math:`\gamma = 2^{-40}\,\mathrm{pow2}(w)` (a power of two), c the midpoint double,
    :math:`k(x) = \operatorname{rint}(\mathrm{fl}(x - c)/\gamma)` clamped to
    :math:`[k_\ell, k_u]`, :math:`k_\ell = \lceil (l - c)/\gamma \rceil`,
    :math:`k_u = \lfloor (u - c)/\gamma \rfloor`, so that :math:`\varphi(x) \in [l, u]`
    and :math:`|\varphi(x) - x| \le \gamma + u w` (docs/sensitivity.md).
    :math:`\varphi` is non-decreasing.
    """

    lower: float
    upper: float
    centre: float
    grid: float
    k_low: int
    k_high: int

    @classmethod
    def for_bounds(cls, lower: float, upper: float) -> RecordGrid:
        centre = 0.5 * lower + 0.5 * upper
        centre = min(max(centre, lower), upper)
        width = Fraction(upper) - Fraction(lower)
        _, exponent = math.frexp(float(width))
        grid = math.ldexp(1.0, exponent - 1 - GRID_BITS)
        while Fraction(grid) > width / 2**GRID_BITS:  # float(width) may have rounded up
            grid /= 2.0
        g, c = Fraction(grid), Fraction(centre)
        k_low = math.ceil((Fraction(lower) - c) / g)
        k_high = math.floor((Fraction(upper) - c) / g)
        return cls(lower, upper, centre, grid, k_low, k_high)

    def integers(self, xc: FloatArray) -> NDArray[np.int64]:
        """k(x) for clipped values (any shape)."""
        k = np.rint((xc - self.centre) / self.grid)
        return np.clip(k, self.k_low, self.k_high).astype(np.int64)

    def integer_sum(self, xc: FloatArray) -> int:
        """The exact sum of k(x_i) over a 1-D array."""
        k = self.integers(xc)
        return sum(int(k[i : i + _BLOCK].sum()) for i in range(0, k.shape[0], _BLOCK))

    def integer_sums(self, xc: FloatArray) -> list[int]:
        """The exact sum of k over each row of a 2-D array."""
        if xc.shape[1] <= _BLOCK:
            return [int(s) for s in self.integers(xc).sum(axis=1).tolist()]
        return [self.integer_sum(row) for row in xc]

    def value(self, k: int) -> Fraction:
        r"""The exact real :math:`\varphi` for an integer k."""
        return Fraction(self.centre) + Fraction(self.grid) * k

    def total(self, n: int, k_sum: int) -> Fraction:
        r"""The exact :math:`\sum_i \varphi(x_i) = n c + \gamma \sum_i k_i`."""
        return Fraction(self.centre) * n + Fraction(self.grid) * k_sum

    @property
    def max_offset(self) -> Fraction:
        r"""The largest :math:`|\varphi(x) - c| = \gamma \max(|k_\ell|, |k_u|)`."""
        return Fraction(self.grid) * max(abs(self.k_low), abs(self.k_high))
