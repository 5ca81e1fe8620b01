"""Sorted windows of order statistics, selected in O(n) without a full sort.

Indices are 1-based as in docs/sensitivity.md, with the boundary convention
``x_(i) = lower`` for ``i <= 0`` and ``x_(i) = upper`` for ``i > n``.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import FloatArray

__all__ = ["OrderStatistics", "counts_below_points", "select_sorted"]

_SAMPLE: Final = 1 << 16
"""Records sampled to guess the values that bracket a rank range (speed only)."""
_MIN_N: Final = 1 << 17
"""Below this size a partition is as fast as the sampled selection."""


def select_sorted(x: FloatArray, lo: int, hi: int) -> tuple[FloatArray, int] | None:
    """Sorted order statistics covering the 0-based ranks ``lo..hi``, without reordering x.

    Returns ``(window, offset)``: ``window[i]`` is the order statistic of 0-based rank
    ``offset + i``, ``offset <= lo`` and ``offset + len(window) > hi``. Or None when the
    shortcut does not apply (small data, a wide range, or a guess that missed), and the
    caller selects by partition.

    The shortcut (Floyd and Rivest 1975): sort a random sample of the records, read off two
    values that bracket the ranks with a wide margin, count the records below the lower
    one and copy out the records between the two (a few vectorised passes, no partition),
    then check that the bracket really contains the ranks. The sample only decides how
    fast the answer comes, never what it is.
    """
    n = int(x.shape[0])
    if n < _MIN_N or 8 * (hi - lo + 1) > n:
        return None
    picks = np.random.default_rng(n).integers(0, n, _SAMPLE)
    sample = np.sort(x[picks])
    margin = 2 * int(math.sqrt(_SAMPLE)) + 2  # 4 standard deviations of a sample rank
    i_lo = int(lo / n * _SAMPLE) - margin
    i_hi = int(hi / n * _SAMPLE) + 1 + margin
    low = sample[i_lo] if i_lo >= 0 else -np.inf
    high = sample[i_hi] if i_hi < _SAMPLE else np.inf
    below = int(np.count_nonzero(x < low))
    above = int(np.count_nonzero(x > high))
    inside = n - below - above
    if below > lo or n - above <= hi or 4 * inside > n:
        return None
    window = x[(x >= low) & (x <= high)]
    window.sort()
    return window, below


class OrderStatistics:
    """Lazily selected order statistics of a clipped sample.

    The sample ``x`` is a buffer the caller owns: it is reordered in place (no copy).

    The first window ``x_(a..b)`` costs one single-pivot ``np.partition`` at its centre
    and one in-place partition of each half (several times faster than a partition with
    two pivots, notably on tied data), plus a sort of the window. Widening the window
    partitions, in place, only the part outside the current window. A full sort is used
    once a window would cover a quarter of the data.
    """

    __slots__ = ("_hi", "_lo", "_part", "_sorted_all", "_window", "_x", "lower", "n", "upper")

    def __init__(self, x: FloatArray, lower: float, upper: float) -> None:
        self._x = x
        self.n = int(x.shape[0])
        self.lower = lower
        self.upper = upper
        self._sorted_all: FloatArray | None = None
        self._part: FloatArray | None = None
        self._window: FloatArray = np.empty(0, dtype=np.float64)
        self._lo = 1
        self._hi = 0

    def _first_window(self, a: int, b: int) -> None:
        picked = select_sorted(self._x, a - 1, b - 1)
        if picked is not None:  # x is left as it is; a later widening starts afresh
            self._window, offset = picked
            self._lo, self._hi = offset + 1, offset + int(self._window.shape[0])
            return
        centre = (a + b) // 2
        part = self._x
        part.partition(centre - 1)
        if a < centre:
            part[: centre - 1].partition(a - 1)
        if b > centre:
            part[centre:].partition(b - centre - 1)
        self._part, self._lo, self._hi = part, a, b
        self._window = np.sort(part[a - 1 : b])

    def _widen(self, a: int, b: int) -> None:
        part = self._part
        assert part is not None
        pieces = [self._window]
        if a < self._lo:
            # part[: lo - 1] holds exactly the ranks 1 .. lo - 1
            part[: self._lo - 1].partition(a - 1)
            pieces.insert(0, np.sort(part[a - 1 : self._lo - 1]))
            self._lo = a
        if b > self._hi:
            # part[hi:] holds exactly the ranks hi + 1 .. n
            part[self._hi :].partition(b - self._hi - 1)
            pieces.append(np.sort(part[self._hi : b]))
            self._hi = b
        self._window = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]

    def _data_window(self, a: int, b: int) -> FloatArray:
        """Sorted ``x_(a..b)`` for ``1 <= a <= b <= n``."""
        if self._sorted_all is not None:
            return self._sorted_all[a - 1 : b]
        if not (self._lo <= a and b <= self._hi):
            have = self._lo <= self._hi
            lo = min(a, self._lo) if have else a
            hi = max(b, self._hi) if have else b
            if 4 * (hi - lo + 1) >= self.n:
                self._sorted_all = np.sort(self._x)
                return self._sorted_all[a - 1 : b]
            if self._part is None:
                self._first_window(lo, hi)
            else:
                self._widen(lo, hi)
        return self._window[a - self._lo : b - self._lo + 1]

    def window(self, a: int, b: int) -> FloatArray:
        """Sorted extended order statistics ``x_(a..b)`` (inclusive) for ``a <= b``."""
        if a > b:
            return np.empty(0, dtype=np.float64)
        lo_pad = min(b, 0) - a + 1 if a <= 0 else 0
        hi_pad = b - max(a, self.n + 1) + 1 if b > self.n else 0
        core_a, core_b = max(a, 1), min(b, self.n)
        parts: list[FloatArray] = []
        if lo_pad > 0:
            parts.append(np.full(lo_pad, self.lower))
        if core_a <= core_b:
            parts.append(self._data_window(core_a, core_b))
        if hi_pad > 0:
            parts.append(np.full(hi_pad, self.upper))
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.float64)

    def at(self, i: int) -> float:
        """The single extended order statistic ``x_(i)``."""
        return float(self.window(i, i)[0])


_CHUNK: Final = 1 << 16
"""Records classified at a time by :func:`counts_below_points` (fits in a core's cache)."""


def counts_below_points(x: FloatArray, points: FloatArray) -> NDArray[np.int64]:
    """``#{x < c}`` for each of the increasing ``points`` c, exactly, in one pass over x
    and without copying it (O(n) time, O(chunk) memory; x is not reordered).

    Each record's cell, the number of points at or below it, is guessed by the points'
    mean spacing and then corrected by comparisons with the points themselves until
    ``points[k - 1] <= x < points[k]`` holds for every record of the chunk (one check
    each way for equal steps; more rounds for uneven ones: exact for any sorted points).
    A NaN counts as above every point. The counts are the cumulative sums of the cells.
    """
    c = np.asarray(points, dtype=np.float64)
    g = int(c.shape[0])
    cells = np.zeros(g + 1, dtype=np.int64)
    n = int(x.shape[0])
    if g == 0 or n == 0:
        return np.zeros(g, dtype=np.int64)
    # edges[k] = points[k - 1] and edges[0] = -inf: cell k holds edges[k] <= x <
    # edges[k + 1]; the top sentinel is NaN (x >= NaN is false: +inf stays in cell g)
    edges = np.concatenate(([-math.inf], c, [math.nan]))
    span = float(c[-1] - c[0])
    scale = (g - 1) / span if g > 1 and math.isfinite(span) and span > 0 else 0.0
    step = min(_CHUNK, n)
    guess = np.empty(step, dtype=np.float64)
    k = np.empty(step, dtype=np.intp)
    shift = 1.0 - float(c[0]) * scale if scale else 0.0
    for start in range(0, n, step):
        chunk = x[start : start + step]
        f, kk = guess[: chunk.shape[0]], k[: chunk.shape[0]]
        with np.errstate(invalid="ignore", over="ignore"):  # a guess: any value will do
            np.multiply(chunk, scale, out=f)
            np.add(f, shift, out=f)  # 1 + (x - points[0]) * scale
        np.floor(f, out=f)
        np.fmax(f, 0.0, out=f)  # NaN becomes 0 here, and g below
        np.fmin(f, float(g), out=f)
        np.copyto(kk, f, casting="unsafe")
        while True:  # the guess may be too high: step down where x < edges[k]
            down = chunk < edges[kk]
            if not down.any():
                break
            kk -= down
        while True:  # ... or too low: step up where x >= edges[k + 1]
            up = chunk >= edges[kk + 1]
            if not up.any():
                break
            kk += up
        if np.isnan(chunk).any():
            kk[np.isnan(chunk)] = g
        cells += np.bincount(kk, minlength=g + 1)
    return np.cumsum(cells[:-1]).astype(np.int64)
