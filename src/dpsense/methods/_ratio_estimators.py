r"""The naive and local-bound estimators of a ratio a/b (a published blog post's methods, fixed).

Package-private; :func:`dpsense.private_ratio` is the front door, and
``dpsense.methods.ratio`` re-exports the public names. The local-bound method bounds the
local sensitivity of a/b on intervals around noisy counts (:func:`count_intervals`,
:func:`ratio_sensitivity_bound`) and falls back to the naive method when the lower bound
on b is at most 1, so both live here. docs/ratios.md has the derivations and the list of
that blog post's bugs.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpsense.mechanisms.additive import DiscreteLaplaceMechanism, LaplaceMechanism
from dpsense.methods.bounded_ls import discrete_laplace_margin, laplace_with_private_bound
from dpsense.neighbours import ADD_REMOVE, Neighbours
from dpsense.noise.rng import RandomSource
from dpsense.params import rest_of_budget

__all__ = ["count_intervals", "naive_draws", "ratio_sensitivity_bound"]

FloatArray = NDArray[np.float64]
_RELATIVE_PAD: Final = 2.0**-48
"""Relative rounding-up of the float sensitivity bound (covers a few ulps of error)."""
_RATIO_FLOAT_PAD: Final = 2.0**-51
"""Absolute pad: two ratios in [0, 1], each rounded once, differ by at most 2^-52 more than
the exact ratios do."""
_SCALE_SLACK: Final = 2.0**-40


# ----------------------------------------------------------------------------- naive


def naive_draws(
    ones: int,
    total: int,
    *,
    epsilon: float,
    neighbours: Neighbours,
    source: RandomSource,
    size: int = 1,
) -> tuple[FloatArray, float]:
    r"""``size`` independent naive estimates of a/b; the Laplace scale per count.

    Add-remove: the vector (a, b) has L1 sensitivity 2 (a user with :math:`a_i = 1` moves
    both counts), so

    .. math::

        (\hat a, \hat b) = (a, b) + \mathrm{Lap}(2/\varepsilon)^2, \qquad
        \hat r = \operatorname{clip}(\hat a / \hat b, 0, 1)
        \;(\tfrac12 \text{ if } \hat b \le 0).

    Substitute: b is public and a has sensitivity 1:
    :math:`\hat r = \operatorname{clip}((a + \mathrm{Lap}(1/\varepsilon))/b, 0, 1)`
    (1/2 when b = 0).

    With ``size = 1`` this is exactly ``private_ratio(method="naive")``; ``size > 1``
    noises all repetitions as one vector (finer grid, each repetition still
    ``epsilon``-DP), for the audits.
    """
    if neighbours == ADD_REMOVE:
        counts = np.tile(np.array([ones, total], dtype=np.float64), size)
        result = LaplaceMechanism(2.0, epsilon).release(counts, source)
        noisy = np.asarray(result.value, dtype=np.float64).reshape(size, 2)
        numerator, denominator = noisy[:, 0], noisy[:, 1]
    else:
        result = LaplaceMechanism(1.0, epsilon).release(np.full(size, float(ones)), source)
        numerator = np.asarray(result.value, dtype=np.float64).reshape(size)
        denominator = np.full(size, float(total))
    positive = denominator > 0.0
    estimate = np.full(size, 0.5)
    estimate[positive] = numerator[positive] / denominator[positive]
    return np.clip(estimate, 0.0, 1.0), float(result.scale)


# ----------------------------------------------------------------------------- local bound


def count_intervals(
    noisy_a: ArrayLike, noisy_b: ArrayLike, margin: int
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    r"""Intervals :math:`[a_\ell, a_u]`, :math:`[b_\ell, b_u]` from the noisy counts.

    .. math::

        a_\ell = \max(0, \hat a - T), \quad a_u = \hat a + T, \quad
        b_\ell = \hat b - T, \quad b_u = \hat b + T.

    With :math:`\Pr[|Z| > T] \le \delta/2` for each count, both intervals hold with
    probability at least :math:`1 - \delta` (union bound).
    """
    a_hat = np.asarray(noisy_a, dtype=np.float64)
    b_hat = np.asarray(noisy_b, dtype=np.float64)
    return np.maximum(a_hat - margin, 0.0), a_hat + margin, b_hat - margin, b_hat + margin


def ratio_sensitivity_bound(a_low: ArrayLike, a_high: ArrayLike, b_low: ArrayLike) -> FloatArray:
    r"""An upper bound on :math:`LS(a/b)` (add-remove) valid for every a, b in the intervals.

    For integers :math:`0 \le a \le b` with :math:`b \ge 2`,
    :math:`LS(a/b) \le \max(a, b - a) / (b^2 - b)` (docs/ratios.md §2). The blog post bounds
    the two terms separately over :math:`a \in [a_\ell, a_u]`, :math:`b \in [b_\ell, b_u]`,
    :math:`b_\ell \ge 2`:

    .. math::

        g = \max\Big(\frac{a_u}{b_\ell^2 - b_\ell},\;
        \max_{b \in [b_\ell, b_u]} \frac{b - a_\ell}{b^2 - b}\Big)
          = \frac{\max(a_u,\; b_\ell - a_\ell)}{b_\ell^2 - b_\ell}.

    The first term increases in a and decreases in b. The second,
    :math:`h(b) = (b - c)/(b^2 - b)` with :math:`c = a_\ell`, increases up to
    :math:`b_x = c + \sqrt{c^2 - c}` and decreases after it; but whenever
    :math:`b_\ell < b_x`, the first term already dominates
    :math:`h(b_x) = \sqrt{c^2 - c}/(b_x^2 - b_x) \le c/(b_\ell^2 - b_\ell)`, so the
    maximum over b may be taken at :math:`b_\ell` (docs/ratios.md §2 proves the equality;
    the upper end :math:`b_u` is therefore not needed). The blog post's code swaps
    :math:`a_\ell` and :math:`a_u` here, which underestimates.

    The result is rounded up by a relative :math:`2^{-48}`, plus :math:`2^{-51}` for the
    rounding of the two ratios a/b and a'/b' in floating point, and capped at 1 (every ratio
    lies in [0, 1]). Only meaningful where :math:`b_\ell \ge 2`; it is then positive.

    Parameters
    ----------
    a_low, a_high, b_low : array_like
        Interval ends (integer-valued), ``b_low >= 2``.

    Returns
    -------
    ndarray of float
        The bounds, elementwise.

    References
    ----------
    The blog post, "An upper bound on local sensitivity" (with a_l and a_u in the right places).
    """
    a_lo = np.asarray(a_low, dtype=np.float64)
    a_hi = np.asarray(a_high, dtype=np.float64)
    b_lo = np.asarray(b_low, dtype=np.float64)
    numerator = np.maximum(a_hi, b_lo - a_lo)
    bound = numerator / (b_lo * (b_lo - 1.0)) * (1.0 + _RELATIVE_PAD) + _RATIO_FLOAT_PAD
    return np.asarray(np.minimum(bound, 1.0), dtype=np.float64)


def _ratio(ones: int, total: int) -> Fraction:
    """a/b exactly (1/2 for b = 0): rounded to the noise grid in exact arithmetic."""
    return Fraction(ones, total) if total else Fraction(1, 2)


def _local_bound(
    ones: int,
    total: int,
    *,
    epsilon: float,
    delta: float,
    fraction: float,
    source: RandomSource,
) -> tuple[float, dict[str, Any]]:
    """The blog post's local-bound ratio under add-remove, fixed; returns (value, parameters)."""
    eps_bound = fraction * epsilon
    eps_noise = rest_of_budget(epsilon, eps_bound)
    # Two counts, each with sensitivity 1: the vector has L1 sensitivity 2, so scale
    # 2/eps_bound spends eps_bound in total (eps_bound/2 per count, as in the blog post).
    counts = DiscreteLaplaceMechanism.for_privacy(2, eps_bound).release(
        np.array([ones, total], dtype=np.int64), source
    )
    margin = discrete_laplace_margin(
        float(counts.scale) * (1.0 + _SCALE_SLACK), delta / 2.0, two_sided=True
    )
    noisy = np.asarray(counts.value, dtype=np.int64)
    a_low, a_high, b_low, _ = count_intervals(noisy[0], noisy[1], margin)
    parameters: dict[str, Any] = {
        "bound_fraction": fraction,
        "epsilon_bound": eps_bound,
        "epsilon_noise": eps_noise,
        "tail_margin": margin,
    }
    if float(b_low) <= 1.0:
        # Bail out: the naive method on (a, b) with the remaining budget.
        estimate, _ = naive_draws(
            ones, total, epsilon=eps_noise, neighbours=ADD_REMOVE, source=source
        )
        return float(estimate[0]), parameters
    bound = float(ratio_sensitivity_bound(a_low, a_high, b_low))
    noisy_ratio = laplace_with_private_bound(
        _ratio(ones, total), bound, epsilon=eps_noise, rng=source
    )
    return min(max(float(noisy_ratio.value), 0.0), 1.0), parameters
