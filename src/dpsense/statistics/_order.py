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


def select_sorted(
    x: FloatArray, lo: int, hi: int, *, runs: bool = False
) -> tuple[FloatArray, int] | None:
    """Sorted order statistics covering the 0-based ranks ``lo..hi``, without reordering x.

    Returns ``(window, offset)``: ``window[i]`` is the order statistic of 0-based rank
    ``offset + i``, ``offset <= lo`` and ``offset + len(window) > hi``. Or None when the
    shortcut does not apply (small data, a wide range, or a guess that missed), and the
    caller selects by partition.

    The shortcut (Floyd and Rivest 1975): sort a random sample of the records, read off two
    values that bracket the ranks with a wide margin, count the records below the lower
    one and copy out the records between the two (one pass in chunks, no partition),
    then check that the bracket really contains the ranks. The sample only decides how
    fast the answer comes, never what it is. ``runs=True`` moves each end of the bracket
    out to the next distinct sample value, so that on tied data the window usually holds
    the whole run of values next to ``x_(lo)`` and ``x_(hi)`` (their neighbours).
    """
    n = int(x.shape[0])
    if n < _MIN_N or 8 * (hi - lo + 1) > n:
        return None
    picks = np.random.default_rng(n).integers(0, n, _SAMPLE)
    sample = np.sort(x[picks])
    margin = 2 * int(math.sqrt(_SAMPLE)) + 2  # 4 standard deviations of a sample rank
    i_lo = int(lo / n * _SAMPLE) - margin
    i_hi = int(hi / n * _SAMPLE) + 1 + margin
    if runs and i_lo >= 0:
        i_lo = int(np.searchsorted(sample, sample[i_lo], "left")) - 1
    if runs and i_hi < _SAMPLE:
        i_hi = int(np.searchsorted(sample, sample[i_hi], "right"))
    low = sample[i_lo] if i_lo >= 0 else -np.inf
    high = sample[i_hi] if i_hi < _SAMPLE else np.inf
    picked = _bracket(x, float(low), float(high), lo, hi)
    if picked is None:
        return None
    window, below = picked
    window.sort()
    return window, below


def _bracket(
    x: FloatArray, low: float, high: float, lo: int, hi: int
) -> tuple[FloatArray, int] | None:
    """``(x[(x >= low) & (x <= high)], #{x < low})`` in one pass over x in chunks (no
    full-size temporaries), or None as soon as the bracket misses the 0-based ranks
    ``lo..hi`` (more than lo records below low, or n - hi above high) or holds more than
    a quarter of the records."""
    n = int(x.shape[0])
    step = min(_CHUNK, n)
    lt = np.empty(step, dtype=bool)
    le = np.empty(step, dtype=bool)
    inside = np.empty(step, dtype=bool)
    pieces: list[FloatArray] = []
    below = upto = kept = 0
    for start in range(0, n, step):
        chunk = x[start : start + step]
        m = int(chunk.shape[0])
        a, b, c = lt[:m], le[:m], inside[:m]
        np.less(chunk, low, out=a)
        np.less_equal(chunk, high, out=b)
        np.greater(b, a, out=c)  # low <= x <= high (false for NaN)
        below += int(np.count_nonzero(a))
        upto += int(np.count_nonzero(b))
        k = upto - below - kept
        if k:
            pieces.append(chunk[c])
            kept += k
        if 4 * kept > n or below > lo or start + m - upto >= n - hi:
            return None
    window = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.float64)
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
"""Records classified at a time by the one-pass scans below (fits in a core's cache)."""
_MAX_BINS: Final = 1 << 12
"""The most bins of the lookup table of :func:`counts_below_points`."""


def _bin_table(
    c: FloatArray,
) -> tuple[float, float, NDArray[np.intp], FloatArray, NDArray[np.bool_]] | None:
    """``(scale, shift, top, threshold, crowded)`` for the distinct, finite, increasing
    points c: with ``f(x) = x * scale + shift`` (two roundings, each monotone in x, so f is
    non-decreasing) and ``b = floor(f(x))`` clamped to the table, ``top[b]`` points lie in
    bins ``<= b`` and ``threshold[b]`` is the bin's point when it holds exactly one (NaN
    when it holds none). A record in bin b is above every point of a lower bin
    (``f(c) < b <= f(x)``) and below every point of a higher one, so its cell (the number
    of points at or below it) is ``top[b] - (x < threshold[b])``, exactly, unless the bin
    is ``crowded`` (several points: a binary search). None for infinite points."""
    g = int(c.shape[0])
    span = float(c[-1] - c[0])
    if not (math.isfinite(span) and math.isfinite(float(c[0]))):
        return None
    if g == 1 or not span > 0:
        scale, shift, bins = 0.0, 0.5, 1
    else:
        gap = float(np.min(np.diff(c)))
        bins = g  # equal steps: point j near the middle of bin j
        if 2.0 * span / gap + 2.0 > g:  # uneven steps: finer bins, some maybe crowded
            bins = int(min(_MAX_BINS, max(g, 2.0 * span / gap + 2.0)))
        scale = (bins - 1) / span
        shift = 0.5 - float(c[0]) * scale
    with np.errstate(over="ignore", invalid="ignore"):
        at = np.floor(c * scale + shift)  # f(c), rounded as f(x) is in the scan
    np.clip(at, 0, bins - 1, out=at)  # as the scan clamps f(x)
    per_bin = np.bincount(at.astype(np.intp), minlength=bins)
    threshold = np.full(bins, np.nan)
    single = per_bin[at.astype(np.intp)] == 1
    threshold[at[single].astype(np.intp)] = c[single]
    return scale, shift, np.cumsum(per_bin), threshold, per_bin > 1


def counts_below_points(x: FloatArray, points: FloatArray) -> NDArray[np.int64]:
    """``#{x < c}`` for each of the increasing ``points`` c, exactly, in one pass over x
    and without copying it (O(n) time, O(chunk) memory; x is not reordered).

    Each record's cell, the number of points at or below it, comes from a lookup table
    over the points' range (:func:`_bin_table`: one multiply, one add, a clamp and one
    comparison with at most one point per record); the records of a bin that holds several
    points (uneven steps), and all records when a point is infinite, take a binary search.
    Exact for any sorted points, repeated ones included. A NaN counts as above every
    point. The counts are the cumulative sums of the cells.
    """
    c = np.asarray(points, dtype=np.float64)
    g = int(c.shape[0])
    n = int(x.shape[0])
    if g == 0 or n == 0:
        return np.zeros(g, dtype=np.int64)
    distinct = np.ones(g, dtype=bool)
    np.not_equal(c[1:], c[:-1], out=distinct[1:])
    u = c[distinct]  # the counts of a repeated point are its first copy's
    which = np.cumsum(distinct) - 1
    table = _bin_table(u)
    cells = np.zeros(u.shape[0] + 1, dtype=np.int64)
    step = min(_CHUNK, n)
    if table is None:
        for start in range(0, n, step):
            # NaN sorts after every point: its cell is the last one
            cell = np.searchsorted(u, x[start : start + step], side="right")
            cells += np.bincount(cell, minlength=u.shape[0] + 1)
    else:
        _add_cells_by_table(x, u, table, cells, step)
    below = np.cumsum(cells[:-1])
    return np.asarray(below[which], dtype=np.int64)


def _add_cells_by_table(
    x: FloatArray,
    u: FloatArray,
    table: tuple[float, float, NDArray[np.intp], FloatArray, NDArray[np.bool_]],
    cells: NDArray[np.int64],
    step: int,
) -> None:
    """Add to ``cells`` each record's cell among the distinct points ``u``, read from the
    lookup ``table`` of :func:`_bin_table` (a binary search in its crowded bins)."""
    n = int(x.shape[0])
    scale, shift, top, threshold, crowded = table
    bins = int(top.shape[0])
    any_crowded = bool(crowded.any())
    f = np.empty(step, dtype=np.float64)
    t = np.empty(step, dtype=np.float64)
    b = np.empty(step, dtype=np.intp)
    lt = np.empty(step, dtype=bool)
    # [2 b + (x < threshold[b])], and one more for the records of crowded bins
    by_bin = np.zeros(2 * bins + 1, dtype=np.int64)
    for start in range(0, n, step):
        chunk = x[start : start + step]
        m = int(chunk.shape[0])
        ff, tt, bb, ll = f[:m], t[:m], b[:m], lt[:m]
        with np.errstate(over="ignore", invalid="ignore"):
            np.multiply(chunk, scale, out=ff)
            np.add(ff, shift, out=ff)
        np.fmin(ff, float(bins - 1), out=ff)  # NaN becomes the top bin here
        np.fmax(ff, 0.0, out=ff)
        np.copyto(bb, ff, casting="unsafe")  # floor, as ff >= 0
        np.take(threshold, bb, out=tt, mode="clip")
        np.less(chunk, tt, out=ll)  # false for NaN, and against an empty bin's NaN
        np.left_shift(bb, 1, out=bb)
        np.add(bb, ll, out=bb)
        if any_crowded:
            busy = np.take(crowded, bb >> 1, mode="clip")
            if busy.any():
                cell = np.searchsorted(u, chunk[busy], side="right")
                cells += np.bincount(cell, minlength=u.shape[0] + 1)
                bb[busy] = 2 * bins
        by_bin += np.bincount(bb, minlength=2 * bins + 1)
    pairs = by_bin[:-1].reshape(bins, 2)
    np.add.at(cells, top, pairs[:, 0])
    np.add.at(cells, top - 1, pairs[:, 1])  # only bins with a point have x < it
