r"""Quantiles and the median, with exact local, distance-k and smooth sensitivity.

The quantile at level p of n records is the order statistic at rank
:math:`r(n) = \max(1, \lceil p n \rceil)` ("inverted CDF"); for even n the median is the
lower middle value (``numpy.median`` averages the two). On the empty dataset the quantile
is the lower bound l (rank 0 under the boundary convention).

Every sensitivity is a maximum of gaps :math:`x_{(t)} - x_{(s)}` between extended order
statistics over pairs (s, t) whose *cost* — the distance to a dataset where that gap is a
local sensitivity — is at most k (docs/sensitivity.md §Quantiles derives the costs):

* substitute: :math:`c(s, t) = t - s - 1` for :math:`s \le r \le t` (NRS07, Prop. 3.4);
* add-remove: :math:`c(s, t) = (t - s - 1) + \delta(s, n + 1 - t)`, with
  :math:`\delta` the L1 distance from (s, h) to the band
  :math:`\{(L, H): -q < pH - (1-p)L \le q\}`, :math:`q = \max(p, 1-p)`.

Only a window of order statistics around the rank is needed (selected by
``np.partition`` in O(n)); the window grows until the answer is provably exact. For the
median under add-remove the feasible pairs have a single corner,
:math:`A(k) = x_{(\lfloor (n+2+k)/2 \rfloor)} - x_{(\lceil (n-1-k)/2 \rceil)}`, so the smooth
sensitivity costs O(n) selection plus O(K).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar, Final

import numpy as np

from dpsense._arrays import FloatArray
from dpsense._exact_budget import float_up
from dpsense.errors import InputError, Param
from dpsense.neighbours import Neighbours
from dpsense.params import check_finite, check_probability
from dpsense.statistics._grid import CandidateGrid, PowerOfTwoGrid, ResolutionGrid
from dpsense.statistics._order import OrderStatistics
from dpsense.statistics._profile import (
    INFINITE_DISTANCE,
    FunctionProfile,
    IntArray,
    Profile,
)
from dpsense.statistics.base import NO_BOUND, BoundedStatistic

__all__ = ["Median", "Quantile"]

_MAX_DENOMINATOR: Final = 1_000_000
_PAIR_BLOCK: Final = 1 << 22


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


class _QuantileProfile(Profile):
    """Pairs of order statistics with their costs, over a window that grows on demand."""

    def __init__(
        self,
        xc: FloatArray,
        lower: float,
        upper: float,
        num: int,
        den: int,
        neighbours: Neighbours,
    ) -> None:
        self._order = OrderStatistics(xc, lower, upper)
        self.n = n = int(xc.shape[0])
        self._num, self._den = num, den
        self._nb = neighbours
        self._corner = neighbours == "add-remove" and 2 * num == den
        self.rank = 0 if n == 0 else max(1, _ceil_div(num * n, den))
        self.cap = upper - lower
        self.exact = True
        self._cache: tuple[int, IntArray, FloatArray] | None = None

    # -- pairs ------------------------------------------------------------------------
    def _pairs(self, K: int) -> tuple[IntArray, FloatArray]:
        """Costs and gaps of every (non-dominated) pair with cost <= K, sorted by cost."""
        K = min(K, self.n)  # A(k) = w for k >= n, reached by the pair (0, n + 1)
        if self._cache is not None and self._cache[0] >= K:
            _, c, g = self._cache
            keep = c <= K
            return c[keep], g[keep]
        if self._corner:
            costs, gaps = self._corner_pairs(K)
        else:
            costs, gaps = self._general_pairs(K)
        order = np.argsort(costs, kind="stable")
        costs, gaps = costs[order], gaps[order]
        self._cache = (K, costs, gaps)
        return costs, gaps

    def _corner_pairs(self, K: int) -> tuple[IntArray, FloatArray]:
        n = self.n
        ks = np.arange(K + 1, dtype=np.int64)
        s = np.maximum(0, -((ks - n + 1) // 2))  # ceil((n - 1 - k) / 2), floored at 0
        t = np.minimum(n + 1, (n + 2 + ks) // 2)
        lo, hi = int(s[-1]), int(t[-1])
        vals = self._order.window(lo, hi)
        return ks, vals[t - lo] - vals[s - lo]

    def _general_pairs(self, K: int) -> tuple[IntArray, FloatArray]:
        n, r = self.n, self.rank
        if self._nb == "substitute":
            lo, hi = max(0, r - K - 1), min(n + 1, r + K + 1)
        else:
            lo, hi = max(0, r - 2 * K - 3), min(n + 1, r + 2 * K + 3)
        vals = self._order.window(lo, hi)
        idx = np.arange(lo, hi + 1, dtype=np.int64)
        new_block = np.ones(vals.shape[0], dtype=bool)
        new_block[1:] = vals[1:] != vals[:-1]
        last_of_block = np.ones(vals.shape[0], dtype=bool)
        last_of_block[:-1] = new_block[1:]
        if self._nb == "substitute":
            s_mask = (last_of_block & (idx <= r)) | (idx == r)
            t_mask = (new_block & (idx >= r)) | (idx == r)
        else:
            s_mask = last_of_block & (idx <= n)
            t_mask = new_block & (idx >= 1)
        s_idx, t_idx = idx[s_mask], idx[t_mask]
        s_val, t_val = vals[s_mask], vals[t_mask]
        costs: list[IntArray] = []
        gaps: list[FloatArray] = []
        step = max(1, _PAIR_BLOCK // max(1, t_idx.shape[0]))
        for i in range(0, s_idx.shape[0], step):
            s = s_idx[i : i + step, None]
            c = self._cost(s, t_idx[None, :])
            ok = (t_idx[None, :] > s) & (c <= K)
            costs.append(c[ok])
            gaps.append((t_val[None, :] - s_val[i : i + step, None])[ok])
        if not costs:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(costs), np.concatenate(gaps)

    def _cost(self, s: IntArray, t: IntArray) -> IntArray:
        inner = t - s - 1
        if self._nb == "substitute":
            return inner
        a, b = self._num, self._den
        h = self.n + 1 - t
        g = a * h - (b - a) * s  # (p h - (1 - p) s) * den
        q = max(a, b - a)
        over = np.maximum(0, -((-g) // q) - 1)
        under = np.maximum(0, (-g) // q)
        return np.asarray(inner + over + under, dtype=np.int64)

    # -- profile interface ------------------------------------------------------------
    def at(self, ks: IntArray) -> FloatArray:
        ks = np.asarray(ks, dtype=np.int64)
        if self._nb == "substitute" and self.n == 0:
            return np.zeros(ks.shape)
        if ks.size == 0:
            return np.zeros(0)
        costs, gaps = self._pairs(int(ks.max()))
        if costs.size == 0:  # every pair within reach is tied: A(k) = 0
            return np.zeros(ks.shape)
        running = np.maximum.accumulate(gaps)
        pos = np.searchsorted(costs, np.minimum(ks, self.n), side="right") - 1
        return np.where(pos >= 0, running[np.maximum(pos, 0)], 0.0)

    def _ranks_for(self, K: int) -> tuple[int, int]:
        """The order statistics that the pairs of cost at most K use."""
        n, r = self.n, self.rank
        if self._corner:
            return max(0, -((K - n + 1) // 2)), min(n + 1, (n + 2 + K) // 2)
        if self._nb == "substitute":
            return max(0, r - K - 1), min(n + 1, r + K + 1)
        return max(0, r - 2 * K - 3), min(n + 1, r + 2 * K + 3)

    def value(self) -> float:
        """The quantile itself, x_(r) (the lower bound for empty data), from the window."""
        return self._order.at(self.rank) if self.n else self._order.lower

    def smooth(self, beta: float, floor: float = 0.0) -> float:
        if self._nb == "substitute" and self.n == 0:
            return 0.0
        K = max(16, math.ceil((math.log(self.n + 2.0) + 2.0) / beta))
        k_max = self.n
        if floor > 0 and self.cap > 0:
            # beyond K_max every term e^{-k beta} A(k) <= e^{-k beta} cap is below floor/2:
            # select the order statistics for K_max once, up front (no re-partition)
            k_max = min(self.n, math.ceil(math.log(4.0 * self.cap / floor) / beta))
            K = min(K, k_max)
            self._order.window(*self._ranks_for(k_max))
        while True:
            costs, gaps = self._pairs(K)
            weighted = np.exp(-beta * costs.astype(np.float64)) * gaps
            best = float(weighted.max()) if weighted.size else 0.0
            beyond = math.exp(-beta * (K + 1)) * self.cap
            if self.n <= K or best >= beyond or beyond <= floor / 2:
                return best
            need = math.ceil(math.log(self.cap / best) / beta) if best > 0 else 0
            K = min(max(4 * K, need), k_max)

    def distance(self, bound: float) -> int:
        if not self.cap > bound or (self._nb == "substitute" and self.n == 0):
            return INFINITE_DISTANCE
        K = 64
        while True:
            costs, gaps = self._pairs(K)
            above = np.flatnonzero(gaps > bound)
            if above.size:
                return int(costs[above[0]])
            K *= 4


@dataclass(frozen=True)
class Quantile(BoundedStatistic):
    r"""The p-quantile of records clipped to ``[lower, upper]``.

    Parameters
    ----------
    p : float
        The level, in (0, 1). Ranks are computed in exact rational arithmetic on the
        nearest fraction with denominator at most 10^6 (so ``p=0.1`` means exactly 1/10).
    lower, upper : float
        Public bounds.
    resolution : float or None
        The public spacing of the values the data can take (1 for integer data), or None
        (default) for continuous data. When declared, quantile releases land on the grid
        ``lower + k * resolution`` (k = 0, 1, ...; capped at ``upper``): the exponential
        mechanism chooses among those grid values, and the other methods round their
        output to the nearest one (post-processing). Declare it from what the data *can*
        be, never from what it is: detecting it would read the data.

    Notes
    -----
    Rank :math:`r = \max(1, \lceil p n \rceil)` (docs/sensitivity.md §6). Local
    sensitivity, A(k) and the smooth sensitivity are exact under both relations (NRS07 §3.1
    for substitute; the add-remove costs are derived in docs/sensitivity.md).
    """

    p: float
    lower: float = NO_BOUND
    upper: float = NO_BOUND
    resolution: float | None = None
    kind: ClassVar[str] = "quantile"
    _num: int = field(init=False, repr=False, compare=False, default=0)
    _den: int = field(init=False, repr=False, compare=False, default=1)
    _grid: CandidateGrid | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        p = check_probability(self.p, where=type(self).__name__)
        frac = Fraction(p).limit_denominator(_MAX_DENOMINATOR)
        if not 0 < frac < 1:
            raise InputError(
                Param("p", of=type(self).__name__),
                f" must be a float in (0, 1) at "
                f"least 1e-6 away from 0 and 1. Got {self.p!r} instead.",
            )
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "_num", frac.numerator)
        object.__setattr__(self, "_den", frac.denominator)
        super().__post_init__()
        if self.resolution is not None:
            name = type(self).__name__
            res = check_finite(self.resolution, "resolution", where=name)
            if not res > 0:
                raise InputError(
                    Param("resolution", of=name),
                    f" must be a float > 0 (1 for "
                    "integer data; no resolution at all for continuous data). Got "
                    f"{self.resolution!r} instead.",
                )
            object.__setattr__(self, "resolution", res)
            if self.has_bounds:  # else with_bounds builds the grid
                grid = ResolutionGrid.build(self.lower, self.upper, res, name)
                object.__setattr__(self, "_grid", grid)

    @property
    def level(self) -> tuple[int, int]:
        """The level p as the exact fraction (numerator, denominator) used for ranks."""
        return self._num, self._den

    def candidates(self, where: str = "release") -> CandidateGrid:
        """The public grid of values a quantile release may take: the declared resolution
        grid, else the power-of-two grid of the bounds (2^32 or more points)."""
        self.require_bounds(f"{self.name}.candidates")
        if self._grid is not None:
            return self._grid
        return PowerOfTwoGrid.build(self.lower, self.upper, where)

    def round_to_resolution(self, value: float) -> float:
        """``value`` moved to the nearest point of the declared resolution grid (identity
        when no resolution is declared). Post-processing of a released value."""
        if self._grid is None:
            return value
        return float(self._grid.nearest(np.array([value]))[0])

    def round_to_resolution_down(self, value: float) -> float:
        """The largest point of the declared resolution grid at or below ``value`` (within
        the bounds; identity without a resolution): an interval's lower end, rounded out."""
        if self._grid is None:
            return value
        k = max(int(self._grid.count_at_most(np.array([value]))[0]) - 1, 0)
        return float(self._grid.values(np.array([k]))[0])

    def round_to_resolution_up(self, value: float) -> float:
        """The smallest point of the declared resolution grid at or above ``value`` (within
        the bounds; identity without a resolution): an interval's upper end, rounded out."""
        if self._grid is None:
            return value
        k = min(int(self._grid.count_below(np.array([value]))[0]), self._grid.size - 1)
        return float(self._grid.values(np.array([k]))[0])

    @property
    def name(self) -> str:
        return f"quantile(p={self.p:g})"

    def rank(self, n: int) -> int:
        """The 1-based rank of the quantile among n records (0 for n = 0)."""
        return 0 if n == 0 else max(1, _ceil_div(self._num * n, self._den))

    def _value(self, xc: FloatArray) -> float:
        n = xc.shape[0]
        if n == 0:
            return self.lower
        r = self.rank(n)
        return float(np.partition(xc, r - 1)[r - 1])

    def _batch(self, xc: FloatArray) -> FloatArray:
        m = xc.shape[1]
        if m == 0:
            return np.full(xc.shape[0], self.lower)
        r = self.rank(m)
        return np.partition(xc, r - 1, axis=1)[:, r - 1]

    @property
    def value_error(self) -> float:
        """0: the value is one of the clipped records (or the lower bound), not computed."""
        return 0.0

    def _global(self, neighbours: Neighbours, n: int | None) -> float:
        if neighbours == "substitute" and n == 0:
            return 0.0
        return float_up(self._width_exact)

    def profile(self, xc: FloatArray, neighbours: Neighbours) -> Profile:
        if neighbours == "substitute" and xc.shape[0] == 0:
            return FunctionProfile(
                0.0, lambda ks: np.zeros(ks.shape), cap=0.0, saturation=1, exact=True
            )
        return _QuantileProfile(xc, self.lower, self.upper, self._num, self._den, neighbours)

    def sensitivity_is_exact(self, neighbours: str = "add-remove") -> bool:
        return True


@dataclass(frozen=True)
class Median(Quantile):
    """The median: the quantile at p = 1/2, rank ``ceil(n / 2)`` (the lower middle value).

    Parameters
    ----------
    lower, upper : float
        Public bounds.
    resolution : float or None
        The public spacing of the possible values (1 for integers); see :class:`Quantile`.
    """

    p: float = field(init=False, default=0.5)
    lower: float = NO_BOUND
    upper: float = NO_BOUND
    resolution: float | None = None
    kind: ClassVar[str] = "median"

    @property
    def name(self) -> str:
        return "median"
