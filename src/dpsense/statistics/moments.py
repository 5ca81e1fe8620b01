r"""Count, sum, mean, variance and standard deviation, with closed-form sensitivities.

Conventions (docs/sensitivity.md derives every formula): data are clipped to
``[l, u]``, ``w = u - l``; on the empty dataset the count and sum are 0, the mean is the
midpoint ``(l + u) / 2`` and the variance and standard deviation are 0, so every statistic
is defined on every dataset a neighbour relation can reach.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dpsense._arrays import FloatArray
from dpsense.neighbours import Neighbours
from dpsense.statistics._profile import FunctionProfile, IntArray, Profile
from dpsense.statistics.base import BoundedStatistic, Statistic

__all__ = ["Count", "Mean", "Std", "Sum", "Variance"]


def _const(value: float) -> FunctionProfile:
    return FunctionProfile(
        value, lambda ks: np.full(ks.shape, value), cap=value, saturation=1, exact=True
    )


@dataclass(frozen=True)
class Count(Statistic):
    """The number of records.

    Sensitivity 1 under add-remove; 0 under substitute, where n is public.
    """

    kind: ClassVar[str] = "count"

    def _value(self, xc: FloatArray) -> float:
        return float(xc.shape[0])

    def _batch(self, xc: FloatArray) -> FloatArray:
        return np.full(xc.shape[0], float(xc.shape[1]))

    def _global(self, neighbours: Neighbours, n: int | None) -> float:
        return 1.0 if neighbours == "add-remove" else 0.0

    def profile(self, xc: FloatArray, neighbours: Neighbours) -> Profile:
        return _const(self._global(neighbours, None))

    def sensitivity_is_exact(self, neighbours: str = "add-remove") -> bool:
        return True


@dataclass(frozen=True)
class Sum(BoundedStatistic):
    r"""The sum of records clipped to ``[lower, upper]``.

    .. math::
        GS_{\text{add-remove}} = \max(|l|, |u|), \qquad GS_{\text{substitute}} = u - l,

    and under substitute :math:`LS(x) = \max(u - x_{(1)}, x_{(n)} - l)`, :math:`A(k) = w`
    for k >= 1 (seed 003; docs/sensitivity.md §Sum).
    """

    lower: float
    upper: float
    kind: ClassVar[str] = "sum"

    def _value(self, xc: FloatArray) -> float:
        return float(np.sum(xc))

    def _batch(self, xc: FloatArray) -> FloatArray:
        return np.asarray(np.sum(xc, axis=1), dtype=np.float64)

    def _global(self, neighbours: Neighbours, n: int | None) -> float:
        if neighbours == "add-remove":
            return max(abs(self.lower), abs(self.upper))
        return self.width

    def profile(self, xc: FloatArray, neighbours: Neighbours) -> Profile:
        if neighbours == "add-remove":
            return _const(self._global(neighbours, None))
        if xc.shape[0] == 0:
            return _const(0.0)
        local = max(self.upper - float(xc.min()), float(xc.max()) - self.lower)
        w = self.width
        return FunctionProfile(
            local, lambda ks: np.full(ks.shape, w), cap=w, saturation=1, exact=True
        )

    def sensitivity_is_exact(self, neighbours: str = "add-remove") -> bool:
        return True


@dataclass(frozen=True)
class Mean(BoundedStatistic):
    r"""The mean of records clipped to ``[lower, upper]`` (the midpoint on empty data).

    Add-remove, with :math:`\mu` the mean of n >= 2 records and
    :math:`E = \max(u - \mu, \mu - l)`:

    .. math::
        LS(x) = \max\left(\frac{E}{n + 1}, \frac{\max_i |x_i - \mu|}{n - 1}\right),
        \qquad
        \hat A(k) = \min\left(\frac{w}{\max(n - k, 2)},
                   \frac{E + k w / (n - k)}{n - k - 1}\right) \ (k \ge 1),
        \qquad GS = \frac{w}{2}.

    Substitute (n public): :math:`LS(x) = \max(u - x_{(1)}, x_{(n)} - l)/n`,
    :math:`A(k) = w/n` for k >= 1, :math:`GS = w/n`.

    Seed 000 gives :math:`u/(n+1)`, which ignores removals and is too small; see
    docs/sensitivity.md §Mean for the corrected derivation (SPEC §2).
    """

    lower: float
    upper: float
    kind: ClassVar[str] = "mean"

    def _value(self, xc: FloatArray) -> float:
        return float(np.mean(xc)) if xc.shape[0] else self.midpoint

    def _batch(self, xc: FloatArray) -> FloatArray:
        if xc.shape[1] == 0:
            return np.full(xc.shape[0], self.midpoint)
        return np.asarray(np.mean(xc, axis=1), dtype=np.float64)

    def _global(self, neighbours: Neighbours, n: int | None) -> float:
        if neighbours == "add-remove":
            return self.width / 2.0
        size = self._need_n(n)
        return self.width / size if size else 0.0

    def profile(self, xc: FloatArray, neighbours: Neighbours) -> Profile:
        n, w = xc.shape[0], self.width
        if neighbours == "substitute":
            if n == 0:
                return _const(0.0)
            local = max(self.upper - float(xc.min()), float(xc.max()) - self.lower) / n
            return FunctionProfile(
                local, lambda ks: np.full(ks.shape, w / n), cap=w / n, saturation=1, exact=True
            )
        mu = float(np.mean(xc)) if n else self.midpoint
        if n == 0:
            local = w / 2.0
        else:
            add = max(self.upper - mu, mu - self.lower) / (n + 1)
            if n >= 2:
                remove = max(float(xc.max()) - mu, mu - float(xc.min())) / (n - 1)
            else:
                remove = abs(mu - self.midpoint)
            local = max(add, remove)

        # E = max(u - mu, mu - l) bounds both terms of LS(y) / (|y| - 1); k steps move the
        # mean by at most k w / (n - k), so E_y <= E + k w / (n - k) within k (docs §4).
        spread = max(self.upper - mu, mu - self.lower) if n else w / 2.0

        def bound(ks: IntArray) -> FloatArray:
            size = n - ks
            by_size = w / np.maximum(size, 2).astype(np.float64)
            safe = np.maximum(size, 3).astype(np.float64)
            by_spread = (spread + ks * w / safe) / (safe - 1.0)
            tight = np.where(size >= 3, np.minimum(by_size, by_spread), by_size)
            return np.asarray(tight, dtype=np.float64)

        return FunctionProfile(local, bound, cap=w / 2.0, saturation=max(n - 2, 1), exact=False)

    def sensitivity_is_exact(self, neighbours: str = "add-remove") -> bool:
        return neighbours == "substitute"


def _var_parts(xc: FloatArray) -> tuple[float, float]:
    mu = float(np.mean(xc))
    return mu, float(np.mean((xc - mu) ** 2))


@dataclass(frozen=True)
class Variance(BoundedStatistic):
    r"""The population variance :math:`\frac1n \sum (x_i - \mu)^2` of clipped records.

    Local sensitivity is exact under both relations (the extreme neighbour adds or
    substitutes ``l``, ``u`` or the mean). For k >= 1 an admissible bound is used:

    .. math::
        \hat A(k) = h(n - k), \quad h(m) = \frac{(m-1) w^2}{m^2}\ (m \ge 2),\
        h(m) = \frac{w^2}{4}\ (m \le 2) \qquad \text{(add-remove)},

    and :math:`\hat A(k) = GS = (n-1) w^2 / n^2` under substitute.
    """

    lower: float
    upper: float
    kind: ClassVar[str] = "variance"
    _sqrt: ClassVar[bool] = False

    def _transform(self, v: FloatArray) -> FloatArray:
        return np.sqrt(np.maximum(v, 0.0)) if self._sqrt else v

    def _value(self, xc: FloatArray) -> float:
        if xc.shape[0] == 0:
            return 0.0
        return float(self._transform(np.asarray(_var_parts(xc)[1])))

    def _batch(self, xc: FloatArray) -> FloatArray:
        if xc.shape[1] == 0:
            return np.zeros(xc.shape[0])
        return self._transform(np.asarray(np.var(xc, axis=1), dtype=np.float64))

    def _h(self, m: IntArray) -> FloatArray:
        """Upper bound on the add-remove local sensitivity of any dataset of size >= m."""
        w = self.width
        mf = np.maximum(m, 2).astype(np.float64)
        if self._sqrt:
            return w * np.sqrt(mf - 1.0) / mf
        return w * w * (mf - 1.0) / (mf * mf)

    def _global(self, neighbours: Neighbours, n: int | None) -> float:
        w = self.width
        if neighbours == "add-remove":
            return w / 2.0 if self._sqrt else w * w / 4.0
        size = self._need_n(n)
        if size <= 1:
            return 0.0
        g = (size - 1) * w * w / (size * size)
        return math.sqrt(g) if self._sqrt else g

    def _local(self, xc: FloatArray, neighbours: Neighbours) -> float:
        """Exact local sensitivity: extremes of the neighbour variance over each change.

        The closed forms locate the extreme neighbours in O(n); those few neighbours are
        then recomputed with a two-pass variance, because the closed forms cancel
        catastrophically when a neighbour's variance is near 0 (and the square root of
        the standard deviation magnifies that error).
        """
        n, lo, hi = xc.shape[0], self.lower, self.upper
        if n == 0 or (neighbours == "substitute" and n == 1):
            return 0.0
        mu, var = _var_parts(xc)
        if neighbours == "add-remove":
            d2 = (xc - mu) ** 2
            d2max = max(hi - mu, mu - lo) ** 2
            # adding v: V' = n/(n+1) V + n (v - mu)^2 / (n+1)^2, extremes at v = mu and l/u
            cands = [n * var / (n + 1), n * var / (n + 1) + n * d2max / (n + 1) ** 2]
            if n >= 2:
                # removing x_i: V_{-i} = n/(n-1) (V - (x_i - mu)^2 / (n-1)), monotone in d2
                for i in {int(np.argmin(d2)), int(np.argmax(d2))}:
                    cands.append(float(np.var(np.delete(xc, i))))
            else:
                cands.append(0.0)
        else:
            mu_rest = (float(np.sum(xc)) - xc) / (n - 1)
            far = np.where(hi - mu_rest >= mu_rest - lo, hi, lo)
            d2_rest = (xc - mu_rest) ** 2
            e2_rest = (far - mu_rest) ** 2
            # replacing x_i by v: V' = V + (n-1)/n^2 ((v - mu_rest)^2 - (x_i - mu_rest)^2):
            # smallest at v = mu_rest for the largest d2_rest, largest at the far bound
            cands = []
            for i, replacement in (
                (int(np.argmax(d2_rest)), mu_rest),
                (int(np.argmax(e2_rest - d2_rest)), far),
            ):
                y = xc.copy()
                y[i] = replacement[i]
                cands.append(float(np.var(y)))
        vals = np.maximum(np.asarray(cands), 0.0)
        base = math.sqrt(var) if self._sqrt else var
        return float(np.max(np.abs(self._transform(vals) - base)))

    def profile(self, xc: FloatArray, neighbours: Neighbours) -> Profile:
        n = xc.shape[0]
        local = self._local(xc, neighbours)
        if neighbours == "substitute":
            g = self._global(neighbours, n)
            return FunctionProfile(
                local, lambda ks: np.full(ks.shape, g), cap=g, saturation=1, exact=False
            )
        cap = self._global(neighbours, None)
        return FunctionProfile(
            local, lambda ks: self._h(n - ks), cap=cap, saturation=max(n - 2, 1), exact=False
        )

    def sensitivity_is_exact(self, neighbours: str = "add-remove") -> bool:
        return False


@dataclass(frozen=True)
class Std(Variance):
    r"""The population standard deviation of clipped records.

    Exact local sensitivity under both relations; for k >= 1 the admissible bound

    .. math::
        \hat A(k) = h(n - k), \quad h(m) = \frac{w \sqrt{m - 1}}{m}\ (m \ge 2),\
        h(m) = \frac{w}{2}\ (m \le 2) \qquad \text{(add-remove)},

    and :math:`GS = w\sqrt{n-1}/n` under substitute, from
    :math:`|\sigma' - \sigma| \le \sqrt{|V' - V|}`.
    """

    lower: float
    upper: float
    kind: ClassVar[str] = "std"
    _sqrt: ClassVar[bool] = True
