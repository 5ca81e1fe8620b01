"""The window of a group held in Spark as rows, rebuilt from what the window job returns
(``#{x < a}`` and a slice of the sorted values in the bracket ``[a, b]``), equals the
array's whenever the bracket holds it, for every bracket and slice on tied data; when it
does not, the window reaches a sentinel (and the group is read whole). No Spark needed:
the slice is cut here with the job's formulas."""

from __future__ import annotations

import numpy as np

from dpsense.mechanisms._quantile_sampler import ArrayRecords, window_ranks
from dpsense.tables.engines.spark.held import _slice_histogram, _window
from dpsense.tables.rows.windows import window_rows


def test_windows_from_slices_equal_the_arrays_or_miss() -> None:
    rng = np.random.default_rng(7)
    held = missed = 0
    for _ in range(3000):
        n = int(rng.integers(20, 300))
        x = np.sort(rng.integers(0, int(rng.integers(3, 40)), n).astype(np.float64))
        num, den, w = int(rng.integers(1, 10)), 10, int(rng.integers(1, 6))
        ranks = window_ranks(n, num, den, w)
        if ranks is None:
            continue
        lo, hi = ranks
        if rng.random() < 0.3:  # any bracket
            a, b = np.sort(rng.choice(x, 2))
        else:  # near the window, as the sample chooses it
            a = x[max(0, lo - int(rng.integers(0, 2 * w + 10)))]
            b = x[min(n - 1, hi + int(rng.integers(0, 2 * w + 10)))]
        below = int(np.count_nonzero(x < a))
        inside = x[(x >= a) & (x <= b)]
        m = inside.shape[0]
        pad = w + int(rng.integers(0, 8))
        # the job's slice: start and end clamped to the bracket
        s0 = min(max(lo - below - pad, 0), m)
        e = min(max(hi - below + 1 + pad, s0), m)
        values, counts, low, high = _slice_histogram(n, below, m, s0, list(inside[s0:e]))
        assert int(counts.sum()) == n
        keep = window_rows(counts, lo, hi)
        if (low and keep[0]) or (high and keep[-1]):
            missed += 1
            continue
        held += 1
        got = _window(values, counts, keep, n)
        want = ArrayRecords(x.copy()).quantile_window(num, den, w)
        assert want is not None
        assert np.array_equal(got[0], want[0])
        assert np.array_equal(got[1], want[1])
        assert got[2:] == want[2:]
    assert held > 300
    assert missed > 300
