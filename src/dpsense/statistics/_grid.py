r"""Candidate grids for quantile releases: the public set of values a release may take.

A grid is a data-independent, non-decreasing map :math:`k \mapsto v_k` from the indices
:math:`0 \le k < G` to doubles in ``[lower, upper]``. Two kinds:

* :class:`PowerOfTwoGrid` (continuous data, ``resolution=None``): the multiples of
  :math:`\gamma = \max(2^{\lfloor \log_2(u - l) \rfloor - 32}, 2^{e(M) - 52})` in
  :math:`[l, u]`, where :math:`M = \max(|l|, |u|) < 2^{e(M)}`. Every grid value is a double,
  represented exactly (the grid index times :math:`\gamma` stays below :math:`2^{53}\gamma`),
  and there are between :math:`2^{32} - 1` and :math:`2^{33} + 1` of them unless the bounds
  are so far from 0 that the doubles themselves are coarser.
* :class:`ResolutionGrid` (``resolution=r`` declared by the user or by the column's type,
  e.g. 1 for integers): :math:`v_k = \min(\mathrm{fl}(l + \mathrm{fl}(k r)), u)` for
  :math:`0 \le k \le \lfloor (u - l) / r \rfloor`; on a *decimal lattice* (r the double
  nearest 1/d for an integer d, l the double nearest j/d) :math:`v_k = \min(\mathrm{fl}((j
  + k) / d), u)` instead, the doubles nearest the decimals themselves: exactly the doubles a
  ``DECIMAL(p, s)`` column (d = 10^s) becomes, so its tied values are grid points.

Both answer, for any doubles x, the exact counts :math:`\#\{k : v_k < x\}` and
:math:`\#\{k : v_k \le x\}`: the quantile mechanisms score grid *blocks* (runs of grid
points between two records) without enumerating them. Nothing here reads private data
except the records whose counts are asked for.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import F64, I64
from dpsense.errors import InputError

__all__ = ["CandidateGrid", "PowerOfTwoGrid", "ResolutionGrid", "SubGrid", "candidate_grid"]


GRID_BITS: Final = 32
"""At least 2^32 grid points between the bounds of a continuous quantile."""
MAX_GRID_POINTS: Final = 2**50
"""Grids larger than this are refused (their counts must stay exact in float64)."""
_MIN_NORMAL_EXPONENT: Final = -1022


class CandidateGrid(ABC):
    """A public, non-decreasing map from indices ``0 <= k < size`` to doubles."""

    lower: float
    upper: float
    size: int

    @abstractmethod
    def values(self, k: I64) -> F64:
        """The grid values :math:`v_k` (a data-independent, non-decreasing function)."""

    @abstractmethod
    def count_below(self, x: F64) -> I64:
        r""":math:`\#\{k : v_k < x\}` for each x, exact."""

    @abstractmethod
    def count_at_most(self, x: F64) -> I64:
        r""":math:`\#\{k : v_k \le x\}` for each x, exact."""

    @property
    @abstractmethod
    def spacing(self) -> float:
        """The nominal distance between neighbouring grid values."""

    def nearest(self, x: F64) -> F64:
        """Each x replaced by the nearest grid value (ties to the lower one); post-processing
        of a released value."""
        x = np.asarray(x, dtype=np.float64)
        above = np.minimum(self.count_below(x), self.size - 1)
        below = np.maximum(above - 1, 0)
        hi, lo = self.values(above), self.values(below)
        return np.where(np.abs(hi - x) < np.abs(x - lo), hi, lo)


@dataclass(frozen=True)
class PowerOfTwoGrid(CandidateGrid):
    """The multiples of a power of two ``gamma`` in ``[lower, upper]``."""

    lower: float
    upper: float
    gamma: float
    first: int
    size: int

    @classmethod
    def build(cls, lower: float, upper: float, where: str, bits: int = GRID_BITS) -> PowerOfTwoGrid:
        width = upper - lower
        if not math.isfinite(width):
            raise InputError(
                f"The bounds of {where} are too far apart: upper - lower overflows a double. "
                "Narrow the interval."
            )
        _, exponent = math.frexp(width)  # width = m 2^e with 1/2 <= m < 1
        grid_exponent = exponent - 1 - bits  # floor(log2(width)) - bits
        _, top = math.frexp(max(abs(lower), abs(upper)))  # max |bound| < 2^top
        grid_exponent = max(grid_exponent, top - 52)
        if grid_exponent < _MIN_NORMAL_EXPONENT:
            raise InputError(
                f"The bounds of {where} are too close together for the output grid "
                f"(upper - lower = {width:g}); widen the interval."
            )
        gamma = math.ldexp(1.0, grid_exponent)
        # bound / gamma is exact (a power-of-two scaling of a double, no underflow since
        # gamma <= 2^(top - 52) means |bound| / gamma is an integer or >= 2^-1022... and a
        # subnormal quotient only arises for subnormal bounds, handled by the checks below)
        first = math.ceil(lower / gamma)
        last = math.floor(upper / gamma)
        if first * gamma < lower:
            first += 1
        if last * gamma > upper:
            last -= 1
        return cls(lower, upper, gamma, first, last - first + 1)

    @property
    def spacing(self) -> float:
        return self.gamma

    def values(self, k: I64) -> F64:
        # first + k < 2^53 (gamma >= 2^(top - 52)), so the float is exact, and so is the
        # product with a power of two
        idx = float(self.first) + np.asarray(k, dtype=np.float64)
        return np.asarray(idx * self.gamma, dtype=np.float64)

    def _scaled(self, x: F64) -> F64:
        with np.errstate(under="ignore"):
            return np.asarray(np.asarray(x, dtype=np.float64) / self.gamma)

    def count_below(self, x: F64) -> I64:
        x = np.asarray(x, dtype=np.float64)
        q = self._scaled(x)
        # ceil(x / gamma) is the smallest grid index with value >= x; a quotient that
        # underflowed to 0 belongs to a tiny x != 0, whose ceiling is 1 (x > 0) or 0
        c = np.ceil(q) + ((q == 0) & (x > 0))
        return np.asarray(np.clip(c - float(self.first), 0, self.size), dtype=np.int64)

    def count_at_most(self, x: F64) -> I64:
        x = np.asarray(x, dtype=np.float64)
        q = self._scaled(x)
        f = np.floor(q) - ((q == 0) & (x < 0))
        return np.asarray(np.clip(f - float(self.first) + 1.0, 0, self.size), dtype=np.int64)


@dataclass(frozen=True)
class ResolutionGrid(CandidateGrid):
    """``lower + k * resolution`` (rounded to doubles, capped at ``upper``); on a decimal
    lattice, ``(first + k) / denominator`` rounded once."""

    lower: float
    upper: float
    resolution: float
    size: int
    first: int = 0
    """The lattice index of ``lower`` (``lower`` is the double nearest first/denominator)."""
    denominator: int = 0
    """d when ``resolution`` is the double nearest 1/d and ``lower`` a lattice point, else 0."""

    @classmethod
    def build(cls, lower: float, upper: float, resolution: float, where: str) -> ResolutionGrid:
        ratio = (upper - lower) / resolution
        if not ratio < MAX_GRID_POINTS:  # also catches inf and nan
            raise InputError(
                f"The 'resolution' of {where} is too fine for its bounds: (upper - lower) / "
                "resolution must be below 2^50. Use a coarser resolution, or "
                "resolution=None for continuous data."
            )
        if resolution < math.ulp(max(abs(lower), abs(upper))):
            raise InputError(
                f"The 'resolution' of {where} is finer than the doubles near its bounds, so "
                "neighbouring grid values would coincide. Use a coarser resolution, or "
                "resolution=None for continuous data."
            )
        steps = math.floor(ratio)
        first, denominator = _decimal_lattice(lower, resolution, steps + 1)
        if denominator:
            # counted exactly: (upper - lower) / resolution rounds, and can miss the last
            # lattice point (0.7 / 0.01 is 69.99999999999999)
            steps = math.floor(Fraction(upper) * denominator) - first
        return cls(lower, upper, resolution, steps + 1, first, denominator)

    @property
    def spacing(self) -> float:
        return self.resolution

    def values(self, k: I64) -> F64:
        if self.denominator:
            # first + k and d are below 2^53, so both are exact doubles and the quotient is
            # rounded once: the double nearest (first + k) / d, non-decreasing in k
            idx = float(self.first) + np.asarray(k, dtype=np.float64)
            return np.minimum(idx / float(self.denominator), self.upper)
        steps = np.asarray(k, dtype=np.float64) * self.resolution
        return np.minimum(self.lower + steps, self.upper)

    def _first_index(self, x: F64, strict: bool) -> I64:
        """The smallest k with v_k >= x (strict=True) or v_k > x, by an estimate that is
        then corrected with exact comparisons against the grid values themselves."""
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            est = np.ceil((x - self.lower) / self.resolution)
        k = np.clip(np.nan_to_num(est, nan=0.0), 0, self.size).astype(np.int64)

        def below(idx: I64) -> NDArray[np.bool_]:
            v = self.values(idx)
            return v < x if strict else v <= x

        while True:  # v_{k-1} must not qualify ...
            prev = np.maximum(k - 1, 0)
            step = (k > 0) & ~below(prev)
            if not step.any():
                break
            k = k - step
        while True:  # ... and v_k must qualify
            cur = np.minimum(k, self.size - 1)
            step = (k < self.size) & below(cur)
            if not step.any():
                break
            k = k + step
        return np.asarray(k, dtype=np.int64)

    def count_below(self, x: F64) -> I64:
        return self._first_index(x, strict=True)

    def count_at_most(self, x: F64) -> I64:
        return self._first_index(x, strict=False)


def _decimal_lattice(lower: float, resolution: float, steps: int) -> tuple[int, int]:
    """(j, d) when ``resolution`` is the double nearest 1/d for an integer d and ``lower``
    the double nearest j/d, with every lattice index and d below 2^53; else (0, 0)."""
    if resolution > 1.0:
        return 0, 0
    d = round(1.0 / resolution)
    if not 1 <= d < 2**53 or float(Fraction(1, d)) != resolution:
        return 0, 0
    j = round(Fraction(lower) * d)
    if float(Fraction(j, d)) != lower or abs(j) + steps >= 2**53:
        return 0, 0
    return j, d


@dataclass(frozen=True)
class SubGrid(CandidateGrid):
    """The indices ``start .. start + size - 1`` of a parent grid, renumbered from 0.

    The values are the parent's own doubles, so releases on a sub-grid land on the parent
    grid; the counts are the parent's, shifted and clipped (exact, since the parent's
    values are non-decreasing).
    """

    parent: CandidateGrid
    start: int
    size: int

    def __post_init__(self) -> None:
        if not (self.start >= 0 and self.size >= 1 and self.start + self.size <= self.parent.size):
            raise ValueError("sub-grid out of range")

    @property
    def lower(self) -> float:  # type: ignore[override]
        return float(self.parent.values(np.array([self.start], dtype=np.int64))[0])

    @property
    def upper(self) -> float:  # type: ignore[override]
        last = self.start + self.size - 1
        return float(self.parent.values(np.array([last], dtype=np.int64))[0])

    @property
    def spacing(self) -> float:
        return self.parent.spacing

    def values(self, k: I64) -> F64:
        return self.parent.values(np.asarray(k, dtype=np.int64) + self.start)

    def count_below(self, x: F64) -> I64:
        c = self.parent.count_below(x) - self.start
        return np.asarray(np.clip(c, 0, self.size), dtype=np.int64)

    def count_at_most(self, x: F64) -> I64:
        c = self.parent.count_at_most(x) - self.start
        return np.asarray(np.clip(c, 0, self.size), dtype=np.int64)


def candidate_grid(
    lower: float, upper: float, resolution: float | None, where: str
) -> CandidateGrid:
    """The grid of a quantile release: declared resolution, or the power-of-two grid."""
    if resolution is None:
        return PowerOfTwoGrid.build(lower, upper, where)
    return ResolutionGrid.build(lower, upper, resolution, where)
