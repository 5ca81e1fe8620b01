"""The order-statistic window provider against a full sort."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsense.statistics._order import OrderStatistics


@settings(max_examples=300)
@given(
    data=st.lists(st.integers(0, 6), min_size=0, max_size=60),
    requests=st.lists(st.tuples(st.integers(-3, 70), st.integers(0, 12)), min_size=1, max_size=6),
)
def test_windows_equal_slices_of_the_sorted_extended_data(
    data: list[int], requests: list[tuple[int, int]]
) -> None:
    x = np.array(data, dtype=np.float64)
    n = x.shape[0]
    ext = np.concatenate(([-1.0] * 5, np.sort(x), [9.0] * 80))  # index i at i + 4
    order = OrderStatistics(x.copy(), -1.0, 9.0)
    for start, width in requests:
        a, b = start, start + width
        got = order.window(a, b)
        np.testing.assert_array_equal(got, ext[a + 4 : b + 5])
    assert np.array_equal(x, np.array(data, dtype=np.float64))  # input untouched
    assert order.n == n


def test_widening_a_large_window_keeps_exact_order_statistics() -> None:
    rng = np.random.default_rng(9)
    x = rng.integers(0, 50, 100_000).astype(np.float64)
    order = OrderStatistics(x, 0.0, 49.0)
    full = np.sort(x)
    r = 50_000
    for half in (10, 100, 1_000, 5_000):
        np.testing.assert_array_equal(
            order.window(r - half, r + half), full[r - half - 1 : r + half]
        )
