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
from dpsense.mechanisms.partition_selection import SelectionRule, select_groups
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


def test_selection_drops_one_person_groups_and_keeps_big_ones() -> None:
    """The selection itself on 20,000 groups of one person and 200 of 400: each one-person
    group is kept with probability at most delta / g, so none of them here (a chance below
    0.02 that any is); a threshold ten steps lower keeps 271 of them with this seed."""
    rule = SelectionRule.for_budget(1.0, 1e-6, 1)
    units = np.array([1] * 20_000 + [400] * 200)
    kept = select_groups(units, rule, SeededRandom(11))
    assert np.array_equal(kept, np.arange(20_000, 20_200))


@pytest.mark.slow
def test_groups_of_one_person_are_not_selected() -> None:
    """50 groups of one person each and one group of 400: over 200 releases (10,000 chances
    for a one-person group) none is kept, the big group always is. A threshold 20 lower
    would keep each one-person group with probability about 0.004 (about 40 here)."""
    frame = pd.DataFrame(
        {
            "person": [*range(400), *range(1000, 1050)],
            "g": ["big"] * 400 + [f"alone-{i}" for i in range(50)],
            "v": [1.0] * 450,
        }
    )
    rng = SeededRandom(5)
    kept_alone = kept_big = 0
    for _ in range(200):
        out = ds.release(
            frame, ds.Count(), by="g", privacy_unit="person", epsilon=1.0, delta=1e-6, rng=rng
        )
        kept_alone += sum(1 for key, _ in out if key != "big")
        kept_big += "big" in out
    assert kept_alone == 0
    assert kept_big == 200


YEARS = (1, 2, 3, 4)
ROWS = 4  # rows of each person in each year, and max_rows_per_unit


def _panel_pair() -> tuple[Any, Any]:
    rows = [(p, year, 5.0) for p in range(30) for year in YEARS for _ in range(ROWS)]
    x = pd.DataFrame(rows, columns=["person", "year", "v"])
    return x, x[x["person"] != 0]


FULL = 30 * ROWS  # each year's count on x; x' (person 0 removed) has FULL - ROWS


def _loss_statistic(counts: np.ndarray) -> float:
    """sum_i clip(c_i - (FULL - ROWS), 0, ROWS): for independent discrete Laplace noise on
    each year, the log-likelihood ratio of x against x' is an increasing function of it,
    so its extreme values carry the whole privacy loss (post-processing of the release)."""
    return float(np.clip(counts - (FULL - ROWS), 0, ROWS).sum())


def _grouped_sampler(data: Any, seed: int) -> Any:
    rng = SeededRandom(seed)

    def sample(count: int) -> np.ndarray:
        out = np.empty(count)
        for i in range(count):
            gr = ds.release(
                data,
                ds.Count(),
                by="year",
                keys=list(YEARS),
                privacy_unit="person",
                max_rows_per_unit=ROWS,
                max_groups_per_unit=len(YEARS),
                epsilon=1.0,
                rng=rng,
            )
            out[i] = _loss_statistic(np.array([r.value for _, r in gr]))
        return out

    return sample


@pytest.mark.slow
def test_grouped_per_person_count_passes_the_audit() -> None:
    """Removing person 0 takes m = 4 rows from each of g = 4 groups. Each group's count
    has discrete Laplace noise of scale m g / epsilon = 16 and moves by 4: epsilon / 4 per
    year, exactly epsilon = 1 together. Forgetting the split over groups, or the m rows of
    a person, divides the scale by 4: ln ratio 4 on this pair, which the audit of the
    likelihood-ratio statistic sees (both are mutants of scripts/mutation_check.py)."""
    x, y = _panel_pair()
    audit = histogram_audit(
        _grouped_sampler(x, 1), _grouped_sampler(y, 2), epsilon=1.0, n=AUDIT_DRAWS, bins=8
    )
    assert audit.passed, str(audit)


def test_the_audit_sees_noise_four_times_too_small() -> None:
    """The same pair and audit size with each year's noise at scale 4 instead of 16 (a
    reference in numpy): the audit fails, so it has the power to catch those mutants."""
    rs = np.random.default_rng(9)

    def wrong(centre: int) -> Any:
        def sample(k: int) -> np.ndarray:
            p = 1 - math.exp(-1 / 4.0)
            z = rs.geometric(p, (k, len(YEARS))) - rs.geometric(p, (k, len(YEARS)))
            return np.array([_loss_statistic(row) for row in centre + z])

        return sample

    audit = histogram_audit(wrong(FULL), wrong(FULL - ROWS), epsilon=1.0, n=AUDIT_DRAWS, bins=8)
    assert not audit.passed
