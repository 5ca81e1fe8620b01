r"""Several quantiles in one release: recursive halving, exact and pure epsilon-DP.

The algorithm of Kaplan, Schnapp and Stemmer (2022) releases m quantiles with error that
grows with :math:`\log m` rather than m:

1. release the middle level :math:`p_i` of the sorted levels with the exponential
   mechanism (:func:`~dpsense.mechanisms.quantile.sample_on_grid`, exact) on the public
   grid between the current bounds, giving v;
2. split the records: those :math:`\le v` go left (bounds ``[lower, v]``, levels
   :math:`p_j / p_i` for j < i), those :math:`> v` go right (bounds ``[v, upper]``, levels
   :math:`(p_j - p_i)/(1 - p_i)` for j > i);
3. recurse on both sides, to depth :math:`D = \lfloor \log_2 m \rfloor + 1`.

**Privacy** (docs/quantile_mechanisms.md §7 proves it). Every call at one depth runs on a
disjoint part of the records, and which part a record falls in is a function of that
record and of values already released. Adding or removing one record changes the data of
exactly one call per depth, so a depth costs what one call costs (parallel composition),
and the D depths compose adaptively: each call gets :math:`\varepsilon / D`. Under
substitute a record may move from one call's data to another's, so each call gets
:math:`\varepsilon / (2D)` with the add-remove score (for a single level: one call,
substitute score, the full epsilon). A privacy unit with M rows changes the calls of one
depth by at most M rows in total; the caller divides epsilon by M first (linear in the
score change).

**Exactness.** Every sub-range is a :class:`~dpsense.statistics._grid.SubGrid` of the
one public grid of the bounds, so every output is one of its doubles, and each draw has
exactly the exponential mechanism's (or permute-and-flip's) distribution. Outputs are
non-decreasing by construction (the left side's candidates end at v, the right side's
start there).

References
----------
H. Kaplan, S. Schnapp, U. Stemmer. "Differentially Private Approximate Quantiles." ICML
2022 (the recursive algorithm and its log m error bound).

A. Smith. STOC 2011, Section 3 (the exponential mechanism for one quantile).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import F64
from dpsense._exact_budget import quotient_down
from dpsense.errors import InputError
from dpsense.mechanisms._quantile_sampler import QuantileScore
from dpsense.mechanisms.quantile import quantile_score, sample_on_grid
from dpsense.neighbours import Neighbours
from dpsense.noise.rng import RandomSource
from dpsense.statistics._grid import CandidateGrid, SubGrid

__all__ = [
    "QuantileCall",
    "RecursiveQuantiles",
    "dithered",
    "halving_depth",
    "joint_is_better",
]


_MIN_LEVEL: Final = Fraction(1, 1_000_000)
"""Rescaled levels are kept at least this far from 0 and 1 (public post-processing of the
levels; the score's sensitivity is computed for the level actually used)."""


def halving_depth(m: int) -> int:
    """The number of depths of recursive halving for m levels: floor(log2 m) + 1."""
    return int(m).bit_length()


def joint_is_better(m: int, neighbours: Neighbours) -> bool:
    """Whether m levels are released jointly (recursive halving) rather than by one
    exponential-mechanism release per level at epsilon / m: from m and the neighbour
    relation only (public), by the rule measured in
    ``benchmarks/results/quantiles_joint_or_split.md`` (docs/quantile_mechanisms.md §7b).

    Under add-remove a joint call gets epsilon / D with D = floor(log2 m) + 1 depths, a
    separate release epsilon / m: joint when D < m (m >= 3). Under substitute a joint call
    gets epsilon / 2D with the add-remove score (sensitivity max(p, 1 - p)), a separate
    release epsilon / m with the substitute score (sensitivity 1): joint when
    m >= 2D - 1 (m = 3 and m >= 5)."""
    depth = halving_depth(m)
    if neighbours == "add-remove":
        return m > depth
    return m >= 2 * depth - 1


def _clamped(level: Fraction) -> float:
    return float(min(max(level, _MIN_LEVEL), 1 - _MIN_LEVEL))


@dataclass(frozen=True)
class RecursiveQuantiles:
    """Release the quantiles at ``levels`` (strictly increasing, in (0, 1)) on ``grid``.

    ``epsilon`` is the budget of the whole release under ``neighbours`` (row-level;
    divide by the rows per unit first for privacy units).
    """

    levels: tuple[Fraction, ...]
    grid: CandidateGrid
    epsilon: float
    neighbours: Neighbours
    per_call: float = field(init=False)

    def __post_init__(self) -> None:
        m = len(self.levels)
        if m == 0:
            raise InputError("Several quantiles need at least one level.")
        if m == 1:
            share = self.epsilon
        else:
            depth = halving_depth(m)
            # each depth's share, rounded down: the D depths never add up to more
            share = quotient_down(
                self.epsilon, depth if self.neighbours == "add-remove" else 2 * depth
            )
        object.__setattr__(self, "per_call", share)

    @property
    def depth(self) -> int:
        """The number of depths D (each costs ``per_call``; 2 ``per_call`` under substitute)."""
        return halving_depth(len(self.levels))

    def release_clipped(self, xc: F64, rng: RandomSource) -> F64:
        """The released quantiles of clipped records ``xc`` (non-decreasing)."""
        return np.asarray(self.sample(xc, rng, 1)[0], dtype=np.float64)

    def sample(self, xc: F64, rng: RandomSource, draws: int) -> F64:
        """``draws`` independent releases (one row each) on clipped records ``xc``.

        The draws of one call are made together, and the draws that released the same
        value share the next calls' data, so many draws cost about as much as one.
        """
        out = np.empty((draws, len(self.levels)), dtype=np.float64)
        rows = np.arange(draws)
        self._recurse(xc, self.levels, 0, self.grid.size - 1, out, rows, 0, rng)
        return out

    def call(self, levels: Sequence[Fraction], k_lo: int, k_hi: int) -> QuantileCall | None:
        """The exponential-mechanism call for ``levels`` on grid indices ``k_lo..k_hi``, or
        None when one candidate is left (then every output is that value, free)."""
        if not levels or k_lo == k_hi:
            return None
        i = (len(levels) - 1) // 2
        neighbours = self.neighbours if len(self.levels) == 1 else "add-remove"
        score = quantile_score(_clamped(levels[i]), self.per_call, neighbours, "Quantiles")
        return QuantileCall(i, SubGrid(self.grid, k_lo, k_hi - k_lo + 1), score)

    def split(
        self, x: F64, levels: Sequence[Fraction], i: int, v: float
    ) -> tuple[tuple[F64, list[Fraction]], tuple[F64, list[Fraction]]]:
        """The records and rescaled levels of the two sides of the released value v."""
        p = levels[i]
        below = x <= v
        left = [q / p for q in levels[:i]]
        right = [(q - p) / (1 - p) for q in levels[i + 1 :]]
        return (x[below], left), (x[~below], right)

    def _recurse(
        self,
        x: F64,
        levels: Sequence[Fraction],
        k_lo: int,
        k_hi: int,
        out: F64,
        rows: NDArray[np.intp],
        offset: int,
        rng: RandomSource,
    ) -> None:
        if not levels:
            return
        step = self.call(levels, k_lo, k_hi)
        if step is None:
            v_lo = self.grid.values(np.array([k_lo]))[0]
            out[np.ix_(rows, np.arange(offset, offset + len(levels)))] = v_lo
            return
        picks = k_lo + sample_on_grid(rng, x.copy(), step.grid, step.score, rows.shape[0])
        if picks.shape[0] > 1:  # the sampler lists tail draws last: make the rows iid
            picks = picks[_permutation(rng, picks.shape[0])]
        out[rows, offset + step.index] = self.grid.values(picks)
        for k in np.unique(picks).tolist():
            v = float(self.grid.values(np.array([k]))[0])
            same = rows[picks == k]
            (x_left, left), (x_right, right) = self.split(x, levels, step.index, v)
            self._recurse(x_left, left, k_lo, k, out, same, offset, rng)
            self._recurse(x_right, right, k, k_hi, out, same, offset + step.index + 1, rng)


@dataclass(frozen=True)
class QuantileCall:
    """One exponential-mechanism call of the recursion: which level, where, which score."""

    index: int
    grid: SubGrid
    score: QuantileScore


def _permutation(rng: RandomSource, n: int) -> NDArray[np.intp]:
    """A uniformly random permutation of range(n) (Fisher-Yates, exact integers)."""
    out = np.arange(n)
    for i in range(n - 1, 0, -1):
        j = rng.randbelow(i + 1)
        out[i], out[j] = out[j], out[i]
    return out


def dithered(xc: F64, resolution: float, rng: RandomSource) -> F64:
    """Each record plus its own uniform offset in [-r/2, r/2) (r = ``resolution``).

    Data on a resolution grid has ties, and a split at a tied value sends the whole tie to
    one side, which skews the levels of the other. Spreading each record over its grid
    cell removes the ties; the releases are rounded back to the grid afterwards. The
    offsets are independent of the data and of each other, so neighbouring datasets stay
    neighbours (a record's offset travels with it) and the guarantee is unchanged.
    """
    u = (rng.words(xc.shape[0]) >> np.uint64(11)).astype(np.float64) * 2.0**-53  # [0, 1)
    return np.asarray(xc + (u - 0.5) * resolution, dtype=np.float64)
