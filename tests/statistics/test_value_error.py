"""value_error really bounds |computed - exact| (docs/sensitivity.md §Floating-point error of f).

Every statistic is checked against exact rational arithmetic (fractions.Fraction) on
adversarial data: huge offsets relative to the width, mixed magnitudes, cancellation, ties
and n up to 1e5. The bounds must not depend on the data or on n.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import dpsense as ds
from dpsense.statistics import BoundedStatistic
from dpsense.statistics._exact import RecordGrid

U = Fraction(1, 2**53)


def exact_mean(x: np.ndarray) -> Fraction:
    return sum((Fraction(v) for v in x.tolist()), Fraction(0)) / x.shape[0]


def exact_variance(x: np.ndarray) -> Fraction:
    mu = exact_mean(x)
    return sum(((Fraction(v) - mu) ** 2 for v in x.tolist()), Fraction(0)) / x.shape[0]


def exact_value(stat: ds.Statistic, xc: np.ndarray) -> Fraction:
    """The exact real statistic f on clipped data (Sum: the sum of the grid values)."""
    n = xc.shape[0]
    if isinstance(stat, ds.Sum):
        grid = RecordGrid.for_bounds(stat.lower, stat.upper)
        g, c = Fraction(grid.grid), Fraction(grid.centre)
        total = Fraction(0)
        for v in xc.tolist():
            k = round(Fraction(v - grid.centre) / g)  # fl(x - c) is part of the record map
            total += c + g * min(max(k, grid.k_low), grid.k_high)
        return total
    if isinstance(stat, ds.Count):
        return Fraction(n)
    assert isinstance(stat, BoundedStatistic)
    if isinstance(stat, ds.TrimmedMean):
        m = stat.trim
        if n <= 2 * m:
            return Fraction(stat.midpoint)
        return exact_mean(np.sort(xc)[m : n - m])
    if isinstance(stat, ds.Quantile):
        return Fraction(stat._value(xc))  # a data value: checked separately below
    if n == 0:
        return Fraction(stat.midpoint) if isinstance(stat, ds.Mean) else Fraction(0)
    if isinstance(stat, ds.Mean):
        return exact_mean(xc)
    return exact_variance(xc)  # Variance and Std (Std compares squares)


def within(stat: ds.Statistic, computed: Fraction, exact: Fraction, bound: float) -> bool:
    e = Fraction(bound)
    if isinstance(stat, ds.Std):  # |s^ - sqrt(V)| <= e  <=>  (s^ - e)^2 <= V <= (s^ + e)^2
        low = max(computed - e, Fraction(0))
        return low * low <= exact <= (computed + e) ** 2
    return abs(computed - exact) <= e


def adversarial(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    kind = rng.integers(5)
    w = hi - lo
    if kind == 0:  # continuous
        x = rng.uniform(lo, hi, n)
    elif kind == 1:  # at the bounds (largest spread, most cancellation in the variance)
        x = rng.choice([lo, hi], n)
    elif kind == 2:  # clustered near one bound (tiny variance far from the centre)
        x = hi - w * 1e-9 * rng.random(n)
    elif kind == 3:  # mixed magnitudes within the bounds
        x = lo + w * 10.0 ** rng.uniform(-17, 0, n)
    else:  # ties and data outside the bounds (clipped)
        x = rng.choice([lo - w, lo, 0.5 * lo + 0.5 * hi, hi, hi + w], n)
    return np.clip(x, lo, hi)


BOUNDS = [
    (0.0, 1.0),
    (2.0**52, 2.0**52 + 4.0),  # huge offset: doubles are integers here
    (1e15, 1e15 + 0.25),  # huge offset, the width is two doubles apart
    (-1e150, 1e150),  # huge width (w^2 still finite)
    (-3.0, 1e-300),
    (1e8, 1e8 + 1.0),  # cancellation
]


def statistics_for(lo: float, hi: float) -> list[ds.Statistic]:
    return [
        ds.Count(),
        ds.Sum(lo, hi),
        ds.Mean(lo, hi),
        ds.Variance(lo, hi),
        ds.Std(lo, hi),
        ds.Median(lo, hi),
        ds.Quantile(0.9, lo, hi),
        ds.TrimmedMean(1, lo, hi),
    ]


@pytest.mark.parametrize(("lo", "hi"), BOUNDS)
def test_value_error_bounds_the_error_against_exact_arithmetic(lo: float, hi: float) -> None:
    rng = np.random.default_rng(20260923)
    sizes = [0, 1, 2, 3, 4, 5, 17, 100, 1000]
    for stat in statistics_for(lo, hi):
        assert stat.value_error >= 0.0
        assert stat.exact_value_error >= 0.0
        assert stat.exact_value_error <= stat.value_error
        for n in sizes:
            for _ in range(6 if n < 100 else 2):
                xc = stat.clip(adversarial(rng, lo, hi, n))
                exact = exact_value(stat, xc)
                value = stat._value(xc)
                assert math.isfinite(value)
                if not isinstance(stat, ds.Sum):  # Sum: value_error is inf by design
                    assert within(stat, Fraction(value), exact, stat.value_error), (stat, n)
                computed = stat._value_exact(xc)
                assert within(stat, computed, exact, stat.exact_value_error), (stat, n)
                if isinstance(stat, ds.Quantile):
                    assert value in xc.tolist() or (n == 0 and value == lo)
                if n:
                    batch = stat.evaluate_batch(np.vstack([xc, xc[::-1]]))
                    assert batch.tolist() == [value, stat._value(xc[::-1])]


@pytest.mark.parametrize(("lo", "hi"), [(2.0**52, 2.0**52 + 4.0), (-7.5, 1e6)])
def test_large_n(lo: float, hi: float) -> None:
    rng = np.random.default_rng(7)
    for stat in (ds.Mean(lo, hi), ds.Variance(lo, hi), ds.Sum(lo, hi), ds.TrimmedMean(3, lo, hi)):
        xc = stat.clip(adversarial(rng, lo, hi, 100_000))
        exact = exact_value(stat, xc)
        assert within(stat, stat._value_exact(xc), exact, stat.exact_value_error)
        if not isinstance(stat, ds.Sum):
            assert within(stat, Fraction(stat._value(xc)), exact, stat.value_error)


def test_bounds_are_small_relative_to_the_width_and_do_not_grow_with_the_offset() -> None:
    for lo in (0.0, 1e3, 2.0**52, -1e15):
        w = 4.0
        mean = ds.Mean(lo, lo + w)
        assert mean.exact_value_error <= 1e-15 * w  # independent of the offset
        assert ds.Variance(lo, lo + w).value_error <= 1e-14 * w * w
        assert ds.Std(lo, lo + w).value_error <= 1e-7 * w
        assert ds.TrimmedMean(2, lo, lo + w).exact_value_error <= 1e-15 * w
    assert ds.Sum(0.0, 1.0).exact_value_error == 0.0
    assert ds.Median(0.0, 1.0).value_error == 0.0
    assert ds.Count().value_error == 0.0


def test_the_mean_near_2_pow_52_is_exact_where_numpy_is_not() -> None:
    a = 2.0**52
    x = np.array([a, a, a + 2.0, a + 4.0])  # exact mean a + 1.5
    stat = ds.Mean(a, a + 4.0)
    assert stat._value_exact(x) == Fraction(a) + Fraction(3, 2)
    assert float(np.mean(x)) == a + 2.0  # numpy's sum rounds 4a + 6 up to 4a + 8


def test_sum_record_map_stays_in_bounds_and_close_to_each_record() -> None:
    rng = np.random.default_rng(3)
    for lo, hi in BOUNDS:
        grid = RecordGrid.for_bounds(lo, hi)
        w = Fraction(hi) - Fraction(lo)
        assert Fraction(grid.grid) <= w / 2**40
        x = np.clip(adversarial(rng, lo, hi, 200), lo, hi)
        for v, k in zip(x.tolist(), grid.integers(x).tolist(), strict=True):
            phi = grid.value(k)
            assert Fraction(lo) <= phi <= Fraction(hi)
            assert abs(phi - Fraction(v)) <= Fraction(grid.grid) + U * w
