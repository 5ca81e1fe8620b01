"""Privacy of per-unit and grouped releases.

* Unit-level sensitivities (m rows per unit) against brute force on small tables: every
  dataset within k units and every unit-neighbour of it, over a small value universe.
* Private partition selection: the threshold's tail bound, exactly.
* An audit of one grouped per-unit release: x has a person with two rows in each of two
  groups; x' is x without that person.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.audit import histogram_audit
from dpsense.mechanisms.partition_selection import SelectionRule
from dpsense.noise.rng import SeededRandom
from dpsense.statistics.units import group_privacy_budget, per_unit, rows_per_unit

pd = pytest.importorskip("pandas")

UNIVERSE = (0.0, 1.0, 4.0, 10.0)
AUDIT_DRAWS = 800


def _within(x: tuple[float, ...], moves: int) -> set[tuple[float, ...]]:
    """Every multiset at most ``moves`` row additions or removals away from x."""
    seen = {tuple(sorted(x))}
    frontier = set(seen)
    for _ in range(moves):
        nxt: set[tuple[float, ...]] = set()
        for y in frontier:
            nxt.update(y[:i] + y[i + 1 :] for i in range(len(y)))
            nxt.update(tuple(sorted((*y, v))) for v in UNIVERSE)
        frontier = nxt - seen
        seen |= frontier
    return seen


def _brute_force(stat: ds.Statistic, x: tuple[float, ...], k: int, m: int) -> float:
    """max over y within k units (<= k m rows) and z within one unit (<= m rows) of y."""
    f = {}

    def value(y: tuple[float, ...]) -> float:
        if y not in f:
            f[y] = stat._value(np.array(y, dtype=float))
        return f[y]

    return max(abs(value(y) - value(z)) for y in _within(x, k * m) for z in _within(y, m))


STATS = [
    ds.Median(0, 10),
    ds.Quantile(0.3, 0, 10),
    ds.Quantile(0.8, 0, 10),
    ds.Mean(0, 10),
    ds.Sum(0, 10),
    ds.Count(),
    ds.Variance(0, 10),
]


@pytest.mark.parametrize("stat", STATS, ids=lambda s: s.name)
def test_unit_profile_bounds_brute_force(stat: ds.Statistic) -> None:
    rs = np.random.default_rng(77)
    m = 2
    unit = per_unit(stat, m)
    assert rows_per_unit(unit) == m
    assert isinstance(unit, type(stat))
    for _ in range(12):
        n = int(rs.integers(0, 4))
        x = tuple(sorted(rs.choice(UNIVERSE, n).tolist()))
        profile = unit.profile(np.array(x, dtype=float), "add-remove")
        for k in (0, 1):
            bound = float(profile.at(np.array([k]))[0])
            assert bound + 1e-9 >= _brute_force(stat, x, k, m), (x, k)
    # global sensitivity in units bounds every unit change of every small dataset
    if not isinstance(stat, ds.Count):
        worst = max(
            _brute_force(stat, x, 0, m)
            for n in range(3)
            for x in itertools.combinations_with_replacement(UNIVERSE, n)
        )
        assert unit.global_sensitivity("add-remove") + 1e-9 >= worst


def test_group_privacy_budget_composes_back() -> None:
    for eps, dlt, m in [(1.0, 1e-6, 2), (0.3, 1e-8, 5), (2.0, 0.0, 3)]:
        e, d = group_privacy_budget(eps, dlt, m)
        assert m * e <= eps
        assert m * math.exp((m - 1) * e) * d <= dlt * (1 + 1e-15)


@pytest.mark.parametrize(
    ("eps", "delta", "g"), [(0.5, 1e-6, 1), (1.0, 1e-8, 3), (0.1, 1e-5, 8), (3.0, 1e-9, 2)]
)
def test_selection_threshold_tail_is_at_most_delta(eps: float, delta: float, g: int) -> None:
    rule = SelectionRule.for_budget(eps, delta, g)
    assert rule.scale >= Fraction(g) / Fraction(eps)
    # P(Z >= t) for discrete Laplace, summed exactly from its pmf in exact rationals-ish
    b = float(rule.scale)
    q = math.exp(-1.0 / b)
    t = rule.threshold - 1
    tail = sum((1 - q) / (1 + q) * q**z for z in range(t, t + int(60 * b) + 10))
    assert g * tail <= delta
    assert rule.tail(g) <= delta
    # and the threshold is not wasteful: one step lower would break the bound
    assert g * (1 - q) / (1 + q) * q ** (t - 2) / (1 - q) > delta


def test_a_group_of_one_person_is_not_selected() -> None:
    frame = pd.DataFrame(
        {
            "person": [*list(range(400)), 999],
            "g": ["big"] * 400 + ["alone"],
            "v": [1.0] * 401,
        }
    )
    rng = SeededRandom(5)
    kept_alone = kept_big = 0
    for _ in range(200):
        out = ds.release(
            frame, ds.Count(), by="g", privacy_unit="person", epsilon=1.0, delta=1e-6, rng=rng
        )
        kept_alone += "alone" in out
        kept_big += "big" in out
    assert kept_alone == 0
    assert kept_big == 200


def _panel_pair() -> tuple[Any, Any]:
    rows = [(p, year, 5.0) for p in range(30) for year in (1, 2) for _ in range(2)]
    x = pd.DataFrame(rows, columns=["person", "year", "v"])
    return x, x[x["person"] != 0]


def _grouped_sampler(data: Any, seed: int, split: bool = True) -> Any:
    rng = SeededRandom(seed)

    def sample(count: int) -> np.ndarray:
        out = np.empty(count)
        for i in range(count):
            gr = ds.release(
                data,
                ds.Count(),
                by="year",
                keys=[1, 2],
                privacy_unit="person",
                max_rows_per_unit=2,
                max_groups_per_unit=2,
                epsilon=1.0,
                rng=rng,
            )
            out[i] = gr[1].value + gr[2].value  # post-processing of the whole release
        return out

    return sample


@pytest.mark.slow
def test_grouped_per_person_count_passes_the_audit() -> None:
    """Removing person 0 takes 2 rows from each of 2 groups. Each group's count has
    discrete Laplace noise of scale m g / epsilon = 4; the sum of both moves by 4, which
    costs exactly epsilon = 1. Spending the whole epsilon on every group (the wrong split)
    gives ln ratio 2 on this pair, which the audit sees."""
    x, y = _panel_pair()
    audit = histogram_audit(
        _grouped_sampler(x, 1), _grouped_sampler(y, 2), epsilon=1.0, n=AUDIT_DRAWS, bins=8
    )
    assert audit.passed, str(audit)


def test_the_audit_sees_a_budget_not_split_over_groups() -> None:
    """The same pair and audit size, with noise of scale m / epsilon = 2 per group (a
    reference in numpy): the audit fails, so it has the power to catch that mutant."""
    rs = np.random.default_rng(9)

    def wrong(total: float) -> Any:
        def sample(k: int) -> np.ndarray:
            p = 1 - math.exp(-1 / 2.0)
            z = rs.geometric(p, (k, 2)) - rs.geometric(p, (k, 2))
            return total + z.sum(axis=1)

        return sample

    audit = histogram_audit(wrong(120.0), wrong(116.0), epsilon=1.0, n=AUDIT_DRAWS, bins=8)
    assert not audit.passed
