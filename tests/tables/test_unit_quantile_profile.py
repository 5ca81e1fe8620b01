"""Per-person quantile sensitivities against brute force, for every level p.

With m rows per person, a person-level neighbour adds or removes at most m rows. The
profile of :func:`dpsense.statistics.units.per_unit` for quantiles is
``min(m A_row((k+1)m - 1), A_row(km + D(m, p)))`` (docs/tables.md §3). These tests check

* the lag D(m, p) against an enumeration of the proof's lemma over row-class counts;
* the profile against the brute-force person-level A(k) over every multiset of a small
  universe, and over every multiset of three values up to 24 records (where the shortcut
  ``A_row((k+1)m)`` fails for p = 0.1 and 0.9 at m = 3);
* that the old shortcut ``A_row((k+1)m - 1)`` fails where the audit found it false.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import dpsense as ds
from dpsense.statistics.units import per_unit, quantile_unit_lag

LEVELS = (0.1, 0.3, 0.5, 0.8, 0.9)
SMALL_UNIVERSE = (0.0, 1.0, 4.0, 10.0)
WIDE_UNIVERSE = (0.0, 1.0, 10.0)


# -- the lemma, over counts of rows below, inside and above a gap ------------------------
def _rank(n: int, p: Fraction) -> int:
    return -((-p.numerator * n) // p.denominator)


def _at_most_a(low: int, mid: int, high: int, p: Fraction) -> bool:
    """f <= a: at least r(n) rows at or below a."""
    return low >= _rank(low + mid + high, p)


def _at_least_b(low: int, mid: int, high: int, p: Fraction) -> bool:
    """f >= b: fewer than r(n) rows below b."""
    return low + mid < _rank(low + mid + high, p)


def _moves_to_band(low: int, mid: int, high: int, p: Fraction, reach: int) -> int:
    """Row moves to a dataset with no row inside the gap and the gap at a sensitive rank."""
    a, b = p.numerator, p.denominator
    q = max(a, b - a)
    best = math.inf
    for dl in range(-min(low, reach), reach + 1):
        for dh in range(-min(high, reach), reach + 1):
            g = a * (high + dh) - (b - a) * (low + dl)  # (p H - (1 - p) L) * den
            if -q < g <= q:
                best = min(best, mid + abs(dl) + abs(dh))
    return int(best)


def _unit_steps(m: int) -> list[tuple[int, int, int]]:
    steps = [
        (a, b, c)
        for a in range(m + 1)
        for b in range(m + 1)
        for c in range(m + 1)
        if 1 <= a + b + c <= m
    ]
    return steps + [(-a, -b, -c) for a, b, c in steps]


def _lemma_worst(m: int, p: Fraction, size: int) -> int:
    """max over (y, z) with z one unit from y and f crossing a gap [a, b] of the row moves
    from y to a dataset whose row-level local sensitivity covers that gap."""
    worst = 0
    steps = _unit_steps(m)
    for low, mid, high in itertools.product(range(size), range(m + 1), range(size)):
        below = _at_most_a(low, mid, high, p)
        above = _at_least_b(low, mid, high, p)
        for dl, dm, dh in steps:
            z = (low + dl, mid + dm, high + dh)
            if min(z) < 0:
                continue
            if (below and _at_least_b(*z, p)) or (above and _at_most_a(*z, p)):
                worst = max(worst, _moves_to_band(low, mid, high, p, 2 * m + 2))
                break
    return worst


@pytest.mark.parametrize(
    "p", [Fraction(1, 10), Fraction(3, 10), Fraction(1, 3), Fraction(1, 2), Fraction(4, 5)]
)
@pytest.mark.parametrize("m", [1, 2, 3])
def test_the_lag_is_the_lemmas_worst_case(p: Fraction, m: int) -> None:
    """Equality: the lag is what the lemma needs, no more (counts up to 2m / min(p, 1-p)
    reach every worst case; checked up to four times that while writing this test)."""
    size = math.ceil(2 * m / min(p, 1 - p)) + 2
    lag = quantile_unit_lag(m, p.numerator, p.denominator)
    assert _lemma_worst(m, p, size) == lag


def test_the_lag_is_m_minus_one_for_the_median_and_at_most_2m_minus_2() -> None:
    for m in range(1, 40):
        assert quantile_unit_lag(m, 1, 2) == m - 1
        for num, den in [(1, 10), (3, 10), (4, 5), (9, 10), (1, 1000), (999, 1000)]:
            assert m - 1 <= quantile_unit_lag(m, num, den) <= max(0, 2 * m - 2)
    assert quantile_unit_lag(3, 9, 10) == 4
    assert quantile_unit_lag(2, 4, 5) == 2


# -- brute force over multisets, as count vectors over a universe --------------------------
class _Counts:
    """Every multiset of ``universe`` with at most ``size`` records, as count vectors."""

    def __init__(self, universe: tuple[float, ...], size: int) -> None:
        self.universe = np.array(universe)
        self.size = size
        shape = (size + 1,) * len(universe)
        self.index = np.array(list(np.ndindex(*shape)), dtype=np.int64)
        self.n = self.index.sum(axis=1)
        self.shape = shape

    def values(self, stat: ds.Quantile) -> np.ndarray:
        out = np.full(self.shape, np.nan)
        for counts in self.index[self.n <= self.size]:
            data = np.repeat(self.universe, counts)
            out[tuple(counts)] = stat._value(data)
        return out


def _moves(dims: int, m: int) -> list[np.ndarray]:
    ups = [np.array(v) for v in itertools.product(range(m + 1), repeat=dims) if 1 <= sum(v) <= m]
    return ups + [-v for v in ups]


def _shift(table: np.ndarray, move: np.ndarray) -> np.ndarray:
    """table[c + move] aligned with table[c] (NaN where c + move leaves the table)."""
    out = np.full(table.shape, np.nan)
    src = tuple(slice(max(0, d), table.shape[i] + min(0, d)) for i, d in enumerate(move))
    dst = tuple(slice(max(0, -d), table.shape[i] - max(0, d)) for i, d in enumerate(move))
    out[dst] = table[src]
    return out


def _unit_sensitivities(values: np.ndarray, m: int, ks: int) -> list[np.ndarray]:
    """Brute-force person-level A(k) for k < ks at every count vector (NaN off the table)."""
    moves = _moves(values.ndim, m)
    local = np.full(values.shape, -np.inf)
    for move in moves:
        local = np.fmax(local, np.abs(values - _shift(values, move)))
    out = [local]
    for _ in range(1, ks):
        prev = out[-1]
        nxt = prev.copy()
        for move in moves:
            nxt = np.fmax(nxt, _shift(prev, move))
        out.append(nxt)
    return out


def _check_profile(universe: tuple[float, ...], size: int, m: int, p: float, ks: int) -> int:
    """Compare per_unit's profile with the brute force on every multiset whose whole
    neighbourhood lies in the table; return the number of (multiset, k) checked."""
    stat = ds.Quantile(p, 0, 10)
    unit = per_unit(stat, m)
    grid = _Counts(universe, size + ks * m)
    brute = _unit_sensitivities(grid.values(stat), m, ks)
    checked = 0
    for counts in grid.index[grid.n <= size]:
        data = np.repeat(grid.universe, counts)
        bound = unit.profile(data, "add-remove").at(np.arange(ks))
        for k in range(ks):
            truth = brute[k][tuple(counts)]
            assert bound[k] >= truth, (p, m, counts.tolist(), k, bound[k], truth)
            checked += 1
    return checked


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("p", LEVELS)
def test_profile_bounds_every_small_multiset(p: float, m: int) -> None:
    """Every multiset of {0, 1, 4, 10} with at most 5 records, k = 0 and 1."""
    assert _check_profile(SMALL_UNIVERSE, 5, m, p, 2) == 2 * math.comb(5 + 4, 4)


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("p", LEVELS)
def test_profile_bounds_every_multiset_of_three_values_up_to_24(p: float, m: int) -> None:
    assert _check_profile(WIDE_UNIVERSE, 24, m, p, 2) == 2 * math.comb(24 + 3, 3)


@pytest.mark.parametrize(("p", "x", "added"), [(0.9, 0.0, 10.0), (0.1, 10.0, 0.0)])
def test_where_a_lag_of_m_is_not_enough(p: float, x: float, added: float) -> None:
    """20 records at one end, two at 1 (or 9): three rows of one person at the other end
    move the quantile across the whole range, which A_row(3) (a lag of m = 3) misses."""
    other = 1.0 if x == 0.0 else 9.0
    data = np.array([x] * 20 + [other] * 2)
    stat = ds.Quantile(p, 0, 10)
    jump = abs(stat(np.concatenate([data, [added] * 3])) - stat(data))
    assert jump == 10.0
    row = stat.profile(data, "add-remove")
    assert row.at(np.array([3]))[0] < jump  # the shortcut A_row((k + 1) m) at k = 0
    assert per_unit(stat, 3).profile(data, "add-remove").at(np.array([0]))[0] >= jump


def test_the_old_shortcut_fails_where_the_audit_found_it() -> None:
    """A_row((k+1)m - 1) without the factor m: m = 2, p = 0.8, x = (0, 0, 0, 0, 4) has a
    person-level local sensitivity of 10 (two rows at 10 move the quantile from 0 to 10);
    the shortcut says 6."""
    stat = ds.Quantile(0.8, 0, 10)
    data = np.array([0.0, 0.0, 0.0, 0.0, 4.0])
    assert stat(np.concatenate([data, [10.0, 10.0]])) - stat(data) == 10.0
    assert stat.profile(data, "add-remove").at(np.array([1]))[0] == 6.0
    assert per_unit(stat, 2).profile(data, "add-remove").at(np.array([0]))[0] >= 10.0
