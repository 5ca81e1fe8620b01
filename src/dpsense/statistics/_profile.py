r"""Sensitivity profiles: local sensitivity at distance k, smooth bounds, distance to instability.

A profile describes one statistic on one (clipped) dataset under one neighbour relation.
It answers three questions from :math:`\hat A(k)`, the local sensitivity at distance k
(exact, or an upper bound satisfying the admissibility condition of docs/sensitivity.md §2,
:math:`\hat A_x(k) \le \hat A_y(k+1)` for all neighbours x, y):

* ``at(ks)``: :math:`\hat A(k)` for an array of k;
* ``smooth(beta)``: :math:`S(x) = \max_{k \ge 0} e^{-k\beta} \hat A(k)`, a beta-smooth upper
  bound on local sensitivity, equal to the smallest one, :math:`S^*`, when the profile is
  exact (NRS07, Proposition 3.1);
* ``distance(b)``: :math:`D(x, b) = \min\{k : \hat A(k) > b\}`, which has global
  sensitivity 1 under the admissibility condition (used by propose-test-release).

All three maxima are computed exactly. Evaluation stops early only when no later k can
change the answer: :math:`e^{-k\beta} \hat A(k) \le e^{-k\beta} \cdot \mathrm{cap}` where
``cap`` bounds every :math:`\hat A(k)`.
"""

from __future__ import annotations

import math
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpsense._arrays import FloatArray

__all__ = ["INFINITE_DISTANCE", "FunctionProfile", "Profile", "as_ks"]

INFINITE_DISTANCE: Final[int] = sys.maxsize
"""Returned by ``distance_to_instability`` when no distance k has A(k) above the bound."""

IntArray = NDArray[np.int64]
_CHUNK: Final = 1024


def as_ks(k: ArrayLike) -> IntArray:
    """Validate distances: non-negative integers (scalar or array)."""
    from dpsense.errors import InputError

    arr = np.asarray(k)
    if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu" or (arr.size and int(arr.min()) < 0):
        raise InputError(
            "The 'k' parameter of sensitivity_at_distance must be a non-negative int or an "
            f"array of them. Got {k!r} instead."
            if arr.size <= 8
            else "The 'k' parameter of sensitivity_at_distance must hold non-negative ints."
        )
    return arr.astype(np.int64)


class Profile(ABC):
    """The sensitivity of one statistic at one dataset, as a function of distance k."""

    exact: bool
    """True when ``at`` returns A(k) itself, False when it returns an admissible bound."""

    cap: float
    """An upper bound on A(k) for every k (the global sensitivity, or the data range)."""

    @abstractmethod
    def at(self, ks: IntArray) -> FloatArray:
        """A(k) (or its admissible bound) for each k in ``ks``."""

    def smooth(self, beta: float, floor: float = 0.0) -> float:
        r""":math:`\max_{k\ge 0} e^{-k\beta} \hat A(k)` computed exactly, in chunks of k.

        With ``floor > 0`` the terms that are provably at most ``floor / 2`` may be
        skipped: the result r then satisfies ``max(r, floor) == max(S, floor)`` for the
        exact maximum S, which is all a release that floors its bound needs.
        """
        best = float(self.at(np.zeros(1, dtype=np.int64))[0])
        start, size = 1, 64
        while self.cap > 0 and math.exp(-beta * start) * self.cap > max(best, floor / 2):
            ks = np.arange(start, start + size, dtype=np.int64)
            vals = np.exp(-beta * ks.astype(np.float64)) * self.at(ks)
            best = max(best, float(vals.max()))
            if self._saturated_by(start + size - 1):
                break
            start += size
            size = min(size * 2, 1 << 20)
        return best

    def distance(self, bound: float) -> int:
        """:math:`\\min\\{k : \\hat A(k) > b\\}` or :data:`INFINITE_DISTANCE`."""
        if not self.cap > bound:
            return INFINITE_DISTANCE
        start, size = 0, 64
        while True:
            ks = np.arange(start, start + size, dtype=np.int64)
            above = np.flatnonzero(self.at(ks) > bound)
            if above.size:
                return int(ks[above[0]])
            if self._saturated_by(start + size - 1):
                return INFINITE_DISTANCE
            start += size
            size = min(size * 2, 1 << 20)

    def _saturated_by(self, k: int) -> bool:
        """True when A is constant for all distances >= k (nothing more to learn)."""
        return False


class FunctionProfile(Profile):
    """A profile given by the exact local sensitivity and a closed form for k >= 1.

    Parameters
    ----------
    local : float
        The exact local sensitivity A(0).
    bound : callable
        ``bound(ks)`` for ``ks >= 1``: exact A(k) or an admissible upper bound.
    cap : float
        Upper bound on every A(k).
    saturation : int
        A distance from which ``bound`` is constant.
    exact : bool
        Whether ``bound`` is exact.
    """

    def __init__(
        self,
        local: float,
        bound: Callable[[IntArray], FloatArray],
        *,
        cap: float,
        saturation: int,
        exact: bool,
    ) -> None:
        self._local = float(local)
        self._bound = bound
        self.cap = float(cap)
        self._saturation = max(1, int(saturation))
        self.exact = exact

    def at(self, ks: IntArray) -> FloatArray:
        ks = np.asarray(ks, dtype=np.int64)
        out = np.empty(ks.shape, dtype=np.float64)
        zero = ks == 0
        out[zero] = self._local
        if not zero.all():
            pos = ks[~zero]
            out[~zero] = self._bound(np.minimum(pos, self._saturation))
        return out

    def _saturated_by(self, k: int) -> bool:
        return k >= self._saturation
