"""Statistics built without bounds: nothing is evaluated until bounds are given."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.statistics import BoundedStatistic, make_statistic

UNBOUNDED: dict[str, BoundedStatistic] = {
    "sum": ds.Sum(),
    "mean": ds.Mean(),
    "variance": ds.Variance(),
    "std": ds.Std(),
    "quantile": ds.Quantile(0.9),
    "median": ds.Median(),
    "median, resolution": ds.Median(resolution=1),
    "quantiles": ds.Quantiles([0.1, 0.5, 0.9]),
    "trimmed mean": ds.TrimmedMean(2),
}

X = [3.0, 5.0, 8.0, 13.0]

USES: dict[str, Callable[[BoundedStatistic], Any]] = {
    "call": lambda s: s(X),
    "global": lambda s: s.global_sensitivity(),
    "local": lambda s: s.local_sensitivity(X),
    "distance k": lambda s: s.sensitivity_at_distance(X, 2),
    "smooth": lambda s: s.smooth_sensitivity(X, 0.1),
    "instability": lambda s: s.distance_to_instability(X, 1.0),
    "batch": lambda s: s.evaluate_batch([X, X]),
    "clip": lambda s: s.clip(np.asarray(X)),
}


@pytest.mark.parametrize("name", list(UNBOUNDED))
def test_built_without_bounds(name: str) -> None:
    stat = UNBOUNDED[name]
    assert stat.lower is None
    assert stat.upper is None
    assert not stat.has_bounds


CASES = [
    (name, use)
    for name in UNBOUNDED
    for use in USES
    if not (name == "quantiles" and use == "batch")  # a vector: no batch value at all
]


@pytest.mark.parametrize(("name", "use"), CASES)
def test_every_use_without_bounds_says_both_ways(name: str, use: str) -> None:
    stat = UNBOUNDED[name]
    with pytest.raises(ds.InputError) as info:
        USES[use](stat)
    message = str(info.value)
    assert "bounds='private'" in message
    assert "0, 100)" in message  # an example with bounds
    assert "never infers" in message


def test_the_example_is_the_statistics_own_call() -> None:
    with pytest.raises(ds.InputError, match=r"ds\.Quantile\(0\.9, 0, 100\)"):
        ds.Quantile(0.9)(X)
    with pytest.raises(ds.InputError, match=r"ds\.Quantiles\(\[0\.1, 0\.5\], 0, 100\)"):
        ds.Quantiles([0.1, 0.5])(X)
    with pytest.raises(ds.InputError, match=r"ds\.TrimmedMean\(2, 0, 100\)"):
        ds.TrimmedMean(2)(X)
    with pytest.raises(ds.InputError, match=r"ds\.Median\(0, 100\)"):
        ds.Median(resolution=1).candidates()


def test_positional_construction_is_unchanged() -> None:
    assert ds.Median(0, 100) == ds.Median(lower=0, upper=100)
    assert (ds.Median(0, 100).lower, ds.Median(0, 100).upper) == (0.0, 100.0)
    q = ds.Quantile(0.5, 0, 100)
    assert (q.p, q.lower, q.upper, q.resolution) == (0.5, 0.0, 100.0, None)
    assert ds.Median(0, 100, resolution=1).resolution == 1.0
    assert ds.Median(0, 100, 1).candidates().size == 101
    several = ds.Quantiles([0.1, 0.9], 0, 100)
    assert (several.ps, several.lower, several.upper) == ((0.1, 0.9), 0.0, 100.0)
    assert ds.TrimmedMean(1, 0, 10)(X) == ds.Mean(0, 10)([5.0, 8.0])
    assert ds.Sum(0, 10)(X) == 3.0 + 5.0 + 8.0 + 10.0  # 13 clipped to 10


@pytest.mark.parametrize("name", list(UNBOUNDED))
def test_with_bounds_is_the_bounded_statistic(name: str) -> None:
    stat = UNBOUNDED[name]
    bounded = stat.with_bounds(0, 10)
    assert bounded.has_bounds
    assert (bounded.lower, bounded.upper) == (0.0, 10.0)
    assert type(bounded) is type(stat)
    assert not stat.has_bounds  # a new object: the original keeps no bounds
    fields = {f.name: getattr(stat, f.name) for f in dataclasses.fields(stat) if f.init}
    fields.update(lower=0, upper=10)
    assert bounded == type(stat)(**fields)
    np.testing.assert_array_equal(bounded(X), type(stat)(**fields)(X))


def test_with_bounds_builds_the_resolution_grid() -> None:
    got = ds.Median(resolution=1).with_bounds(0, 50).candidates()
    want = ds.Median(0, 50, resolution=1).candidates()
    assert got.size == want.size == 51


def test_with_bounds_validates_them() -> None:
    with pytest.raises(ds.InputError, match="lower < upper"):
        ds.Median().with_bounds(5, 1)


def test_statistics_stay_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ds.Median().lower = 0.0  # type: ignore[misc]


@pytest.mark.parametrize("call", [lambda: ds.Median(0), lambda: ds.Mean(upper=3)])
def test_one_bound_alone_is_an_error(call: Callable[[], object]) -> None:
    with pytest.raises(ds.InputError, match="give both bounds"):
        call()


def test_make_statistic_without_bounds() -> None:
    assert make_statistic("median") == ds.Median()
    assert make_statistic("quantiles", p=(0.2, 0.8)) == ds.Quantiles([0.2, 0.8])
    with pytest.raises(ds.InputError, match="'upper'"):
        make_statistic("mean", 0)


def test_count_needs_no_bounds() -> None:
    assert ds.Count()(X) == 4.0
