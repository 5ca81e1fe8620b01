r"""The variance and standard deviation of records clipped to ``[l, u]``, with
closed-form sensitivities (docs/sensitivity.md derives every formula; on the empty
dataset both are 0)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

import numpy as np

from dpsense._arrays import FloatArray
from dpsense._exact_budget import float_up, sqrt_bounds
from dpsense.neighbours import Neighbours
from dpsense.statistics._exact import ETA, UNIT_ROUNDOFF, fsum_rows
from dpsense.statistics._profile import FunctionProfile, IntArray, Profile
from dpsense.statistics.base import NO_BOUND, BoundedStatistic
from dpsense.statistics.moments import _centre, _width_and_magnitude

__all__ = ["Std", "Variance"]


def _var_parts(xc: FloatArray) -> tuple[float, float]:
    mu = float(np.mean(xc))
    return mu, float(np.mean((xc - mu) ** 2))


def variance_rows(xc: FloatArray, lower: float, upper: float) -> FloatArray:
    r"""Two-pass population variance of each row (rows of n >= 1 values).

    :math:`d = \mathrm{fl}(x - c)`, :math:`q = \mathrm{fl}(\mathrm{fsum}(d)/n)`,
    :math:`e = \mathrm{fl}(d - q)`, :math:`V = \mathrm{fl}(\mathrm{fsum}(\mathrm{fl}(e^2))/n)`
    (docs/sensitivity.md §Floating-point error of f, Variance).
    """
    n = xc.shape[1]
    d = xc - _centre(lower, upper)
    q = fsum_rows(d) / n
    e = d - q[:, None]
    return np.asarray(fsum_rows(e * e) / n, dtype=np.float64)


def variance_errors(lower: float, upper: float) -> tuple[float, float]:
    """(variance, standard deviation) bounds on the error of :func:`variance_rows`."""
    u, eta = UNIT_ROUNDOFF, ETA
    width, _ = _width_and_magnitude(lower, upper)
    mean_exact = (2 * u + u * u) * width + eta
    eps_q = u * (1 + u) ** 2 * width + eta + mean_exact  # |q - (mu - c)|
    a = u * width + eps_q  # |(d_i - q) - (x_i - mu)|
    b = a + u * (width + a)  # |e_i - (x_i - mu)|
    big = (width + b) ** 2  # bound on e_i^2
    a1 = b * (2 * width + b) + u * big + eta  # mean of |fl(e_i^2) - (x_i - mu)^2|
    a2 = u * (1 + u) * big + eta  # fsum rounding, divided by n
    a3 = u * (1 + u) ** 2 * big + eta  # the division by n
    var = float_up(a1 + a2 + a3)
    root = math.nextafter(math.sqrt(var), math.inf)
    std = float_up(Fraction(root) * (1 + u) + u * width / 2 + eta)
    return var, std


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

    lower: float = NO_BOUND
    upper: float = NO_BOUND
    kind: ClassVar[str] = "variance"

    def output_range(self, n: int | None = None) -> tuple[float, float]:
        """Values in [l, u] have a population variance in [0, (u - l)^2 / 4]
        (Popoviciu's inequality)."""
        return (0.0, (self.upper - self.lower) ** 2 / 4.0)

    _sqrt: ClassVar[bool] = False
    max_magnitude: ClassVar[float | None] = 2.0**500

    def _transform(self, v: FloatArray) -> FloatArray:
        return np.sqrt(np.maximum(v, 0.0)) if self._sqrt else v

    def _value(self, xc: FloatArray) -> float:
        if xc.shape[0] == 0:
            return 0.0
        return float(self._batch(xc.reshape(1, -1))[0])

    def _batch(self, xc: FloatArray) -> FloatArray:
        if xc.shape[1] == 0:
            return np.zeros(xc.shape[0])
        return self._transform(variance_rows(xc, self.lower, self.upper))

    @property
    def value_error(self) -> float:
        r"""About ``13 u w^2`` for the variance, ``sqrt(13 u) w`` for the standard deviation.

        u = 2^-53; two-pass with correctly rounded sums (Higham 2002, §1.9 and §4; Shewchuk
        1997), and :math:`|\sqrt a - \sqrt b| \le \sqrt{|a - b|}` for the square root.
        """
        var, std = variance_errors(self.lower, self.upper)
        return std if self._sqrt else var

    def _h(self, m: IntArray) -> FloatArray:
        """Upper bound on the add-remove local sensitivity of any dataset of size >= m."""
        w = self.width
        mf = np.maximum(m, 2).astype(np.float64)
        if self._sqrt:
            return w * np.sqrt(mf - 1.0) / mf
        return w * w * (mf - 1.0) / (mf * mf)

    def _global(self, neighbours: Neighbours, n: int | None) -> float:
        w = self._width_exact  # exact; each result is rounded up once
        if neighbours == "add-remove":
            return float_up(w / 2 if self._sqrt else w * w / 4)
        size = self._need_n(n)
        if size <= 1:
            return 0.0
        g = (size - 1) * w * w / (size * size)
        return float_up(sqrt_bounds(g)[1] if self._sqrt else g)

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
        mu, _ = _var_parts(xc)
        var = float(variance_rows(xc.reshape(1, -1), lo, hi)[0])
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

    lower: float = NO_BOUND
    upper: float = NO_BOUND
    kind: ClassVar[str] = "std"

    def output_range(self, n: int | None = None) -> tuple[float, float]:
        """The square root of the variance's range: [0, (u - l) / 2]."""
        return (0.0, (self.upper - self.lower) / 2.0)

    _sqrt: ClassVar[bool] = True
