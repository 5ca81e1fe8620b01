r"""The exact sampler of the exponential-mechanism quantile, in O(n) time.

The mechanism (docs/quantile_mechanisms.md) picks grid index k with probability

.. math:: P(k) \propto e^{-\eta S(k)}, \qquad
          S(k) = \max\left(0,\; d\, a_k - m\, n,\; d\, b_k - (d - m)\, n\right),

where :math:`p = m/d` in lowest terms, :math:`a_k = \#\{x < v_k\}`, :math:`b_k =
\#\{x > v_k\}` and :math:`v_k` is the k-th grid value. :math:`S/d` is the tie-aware score
:math:`\max(0, a_k - pn, b_k - (1-p)n)`: 0 exactly when :math:`v_k` is a p-quantile of the
records (ties included), and the symmetric score :math:`|(1-p) a_k - p b_k|` when no record
equals :math:`v_k`. S is an integer, so every score is exact.

**Blocks.** Between two consecutive distinct records, and at each record, :math:`a_k` and
:math:`b_k` are constant; such a run of grid indices is a *block* with one score and a
weight equal to its number of grid points (the grid answers those counts exactly). The
sampler picks a block with probability proportional to its weight times
:math:`e^{-\eta S}` (:class:`~dpsense.noise.choice.ExponentialChoice`, exact), then a grid
point inside it uniformly (exact integer sampling).

**Window.** Only the records of ranks within W of the target matter unless the data are
pathological: one ``np.partition`` places the order statistics at positions ``lo`` and
``hi`` (values a and b); one pass counts the ties of a and b outside the window. The
blocks inside [a, b] are built from the sorted window alone. Every grid point outside
[a, b] (the *tail*) has score at least

.. math:: S_{min} = \min\left(m n - d A,\; (d - m) n - d B\right),

with A = #{x < a} and B = #{x > b} (docs/quantile_mechanisms.md proves it), so the tail's
mass is at most :math:`C e^{-\eta S_{min}}` for its C grid points. The tail enters the
choice as one extra candidate of that weight and score. If it is chosen, a tail grid point
g is drawn uniformly, its exact score is counted over all the data, and g is output with
probability :math:`e^{-\eta (S(g) - S_{min})}` (exact, Canonne–Kamath–Steinke); otherwise
the whole draw starts again. Each grid point g of the tail is then output with probability
proportional to :math:`e^{-\eta S_{min}} e^{-\eta (S(g) - S_{min})} = e^{-\eta S(g)}`, the
same constant of proportionality as the window's blocks: the output distribution is exactly
P, whatever the window. The window only decides the running time; W is chosen from
public parameters so that the tail is chosen with probability below about :math:`2^{-40}`
on non-degenerate data, and data on which the float estimate says otherwise (long runs of
ties between the grid points) take the full-sort path, which samples the same P.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, Protocol

import numpy as np

from dpsense._arrays import F64, I64
from dpsense.noise.choice import ExponentialChoice
from dpsense.noise.exact import bernoulli_exp_py, uniform_below
from dpsense.noise.rng import RandomSource
from dpsense.statistics._grid import CandidateGrid
from dpsense.statistics._order import counts_below_points, select_sorted

__all__ = [
    "ArrayRecords",
    "QuantileScore",
    "RecordSource",
    "sample_quantile_indices",
    "window_ranks",
]


_TAIL_BITS: Final = 40
"""The window makes the tail candidate's probability below about 2^-40."""
_FALLBACK_LOG: Final = -20.0
"""Full-sort path when the tail's log-mass is within e^20 of the window's best block."""
_MAX_SCORE: Final = 2**53


def window_ranks(n: int, num: int, den: int, w: int) -> tuple[int, int] | None:
    """The 0-based ranks ``(lo, hi)`` of the window of ``w`` ranks each side of the target
    ``floor(p n)`` (p = num/den), or None when the window reaches the first or last record
    (the full path is then as cheap). Public parameters and n decide it, nothing else."""
    target_lo = num * n // den
    lo = max(0, target_lo - w)
    hi = min(n - 1, target_lo + 1 + w)
    return None if lo == 0 or hi == n - 1 else (lo, hi)


class RecordSource(Protocol):
    """The clipped records of one release, as the sampler reads them.

    The sampler needs the records' order statistics around the target rank, two counts
    for the rare tail step, and (rarely) all of them sorted. :class:`ArrayRecords` answers from
    a numpy array; an engine answers from where the records live
    (``dpsense.tables.engines.spark.frame``), so that only the window reaches Python. Every
    answer is exact: the sampler's output distribution does not depend on who answers.
    """

    @property
    def size(self) -> int:
        """The number of records n."""
        ...

    def quantile_window(self, num: int, den: int, w: int) -> tuple[F64, I64, int, int] | None:
        """For the ranks of :func:`window_ranks` (None when that is None): the distinct
        record values from the predecessor of ``x_(lo)`` to the successor of ``x_(hi)``
        with their multiplicities, and the numbers of records below and above them."""
        ...

    def count_below(self, v: float) -> int:
        """#{x < v}."""
        ...

    def count_above(self, v: float) -> int:
        """#{x > v}."""
        ...

    def counts_below(self, points: F64) -> I64:
        """#{x < c} for each of the increasing ``points`` (one pass where the records
        live: a quantile's interval, ``methods.quantile_interval``)."""
        ...

    def sorted_values(self) -> F64:
        """Every record, sorted (the full path: small data or a tail that is not
        negligible)."""
        ...


class ArrayRecords:
    """A :class:`RecordSource` over a numpy array of clipped records (reordered in place)."""

    def __init__(self, x: F64) -> None:
        self.x = x

    @property
    def size(self) -> int:
        return int(self.x.shape[0])

    def quantile_window(self, num: int, den: int, w: int) -> tuple[F64, I64, int, int] | None:
        ranks = window_ranks(self.size, num, den, w)
        return None if ranks is None else _window_counts(self.x, *ranks)

    def count_below(self, v: float) -> int:
        return int(np.count_nonzero(self.x < v))

    def count_above(self, v: float) -> int:
        return int(np.count_nonzero(self.x > v))

    def counts_below(self, points: F64) -> I64:
        return counts_below_points(self.x, points)

    def sorted_values(self) -> F64:
        self.x.sort()
        return self.x


def _as_source(x: F64 | RecordSource) -> RecordSource:
    return ArrayRecords(x) if isinstance(x, np.ndarray) else x


@dataclass(frozen=True)
class QuantileScore:
    """The level p = num/den and the exponential mechanism's multiplier eta (a double).

    ``eta`` multiplies the integer score S; it is eps / (2 den Delta) rounded down, where
    the tie-aware score's sensitivity is Delta = max(p, 1 - p) under add-remove and 1
    under substitute.
    """

    num: int
    den: int
    eta: float

    def scores(self, a: I64, b: I64, n: int) -> I64:
        """The integer tie-aware scores ``max(0, d a - m n, d b - (d - m) n)`` of candidates
        with ``a`` records below them and ``b`` above, among ``n`` (docs/quantile_mechanisms.md
        §2)."""
        low = self.den * np.asarray(a, dtype=np.int64) - self.num * n
        high = self.den * np.asarray(b, dtype=np.int64) - (self.den - self.num) * n
        return np.asarray(np.maximum(0, np.maximum(low, high)), dtype=np.int64)

    def window(self, size: int) -> int:
        """Ranks each side of the target beyond which the tail is negligible: W with
        eta den W >= ln(G) + 40 ln 2 (public: eta, the level and the grid size)."""
        need = (math.log(max(size, 2)) + _TAIL_BITS * math.log(2.0)) / (self.eta * self.den)
        return int(min(math.ceil(need), 2**62)) + 2


@dataclass(frozen=True)
class _Blocks:
    start: I64
    count: I64
    score: I64
    tail_low: int  # grid points [0, tail_low) and [tail_high, size) form the tail
    tail_high: int
    tail_score: int  # S_min (meaningless when the tail is empty)


def _blocks(
    grid: CandidateGrid,
    score: QuantileScore,
    values: F64,
    counts: I64,
    below: int,
    above: int,
    n: int,
    full: bool,
) -> _Blocks:
    """Blocks for the sorted distinct records ``values`` (with multiplicities ``counts``)
    that have ``below`` records under them and ``above`` over them."""
    lo = grid.count_below(values)  # first grid index at or above each value
    hi = grid.count_at_most(values)  # first grid index above it
    before = below + np.concatenate(([0], np.cumsum(counts)[:-1]))  # #{x < v_j}
    through = before + counts  # #{x <= v_j}
    # at v_j: a = before, b = n - through; in the gap after v_j: a = through, b = n - through
    at_scores = score.scores(before, n - through, n)
    gap_scores = score.scores(through, n - through, n)
    gap_start = hi
    gap_end = np.concatenate((lo[1:], [hi[-1]]))  # the last gap is empty here
    starts = [np.column_stack((lo, gap_start)).reshape(-1)]
    sizes = [np.column_stack((hi - lo, gap_end - gap_start)).reshape(-1)]
    scores = [np.column_stack((at_scores, gap_scores)).reshape(-1)]
    tail_low, tail_high, tail_score = int(lo[0]), int(hi[-1]), 0
    if full:  # below the minimum a = 0, b = n; above the maximum a = n, b = 0
        starts += [np.array([0, tail_high])]
        sizes += [np.array([tail_low, grid.size - tail_high])]
        scores += [score.scores(np.array([0, n]), np.array([n, 0]), n)]
        tail_low, tail_high = 0, grid.size
    else:
        tail_score = max(
            0,
            min(score.num * n - score.den * below, (score.den - score.num) * n - score.den * above),
        )
    return _Blocks(
        np.concatenate(starts).astype(np.int64),
        np.concatenate(sizes).astype(np.int64),
        np.concatenate(scores).astype(np.int64),
        tail_low,
        tail_high,
        tail_score,
    )


def _distinct(sorted_x: F64) -> tuple[F64, I64]:
    """Distinct values of a sorted array and their multiplicities (no extra sort)."""
    new = np.empty(sorted_x.shape[0], dtype=bool)
    new[0] = True
    np.not_equal(sorted_x[1:], sorted_x[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, sorted_x.shape[0]))
    return sorted_x[starts], counts.astype(np.int64)


def _window_counts(x: F64, lo: int, hi: int) -> tuple[F64, I64, int, int]:
    """The distinct values from the predecessor of a = x_(lo) to the successor of
    b = x_(hi) (0-based ranks), with their multiplicities in all of x, and the numbers of
    records below and above that range. Widening by one distinct value each side keeps the
    tail bound tight on tied data (the tail then starts below a whole run of ties)."""
    n = x.shape[0]
    picked = select_sorted(x, lo, hi, runs=True)
    sub: F64 | None = None
    if picked is None:
        x.partition([lo, hi])  # in place: x[:lo] <= x[lo] <= x[lo+1:hi] <= x[hi] <= x[hi+1:]
        a, b = x[lo], x[hi]
        ties_a = int(np.count_nonzero(x[:lo] == a))
        ties_b = int(np.count_nonzero(x[hi + 1 :] == b))
        values, counts = _distinct(np.sort(x[lo : hi + 1]))
        counts[0] += ties_a
        counts[-1] += ties_b
        below, above = lo - ties_a, n - 1 - hi - ties_b
    else:
        sub, offset = picked  # sorted ranks offset .. offset + len(sub) - 1, x untouched
        a, b = sub[lo - offset], sub[hi - offset]

        # sub holds every record of [sub[0], sub[-1]] (a range of values): all copies of
        # any value in it
        def less(v: float) -> int:  # #{x < v}
            if sub[0] <= v:
                return offset + int(np.searchsorted(sub, v, "left"))
            return int(np.count_nonzero(x < v))

        def at_most(v: float) -> int:  # #{x <= v}
            if v <= sub[-1]:
                return offset + int(np.searchsorted(sub, v, "right"))
            return int(n) - int(np.count_nonzero(x > v))

        inner = sub[np.searchsorted(sub, a, "left") : np.searchsorted(sub, b, "right")]
        values, counts = _distinct(inner)
        below, upto_b = less(a), at_most(b)
        counts[0] = at_most(a) - below
        counts[-1] = upto_b - less(b)
        above = n - upto_b
    if below:
        u, c = _neighbour(x, sub, float(a), before=True)
        values, counts, below = np.insert(values, 0, u), np.insert(counts, 0, c), below - c
    if above:
        u, c = _neighbour(x, sub, float(b), before=False)
        values, counts, above = np.append(values, u), np.append(counts, c), above - c
    return values, counts, below, above


def _neighbour(x: F64, sub: F64 | None, v: float, *, before: bool) -> tuple[float, int]:
    """The largest record below v (``before``) or the smallest above it, and its count;
    read from the sorted bracket ``sub`` when all its copies lie inside, else one pass."""
    if sub is not None:
        if before and sub[0] < v:
            i = int(np.searchsorted(sub, v, "left"))
            u = float(sub[i - 1])  # every copy of u lies in sub (a range of values)
            return u, i - int(np.searchsorted(sub, u, "left"))
        if not before and v < sub[-1]:
            i = int(np.searchsorted(sub, v, "right"))
            u = float(sub[i])
            return u, int(np.searchsorted(sub, u, "right")) - i
    # a record of a public-seeded sample close to v brackets the neighbour: only the
    # records between that sample value and v are examined (speed only; exact either way)
    sample = np.sort(x[np.random.default_rng(x.shape[0]).integers(0, x.shape[0], 1 << 12)])
    if before:
        i = int(np.searchsorted(sample, v, "left"))
        near = float(sample[i - 1]) if i > 0 else -np.inf
        between = x[(x > near) & (x < v)]
        u = float(between.max()) if between.size else near
    else:
        i = int(np.searchsorted(sample, v, "right"))
        near = float(sample[i]) if i < sample.shape[0] else np.inf
        between = x[(x < near) & (x > v)]
        u = float(between.min()) if between.size else near
    return u, int(np.count_nonzero(x == u))


def _window_blocks(
    x: F64 | RecordSource, grid: CandidateGrid, score: QuantileScore, forced: int | None
) -> _Blocks | None:
    """Blocks of the rank window around the target, or None when the full path is
    needed (small data, or a tail that is not negligible on this data). ``forced`` sets
    the window and skips the efficiency check (tests of the tail step)."""
    src = _as_source(x)
    n = src.size
    w = score.window(grid.size) if forced is None else forced
    window = src.quantile_window(score.num, score.den, w)
    if window is None:
        return None
    values, counts, below, above = window
    blocks = _blocks(grid, score, values, counts, below, above, n, full=False)
    tail = blocks.tail_low + grid.size - blocks.tail_high
    if tail and forced is None:
        live = blocks.count > 0
        if not live.any():
            return None
        best = float(np.max(np.log(blocks.count[live]) - score.eta * blocks.score[live]))
        tail_log = math.log(tail) - score.eta * blocks.tail_score
        if tail_log > best + _FALLBACK_LOG:
            return None
    return blocks


def _full_blocks(x: F64 | RecordSource, grid: CandidateGrid, score: QuantileScore) -> _Blocks:
    ordered = _as_source(x).sorted_values()
    values, counts = _distinct(ordered)
    return _blocks(grid, score, values, counts, 0, 0, ordered.shape[0], full=True)


def _tail_index(rng: RandomSource, blocks: _Blocks, size: int) -> int:
    """A uniform grid index of the tail [0, tail_low) + [tail_high, size)."""
    low, high_count = blocks.tail_low, size - blocks.tail_high
    r = int(uniform_below(rng, np.array([low + high_count], dtype=np.uint64))[0])
    return r if r < low else blocks.tail_high + (r - low)


def sample_quantile_indices(
    rng: RandomSource,
    x: F64 | RecordSource,
    grid: CandidateGrid,
    score: QuantileScore,
    draws: int = 1,
    *,
    _exact: bool = False,
    _full: bool = False,
    _window: int | None = None,
) -> I64:
    """``draws`` independent grid indices with probability exactly P(k).

    ``x`` holds the clipped records (an array, reordered in place: pass a copy you own)
    or a :class:`RecordSource` that answers for records held elsewhere. ``_full=True``
    forces the full-sort path; ``_window=w`` forces a window of w ranks each side (tests
    of both paths and of the tail step).
    """
    src = _as_source(x)
    n = src.size
    if n == 0:
        return uniform_below(rng, np.full(draws, grid.size, dtype=np.uint64)).astype(np.int64)
    if score.den * n >= _MAX_SCORE:
        raise ValueError("too many records for exact integer scores")  # > 9e9 records
    blocks = None if _full else _window_blocks(src, grid, score, _window)
    if blocks is None:
        blocks = _full_blocks(src, grid, score)
    tail = blocks.tail_low + grid.size - blocks.tail_high
    weights = np.append(blocks.count, tail).astype(np.float64)
    scores = np.append(blocks.score, blocks.tail_score).astype(np.float64)
    choice = ExponentialChoice(weights, scores, score.eta)
    tail_pick = blocks.count.shape[0]
    eta = Fraction(score.eta)
    out: list[int] = []
    while len(out) < draws:
        picks = choice.sample(rng, draws - len(out), _exact=_exact)
        inner = picks[picks != tail_pick]
        if inner.size:
            offsets = uniform_below(rng, blocks.count[inner].astype(np.uint64))
            out.extend((blocks.start[inner] + offsets.astype(np.int64)).tolist())
        for _ in range(int(np.count_nonzero(picks == tail_pick))):
            g = _tail_index(rng, blocks, grid.size)
            v = grid.values(np.array([g], dtype=np.int64))[0]
            a, b = src.count_below(float(v)), src.count_above(float(v))
            s_g = int(score.scores(np.array([a]), np.array([b]), n)[0])
            excess = eta * (s_g - blocks.tail_score)
            if bernoulli_exp_py(rng, excess.numerator, excess.denominator):
                out.append(g)
    return np.asarray(out, dtype=np.int64)
