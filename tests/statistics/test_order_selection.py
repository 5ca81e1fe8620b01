"""Order-statistic selection (statistics/_order.py) and the floored smooth bound.

* ``select_sorted`` returns exactly the sorted order statistics of the ranks it claims, on
  continuous, tied and constant data of 2^17+ records, without touching the input; when
  its guess cannot work it says so (None) instead of answering wrongly.
* ``OrderStatistics`` windows equal slices of the full sort on large data, across
  widenings.
* A quantile's smooth bound with a floor: ``max(r, floor) == max(S, floor)`` for the exact
  S, and the quantile value read from the profile equals the order statistic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsense.statistics import Median, Quantile
from dpsense.statistics._order import OrderStatistics, select_sorted

N = 300_001


def datasets() -> dict[str, np.ndarray]:
    rs = np.random.default_rng(3)
    return {
        "continuous": rs.lognormal(size=N),
        "tied": rs.integers(0, 100, N).astype(float),
        "two-values": np.repeat([1.0, 2.0], [N // 3, N - N // 3])[rs.permutation(N)],
        "constant": np.full(N, 7.0),
    }


@pytest.mark.parametrize("name", ["continuous", "tied", "two-values", "constant"])
def test_select_sorted_returns_the_ranks_it_claims(name: str) -> None:
    x = datasets()[name]
    before = x.copy()
    full = np.sort(x)
    answered = 0
    for lo, hi in [(N // 2, N // 2), (N // 2 - 500, N // 2 + 500), (10, 40), (N - 30, N - 1)]:
        picked = select_sorted(x, lo, hi)
        np.testing.assert_array_equal(x, before)  # never reorders its input
        if picked is None:
            continue
        answered += 1
        window, offset = picked
        assert offset <= lo
        assert offset + window.shape[0] > hi
        np.testing.assert_array_equal(window, full[offset : offset + window.shape[0]])
    if name in ("continuous", "tied"):
        assert answered >= 3  # the shortcut is taken on ordinary data


def test_select_sorted_declines_small_data_and_wide_ranges() -> None:
    x = np.random.default_rng(0).normal(size=N)
    assert select_sorted(x[:1000], 10, 20) is None
    assert select_sorted(x, 0, N // 2) is None


@pytest.mark.parametrize("name", ["continuous", "tied", "constant"])
def test_order_statistics_windows_equal_the_full_sort(name: str) -> None:
    x = datasets()[name]
    full = np.sort(x)
    order = OrderStatistics(x.copy(), 0.0, 1e9)
    m = N // 2
    for a, b in [(m - 10, m + 10), (m - 4000, m + 10), (m, m + 20_000), (1, 5), (N - 3, N + 2)]:
        got = order.window(a, b)
        want = np.concatenate(
            [
                np.full(max(0, 1 - a), 0.0),
                full[max(a, 1) - 1 : min(b, N)],
                np.full(max(0, b - N), 1e9),
            ]
        )
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("statistic", [Median(0.0, 100.0), Quantile(0.3, 0.0, 100.0)])
@pytest.mark.parametrize("neighbours", ["add-remove", "substitute"])
@pytest.mark.parametrize("beta", [0.01, 0.2, 2.0])
def test_floored_smooth_bound_agrees_with_the_exact_one_above_the_floor(
    statistic: Quantile, neighbours: str, beta: float
) -> None:
    rs = np.random.default_rng(int(beta * 100))
    for x in (
        rs.integers(40, 60, 20_001).astype(float),  # deep ties: S far below any floor
        rs.normal(50, 10, 20_001),
        np.concatenate([np.full(2000, 50.0), rs.uniform(0, 100, 50)]),
    ):
        xc = np.clip(x, 0.0, 100.0)
        exact = statistic.profile(xc.copy(), neighbours).smooth(beta)  # type: ignore[arg-type]
        for floor in (100 * 2.0**-64, 1e-3, 1.0):
            profile = statistic.profile(xc.copy(), neighbours)  # type: ignore[arg-type]
            floored = profile.smooth(beta, floor)
            assert max(floored, floor) == max(exact, floor)
            assert floored <= exact
        value = statistic.profile(xc.copy(), neighbours).value()  # type: ignore[attr-defined]
        r = statistic.rank(xc.shape[0])
        assert value == np.sort(xc)[r - 1]
        assert math.isfinite(exact)
