"""One check shared by the tests of every engine that answers for a group's records: its
quantile windows equal the ones the sampler computes from the array of those records."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from dpsense.mechanisms._quantile_sampler import ArrayRecords


def assert_windows_equal_the_arrays(
    records: Any, x: np.ndarray, levels: Iterable[tuple[int, int, int]]
) -> None:
    """For each (num, den, w): ``records.quantile_window`` equals the array's window
    (None where the array's is None)."""
    for num, den, w in levels:
        want = ArrayRecords(x.copy()).quantile_window(num, den, w)
        got = records.quantile_window(num, den, w)
        if want is None:
            assert got is None
            continue
        assert got is not None
        assert np.array_equal(got[0], want[0])
        assert np.array_equal(got[1], want[1])
        assert got[2:] == want[2:]
