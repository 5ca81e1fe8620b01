r"""The trimmed mean: the mean after dropping ``trim`` records from each end.

With m = ``trim`` and n records, the value is the mean of :math:`x_{(m+1)}, \dots,
x_{(n-m)}` when :math:`n > 2m`, and the midpoint :math:`(l + u)/2` otherwise.

Substitute (n public), exact (docs/sensitivity.md §7):

.. math::
    A(k) = \max_{0 \le t \le k+1} \frac{x_{(n-m+1+k-t)} - x_{(m+1-t)}}{n - 2m}.

Add-remove: exact local sensitivity, and for k >= 1 the admissible bound, with
:math:`M_k = n - k - 2m` and :math:`S_k = x_{(n-m+1+k)} - x_{(m-k)}`,

.. math::
    \hat A(k) = \min\left(\frac{w}{\max(M_k, 2)}, \frac{S_k}{M_k - 1}\right)\ (M_k \ge 2),
    \qquad \hat A(k) = \frac{w}{2}\ (M_k \le 1).

docs/sensitivity.md §Trimmed mean derives both.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from dpsense._arrays import FloatArray
from dpsense.neighbours import Neighbours
from dpsense.params import check_int
from dpsense.statistics._profile import FunctionProfile, IntArray, Profile
from dpsense.statistics.base import NO_BOUND
from dpsense.statistics.moments import MeanOfKept, mean_rows, mean_value, mean_value_exact

__all__ = ["TrimmedMean"]


@dataclass(frozen=True)
class TrimmedMean(MeanOfKept):
    """Mean of the records left after removing ``trim`` from each end.

    Parameters
    ----------
    trim : int
        Number of records dropped from each end (m >= 0; m = 0 is the mean).
    lower, upper : float
        Public bounds.
    """

    trim: int
    lower: float = NO_BOUND
    upper: float = NO_BOUND
    kind: ClassVar[str] = "trimmed-mean"

    def __post_init__(self) -> None:
        object.__setattr__(self, "trim", check_int(self.trim, "trim", where="TrimmedMean"))
        super().__post_init__()

    @property
    def name(self) -> str:
        return f"trimmed-mean(trim={self.trim})"

    def _middle(self, xc: FloatArray) -> FloatArray:
        n, m = xc.shape[0], self.trim
        return np.sort(xc)[m : n - m]

    def _value(self, xc: FloatArray) -> float:
        if xc.shape[0] <= 2 * self.trim:
            return self.midpoint
        return mean_value(self._middle(xc), self.lower, self.upper)

    def _value_exact(self, xc: FloatArray) -> Fraction:
        if xc.shape[0] <= 2 * self.trim:
            return Fraction(self.midpoint)
        return mean_value_exact(self._middle(xc), self.lower, self.upper)

    def _batch(self, xc: FloatArray) -> FloatArray:
        n, m = xc.shape[1], self.trim
        if n <= 2 * m:
            return np.full(xc.shape[0], self.midpoint)
        return mean_rows(np.sort(xc, axis=1)[:, m : n - m], self.lower, self.upper)

    @property
    def _dropped(self) -> int:
        return 2 * self.trim

    def profile(self, xc: FloatArray, neighbours: Neighbours) -> Profile:
        n, m, w = xc.shape[0], self.trim, self.width
        ext = np.concatenate(([self.lower], np.sort(xc), [self.upper]))

        def x(i: IntArray | int) -> FloatArray:
            return np.asarray(ext[np.clip(i, 0, n + 1)], dtype=np.float64)

        if neighbours == "substitute":
            mid = n - 2 * m
            if mid <= 0:
                return FunctionProfile(
                    0.0, lambda ks: np.zeros(ks.shape), cap=0.0, saturation=1, exact=True
                )

            def exact(ks: IntArray) -> FloatArray:
                out = np.empty(ks.shape, dtype=np.float64)
                for pos, k in enumerate(ks.tolist()):
                    # i = m + 1 - t for t in 0..k+1; below 0 the index clamps to l
                    i = np.arange(max(m - k, -1), m + 2, dtype=np.int64)
                    out[pos] = float(np.max(x(i + mid + k) - x(i)))
                return np.asarray(out / mid, dtype=np.float64)

            local = float(exact(np.zeros(1, dtype=np.int64))[0])
            return FunctionProfile(local, exact, cap=w / mid, saturation=n + 1, exact=True)

        mid = n - 2 * m
        mu = self._value(xc)
        xm = float(x(m))
        if mid >= 2:
            local = max(
                max(float(x(n - m + 1)) - mu, mu - xm) / (mid + 1),
                max(float(x(n - m)) - mu, mu - float(x(m + 1))) / (mid - 1),
            )
        elif mid == 1:
            local = max(max(float(x(m + 2)) - mu, mu - xm) / 2.0, abs(mu - self.midpoint))
        elif mid == 0:
            local = max(abs(xm - self.midpoint), abs(float(x(m + 1)) - self.midpoint))
        else:
            local = 0.0

        def bound(ks: IntArray) -> FloatArray:
            mk = n - ks - 2 * m
            spread = x(n - m + 1 + ks) - x(m - ks)
            size_bound = w / np.maximum(mk, 2).astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                spread_bound = np.where(mk >= 2, spread / np.maximum(mk - 1, 1), np.inf)
            return np.where(mk >= 2, np.minimum(size_bound, spread_bound), w / 2.0).astype(
                np.float64
            )

        return FunctionProfile(local, bound, cap=w / 2.0, saturation=max(mid - 1, 1), exact=False)

    def sensitivity_is_exact(self, neighbours: str = "add-remove") -> bool:
        return neighbours == "substitute"
