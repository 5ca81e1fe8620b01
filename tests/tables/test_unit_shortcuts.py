"""Every other per-person shortcut against brute force (docs/tables.md §3).

* The generic profile ``m A_row((k+1)m - 1)`` of Count, Sum, Mean, Variance, Std and
  TrimmedMean bounds the brute-force person-level A(k), k = 0 and 1, on every multiset of
  {0, 1, 4, 10} with at most 5 records, m = 2 and 3.
* Methods calibrated by group privacy run their row-level mechanism at the budget
  ``group_privacy_budget`` gives (captured from real per-person releases), and at that
  budget the exact output law of the exponential mechanism (one quantile) and of
  recursive halving (several) moves by at most epsilon over every person-level
  neighbour (m rows added or removed) of small datasets.
* The mean estimators (KSW, bounded-LS) are handed the group-privacy budget.
"""

from __future__ import annotations

import importlib
import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
import dpsense.methods.exponential as exponential_method
from dpsense.mechanisms.quantiles import QuantileCall, RecursiveQuantiles
from dpsense.methods.exponential import interval_budget
from dpsense.statistics.units import group_privacy_budget, per_unit
from tests.mechanisms.test_several_quantiles import GRID, call_pmf, exact_law
from tests.tables.test_unit_quantile_profile import SMALL_UNIVERSE, _Counts, _unit_sensitivities

release_module = importlib.import_module("dpsense.query.methods")  # where methods are dispatched

GENERIC = [
    ds.Count(),
    ds.Sum(0, 10),
    ds.Mean(0, 10),
    ds.Variance(0, 10),
    ds.Std(0, 10),
    ds.TrimmedMean(1, 0, 10),
]


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("stat", GENERIC, ids=lambda s: s.name)
def test_generic_profile_bounds_every_small_multiset(stat: ds.Statistic, m: int) -> None:
    unit = per_unit(stat, m)
    grid = _Counts(SMALL_UNIVERSE, 5 + 2 * m)
    brute = _unit_sensitivities(grid.values(stat), m, 2)  # type: ignore[arg-type]
    checked = 0
    for counts in grid.index[grid.n <= 5]:
        data = np.repeat(grid.universe, counts)
        bound = unit.profile(data, "add-remove").at(np.arange(2))
        for k in range(2):
            truth = brute[k][tuple(counts)]
            # the profile bounds real numbers; the values are floating-point means
            assert bound[k] * (1 + 1e-12) + 1e-12 >= truth, (counts.tolist(), k)
            checked += 1
    assert checked == 2 * math.comb(5 + 4, 4)
    assert unit.global_sensitivity() >= np.nanmax(brute[0]) - 1e-12


# -- group privacy, captured from the real release path ----------------------------------
def _panel(values: list[float], rows: int) -> pd.DataFrame:
    return pd.DataFrame(
        {"person": np.repeat(np.arange(len(values)), rows), "v": np.repeat(values, rows)}
    )


def _captured(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    """Record every instance of ``module.name`` built while the test runs."""
    seen: list[Any] = []
    original = getattr(module, name)

    class Recording(original):  # type: ignore[misc, valid-type]
        def __post_init__(self) -> None:  # both are frozen dataclasses
            super().__post_init__()
            seen.append(self)

    monkeypatch.setattr(module, name, Recording)
    return seen


def _person_neighbours(x: list[float], m: int) -> list[list[float]]:
    """Every dataset one person away: at most m rows added, or at most m removed."""
    out = []
    for j in range(1, m + 1):
        out += [
            sorted([*x, *add]) for add in itertools.combinations_with_replacement(GRID_VALUES, j)
        ]
        out += [
            [v for i, v in enumerate(x) if i not in gone]
            for gone in map(set, itertools.combinations(range(len(x)), j))
        ]
    return out


GRID_VALUES = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
DATASETS = [[], [2.0], [1.0, 3.0, 4.0], [0.0, 0.0, 5.0], [2.0, 2.0, 2.0, 3.0], [0.0, 1.0, 4.0]]


def _worst_log_ratio(law: Any, datasets: list[list[float]], m: int) -> float:
    worst = 0.0
    for x in datasets:
        base = law(x)
        for y in _person_neighbours(x, m):
            other = law(y)
            worst = max(worst, float(np.max(np.abs(np.log(base) - np.log(other)))))
    return worst


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("p", [0.3, 0.5, 0.8])
def test_one_quantile_by_the_exponential_mechanism_per_person(
    monkeypatch: pytest.MonkeyPatch, p: float, m: int
) -> None:
    seen = _captured(monkeypatch, exponential_method, "ExponentialQuantile")
    eps = 1.0
    ds.release(
        _panel([1.0, 2.0, 4.0], m),
        ds.Quantile(p, 0, 5, resolution=1),
        column="v",
        privacy_unit="person",
        max_rows_per_unit=m,
        method="exponential",
        epsilon=eps,
        rng=3,
    )
    (mech,) = seen
    # the value's share of the row-level epsilon (the rest: its interval's endpoints)
    assert mech.epsilon == interval_budget(group_privacy_budget(eps, 0.0, m)[0])[0]
    call = QuantileCall(0, mech._grid, mech._score)

    def law(x: list[float]) -> np.ndarray:
        return call_pmf(np.array(x, dtype=float), call)

    worst = _worst_log_ratio(law, DATASETS, m)
    assert 0.3 * eps < worst <= eps + 1e-9


@pytest.mark.parametrize("m", [2, 3])
def test_several_quantiles_per_person(monkeypatch: pytest.MonkeyPatch, m: int) -> None:
    seen = _captured(monkeypatch, exponential_method, "RecursiveQuantiles")
    eps = 1.0
    ds.release(
        _panel([1.0, 2.0, 4.0], m),
        ds.Quantiles([0.25, 0.75], 0, 5),
        column="v",
        privacy_unit="person",
        max_rows_per_unit=m,
        method="exponential",
        joint=True,  # two levels are released one at a time by default: ask for the joint
        epsilon=eps,
        rng=3,
    )
    (built,) = seen
    # the values' share of the row-level epsilon (the rest: their intervals' endpoints)
    row_epsilon = interval_budget(group_privacy_budget(eps, 0.0, m)[0])[0]
    assert built.epsilon == row_epsilon
    mech = RecursiveQuantiles(built.levels, GRID, row_epsilon, "add-remove")
    outcomes: list[tuple[float, ...]] = sorted(exact_law(mech, np.array([1.0, 2.0])))

    def law(x: list[float]) -> np.ndarray:
        joint = exact_law(mech, np.array(x, dtype=float))
        return np.array([joint.get(o, 0.0) for o in outcomes])

    worst = _worst_log_ratio(law, [[], [2.0], [1.0, 3.0, 4.0], [0.0, 0.0, 5.0]], m)
    assert 0.2 * eps < worst <= eps + 1e-9


@pytest.mark.parametrize("m", [2, 3])
def test_quantile_levels_one_at_a_time_per_person(monkeypatch: pytest.MonkeyPatch, m: int) -> None:
    """Released one level at a time, each level's mechanism gets its equal part of the
    values' share of the row-level epsilon (the per-person budget divided by m rows)."""
    seen = _captured(monkeypatch, exponential_method, "ExponentialQuantile")
    eps = 1.0
    out = ds.release(
        _panel([1.0, 2.0, 4.0], m),
        ds.Quantiles([0.25, 0.75], 0, 5),
        column="v",
        privacy_unit="person",
        max_rows_per_unit=m,
        epsilon=eps,
        rng=3,
    )
    assert out.parameters["joint"] is False
    point = interval_budget(group_privacy_budget(eps, 0.0, m)[0])[0]
    assert [q.epsilon for q in seen] == [point / 2, point / 2]
    assert sum(q.epsilon for q in seen) <= point


@pytest.mark.parametrize(("method", "delta"), [("ksw", 0.0), ("bounded-ls", 1e-6)])
def test_mean_estimators_get_the_group_privacy_budget(
    monkeypatch: pytest.MonkeyPatch, method: str, delta: float
) -> None:
    """The release path wraps the estimator (ksw_mean, bounded_ls_mean) in the adapter
    that applies group privacy; a spy in its place records what the estimator is given."""
    calls: list[dict[str, Any]] = []
    estimator = getattr(release_module, "ksw_mean" if method == "ksw" else "bounded_ls_mean")

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return estimator(*args, **kwargs)

    monkeypatch.setitem(
        release_module.DISPATCH,
        method,
        release_module._for_means(method, spy, takes_delta=method == "bounded-ls"),
    )
    m, eps = 3, 0.9
    out = ds.release(
        _panel([1.0, 2.0, 4.0] * 40, m),
        ds.Mean(0, 5),
        column="v",
        privacy_unit="person",
        max_rows_per_unit=m,
        method=method,
        epsilon=eps,
        delta=delta,
        rng=3,
    )
    (kwargs,) = calls
    row_eps, row_delta = group_privacy_budget(eps, delta, m)
    assert kwargs["epsilon"] == row_eps
    assert Fraction(kwargs["epsilon"]) * m <= Fraction(eps)
    if method == "bounded-ls":
        assert kwargs["delta"] == row_delta
        assert m * math.exp((m - 1) * row_eps) * row_delta <= delta
    assert out.epsilon == eps
