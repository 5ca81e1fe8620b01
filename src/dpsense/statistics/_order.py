"""Sorted windows of order statistics, selected in O(n) with ``np.partition``.

Indices are 1-based as in SPEC.md, with the boundary convention ``x_(i) = lower`` for
``i <= 0`` and ``x_(i) = upper`` for ``i > n``.
"""

from __future__ import annotations

import numpy as np

from dpsense._arrays import FloatArray

__all__ = ["OrderStatistics"]


class OrderStatistics:
    """Lazily selected order statistics of a clipped sample.

    A window ``x_(a..b)`` costs one ``np.partition`` (O(n)) plus a sort of the window
    (O(W log W)); a full sort is used once a window would cover a quarter of the data.
    """

    __slots__ = ("_hi", "_lo", "_sorted_all", "_window", "_x", "lower", "n", "upper")

    def __init__(self, x: FloatArray, lower: float, upper: float) -> None:
        self._x = x
        self.n = int(x.shape[0])
        self.lower = lower
        self.upper = upper
        self._sorted_all: FloatArray | None = None
        self._window: FloatArray | None = None
        self._lo = 1
        self._hi = 0

    def _data_window(self, a: int, b: int) -> FloatArray:
        """Sorted ``x_(a..b)`` for ``1 <= a <= b <= n``."""
        if self._sorted_all is not None:
            return self._sorted_all[a - 1 : b]
        if self._window is not None and self._lo <= a and b <= self._hi:
            return self._window[a - self._lo : b - self._lo + 1]
        if 4 * (b - a + 1) >= self.n:
            self._sorted_all = np.sort(self._x)
            return self._sorted_all[a - 1 : b]
        kth = [a - 1] if a == b else [a - 1, b - 1]
        part = np.partition(self._x, kth)
        window = np.sort(part[a - 1 : b])
        self._window, self._lo, self._hi = window, a, b
        return window

    def window(self, a: int, b: int) -> FloatArray:
        """Sorted extended order statistics ``x_(a..b)`` (inclusive) for ``a <= b``."""
        if a > b:
            return np.empty(0, dtype=np.float64)
        lo_pad = max(0, min(b, 0) - a + 1) if a <= 0 else 0
        hi_pad = max(0, b - max(a, self.n + 1) + 1) if b > self.n else 0
        core_a, core_b = max(a, 1), min(b, self.n)
        parts: list[FloatArray] = []
        if lo_pad:
            parts.append(np.full(lo_pad, self.lower))
        if core_a <= core_b:
            parts.append(self._data_window(core_a, core_b))
        if hi_pad:
            parts.append(np.full(hi_pad, self.upper))
        if len(parts) == 1:
            return parts[0]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.float64)

    def at(self, i: int) -> float:
        """The single extended order statistic ``x_(i)``."""
        return float(self.window(i, i)[0])
