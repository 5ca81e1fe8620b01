"""The numpy path's one-pass scans (``statistics._order``) against brute force.

* ``counts_below_points`` is exact (``#{x < c}``) for any sorted points: equal steps,
  uneven ones (a ladder: bins holding several points), repeated and infinite points, on
  records tied at the points, one ulp either side of them, NaN, ±inf and huge values, all
  equal, tiny and large n.
* ``select_sorted(..., runs=True)`` returns exactly the ranks it claims, and on tied data
  a window that holds the neighbouring runs.
* Seeded releases are those of the code before the scans (values recorded from commit
  fa3bc3d with the same seeds): the scans only change how fast the same counts come.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.noise.rng import SeededRandom
from dpsense.statistics._order import counts_below_points, select_sorted

LADDER = np.concatenate([20.0 + np.array([-1.0, 1.0])[:, None] * 2.0 ** np.arange(-30, 6)])
POINTS: dict[str, Any] = {
    "equal steps": np.linspace(0.0, 100.0, 65),
    "one point": np.array([3.0]),
    "ladder": np.sort(np.concatenate([LADDER.ravel(), [0.0, 100.0]])),
    "repeated": np.array([5.0, 5.0, 5.0, 7.0, 7.0]),
    "infinite": np.array([-np.inf, 0.0, 1.0, np.inf]),
    "huge": np.array([-1e300, 0.0, 5e-324, 1e300]),
    "random": np.sort(np.random.default_rng(3).normal(0.0, 10.0, 37)),
}


def _records(points: Any, n: int, seed: int) -> Any:
    rs = np.random.default_rng(seed)
    specials = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e308, -1e308, 5e-324]
    pool = np.concatenate([points, rs.normal(20.0, 30.0, 64), specials])
    x = rs.choice(pool, n)
    third = n // 3
    x[:third] = np.nextafter(x[:third], rs.choice([np.inf, -np.inf], third))
    return x


def _brute(x: Any, points: Any) -> list[int]:
    return [int(np.count_nonzero(x < c)) for c in points]


@pytest.mark.parametrize("name", list(POINTS))
@pytest.mark.parametrize("n", [0, 1, 2, 7, 65_537, 300_001])
def test_counts_equal_brute_force(name: str, n: int) -> None:
    points = POINTS[name]
    for seed in range(3 if n < 1000 else 1):
        x = _records(points, n, seed)
        assert counts_below_points(x, points).tolist() == _brute(x, points)


@pytest.mark.parametrize("name", list(POINTS))
def test_counts_on_all_equal_records(name: str) -> None:
    points = POINTS[name]
    for v in [float(points[0]), float(points[-1]), 20.0, np.nan, np.inf]:
        x = np.full(70_000, v)
        assert counts_below_points(x, points).tolist() == _brute(x, points)


def test_counts_of_clipped_records_at_the_bounds() -> None:
    x = np.clip(np.random.default_rng(1).normal(50.0, 80.0, 200_000), 0.0, 100.0)
    points = np.linspace(0.0, 100.0, 65)
    assert counts_below_points(x, points).tolist() == _brute(x, points)


@pytest.mark.parametrize("kind", ["tied", "continuous", "two values"])
def test_select_sorted_runs(kind: str) -> None:
    rs = np.random.default_rng(5)
    n = 400_000
    if kind == "tied":
        x = rs.integers(0, 100, n).astype(float)
    elif kind == "continuous":
        x = rs.lognormal(3.0, 0.5, n)
    else:
        x = np.where(rs.random(n) < 0.5, 1.0, 2.0)
    before = x.copy()
    want = np.sort(x)
    for lo, hi in [(n // 2 - 50, n // 2 + 50), (n // 10, n // 10 + 3), (n - 300, n - 200)]:
        picked = select_sorted(x, lo, hi, runs=True)
        assert np.array_equal(x, before)  # not reordered
        if picked is None:
            continue
        window, offset = picked
        assert offset <= lo
        assert offset + window.shape[0] > hi
        assert np.array_equal(window, want[offset : offset + window.shape[0]])
        if kind == "tied":  # the runs next to x_(lo) and x_(hi) are inside, if any
            assert window[0] < want[lo] or want[0] == want[lo]
            assert window[-1] > want[hi] or want[-1] == want[hi]


def _cases() -> dict[str, tuple[Any, Any]]:
    rs = np.random.default_rng(2024)
    return {
        "lognormal": (rs.lognormal(3.0, 0.5, 200_000), ds.Median(0, 100)),
        "tied": (rs.integers(0, 100, 200_000).astype(float), ds.Median(0, 1000, resolution=1.0)),
        "all_equal": (np.full(150_000, 7.0), ds.Median(0, 100)),
        "p90_with_inf": (
            np.concatenate([rs.gamma(2.0, 10.0, 150_000), [np.inf, -np.inf] * 10]),
            ds.Quantile(0.9, 0, 100),
        ),
    }


RECORDED = {  # commit fa3bc3d, SeededRandom(3), epsilon 1 (p90: the joint interval pair, 0.15)
    "lognormal": (20.071298643946648, (18.75, 20.3125)),
    "tied": (49.0, (46.0, 63.0)),
    "all_equal": (7.0, (6.25, 7.8125)),
    "p90_with_inf": (39.02613288164139, (37.5, 40.625)),
}


@pytest.mark.parametrize("method", ["exponential", "auto"])
def test_seeded_releases_unchanged(method: str) -> None:
    for name, (x, stat) in _cases().items():
        r = ds.release(x, stat, epsilon=1.0, method=method, rng=SeededRandom(3))
        assert (r.value, r.interval()) == RECORDED[name], name
