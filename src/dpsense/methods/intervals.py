r"""Intervals on releases: what :meth:`dpsense.Release.interval` reads (docs/intervals.md).

An interval on a release is itself a release: its endpoints are functions of public
quantities and released values (post-processing), or come from their own share of the
release's budget. A method records the parts its interval needs in its receipt under
``parameters["interval"]``, one of

* ``{"kind": "noise", "range": (lo, hi)}``: the value plus noise of a public scale (counts,
  sums, global-sensitivity statistics, propose-test-release's answer). The interval is
  ``value ± accuracy(alpha)`` (exact for the noise drawn), intersected with the
  statistic's public range.
* ``{"kind": "ratio", ...}``: the mean as a noisy sum over a noisy count, both released
  (their values and public scales): each part's noise interval at ``alpha / 2``, and the
  range of the quotient over them.
* ``{"kind": "fraction", ...}``: the KSW mean, from its released pair of noisy sums of the
  values rescaled to [0, 1] (:func:`fraction_interval`).
* ``{"kind": "released", "low": L, "high": H, "alpha": a0, "share": f}``: endpoints
  released with their own share ``f`` of the budget for a fixed ``a0`` (quantiles:
  :func:`dpsense.methods.quantile_interval.quantile_endpoints`). Valid for every
  ``alpha >= a0`` (a 95% interval is also a 90% one); None for a smaller alpha.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpsense.mechanisms.accuracy import discrete_laplace_halfwidth, grid_halfwidth

__all__ = [
    "built_from",
    "fraction_interval",
    "fraction_parts",
    "noise_interval",
    "ratio_interval",
    "ratio_parts",
    "released_interval",
]


def _clipped(low: float, high: float, span: Any) -> tuple[float, float]:
    """``[low, high]`` within the range; the range's nearest end when they do not meet
    (the value lies in the range, so the clipped value does too)."""
    lo, hi = (float(v) for v in span)
    if high < lo:
        return lo, lo
    if low > hi:
        return hi, hi
    return max(low, lo), min(high, hi)


def noise_interval(
    value: float, halfwidth: float | None, spec: Mapping[str, Any]
) -> tuple[float, float] | None:
    """``value ± halfwidth`` within the statistic's public range."""
    if halfwidth is None:
        return None
    return _clipped(value - halfwidth, value + halfwidth, spec["range"])


def ratio_parts(
    *,
    noisy_sum: float,
    sum_scale: float,
    sum_grid: float | None,
    noisy_count: int,
    count_scale: float,
    centre: float,
    value_error: float,
    span: tuple[float, float],
) -> dict[str, Any]:
    """The receipt's record of a mean released as a noisy sum over a noisy count: both
    released values and their public noise scales, the public centre the sum is taken
    about, the most the sum's grid moves a record, and the mean's range."""
    return {
        "kind": "ratio",
        "noisy_sum": float(noisy_sum),
        "sum_scale": float(sum_scale),
        "sum_grid": None if sum_grid is None else float(sum_grid),
        "noisy_count": int(noisy_count),
        "count_scale": float(count_scale),
        "centre": float(centre),
        "value_error": float(value_error),
        "range": (float(span[0]), float(span[1])),
    }


def ratio_interval(spec: Mapping[str, Any], alpha: float) -> tuple[float, float]:
    r"""The mean's interval from its released parts (docs/intervals.md §2).

    With probability at least :math:`1 - \alpha/2` each, the centred sum S lies within
    its noise half-width of the noisy sum and the count n within its own of the noisy
    count; on that event the centred mean S / n (n >= 1) lies between the smallest and the
    largest quotient of the box's corners (S / n is monotone in each argument for n > 0),
    and within the statistic's range whatever happens. The records are moved by at most
    ``value_error`` when mapped onto the sum's grid, and so is their mean."""
    half = alpha / 2.0
    grid = spec["sum_grid"]
    # no grid: sensitivity 0, no noise on the sum
    s_half = 0.0 if grid is None else grid_halfwidth("laplace", spec["sum_scale"], grid, 0.0, half)
    c_half = float(discrete_laplace_halfwidth(spec["count_scale"], half))
    s_lo, s_hi = spec["noisy_sum"] - s_half, spec["noisy_sum"] + s_half
    n_lo = max(spec["noisy_count"] - c_half, 1.0)
    n_hi = spec["noisy_count"] + c_half
    lo_span, hi_span = (float(v) for v in spec["range"])
    if n_hi < 1.0:  # no count of at least one record is plausible: only the range
        return lo_span, hi_span
    corners = [s / n for s in (s_lo, s_hi) for n in (n_lo, n_hi)]
    error = spec["value_error"]
    low = spec["centre"] + min(corners) - error
    high = spec["centre"] + max(corners) + error
    # rounding of the quotients: widen by a few ulps of the largest magnitude
    slack = 4.0 * math.ulp(max(abs(low), abs(high), 1e-300))
    return _clipped(low - slack, high + slack, spec["range"])


def released_interval(value: Any, spec: Mapping[str, Any], alpha: float) -> tuple[Any, Any] | None:
    """Released endpoints (valid for ``alpha`` at least the one they were released for),
    widened to contain the released value; arrays for several quantiles (one interval per
    level, each at ``alpha``)."""
    if alpha < float(spec["alpha"]):
        return None
    if isinstance(value, np.ndarray):
        low = np.minimum(np.asarray(spec["low"], dtype=np.float64), value)
        high = np.maximum(np.asarray(spec["high"], dtype=np.float64), value)
        return low, high
    return min(float(spec["low"]), value), max(float(spec["high"]), value)


def fraction_parts(
    *,
    noisy: tuple[float, float],
    scale: float,
    grid: float | None,
    span: tuple[float, float],
    value_error: float,
) -> dict[str, Any]:
    """The receipt's record of a KSW mean: the released pair (s^, z^) of noisy sums of the
    values rescaled to [0, 1], their public Laplace scale and grid, the bounds, and the
    most the rescaling's rounding moves the mean."""
    return {
        "kind": "fraction",
        "noisy": (float(noisy[0]), float(noisy[1])),
        "scale": float(scale),
        "grid": None if grid is None else float(grid),
        "range": (float(span[0]), float(span[1])),
        "value_error": float(value_error),
    }


def fraction_interval(spec: Mapping[str, Any], alpha: float) -> tuple[float, float]:
    r"""The KSW mean's interval from its released pair (docs/intervals.md §2).

    With probability at least :math:`1 - \alpha/2` each, :math:`s = \sum y_i` and
    :math:`z = \sum (1 - y_i)` (both >= 0) lie within their noise half-width of the
    released values; on that event the fraction :math:`s / (s + z)`, increasing in s and
    decreasing in z, lies between :math:`s_- / (s_- + z_+)` and :math:`s_+ / (s_+ + z_-)`
    (the bounds of [0, 1] where a denominator can be 0), and the mean is
    :math:`l + w \cdot` that fraction, up to the rounding of the rescaled records."""
    grid = spec["grid"]
    half = 0.0 if grid is None else grid_halfwidth("laplace", spec["scale"], grid, 0.0, alpha / 2)
    s_hat, z_hat = spec["noisy"]
    s_lo, s_hi = max(s_hat - half, 0.0), max(s_hat + half, 0.0)
    z_lo, z_hi = max(z_hat - half, 0.0), max(z_hat + half, 0.0)
    f_lo = s_lo / (s_lo + z_hi) if s_lo + z_hi > 0 else 0.0
    f_hi = s_hi / (s_hi + z_lo) if s_hi + z_lo > 0 else 1.0
    lo, hi = (float(v) for v in spec["range"])
    width = hi - lo
    error = spec["value_error"]
    low, high = lo + width * f_lo - error, lo + width * f_hi + error
    slack = 4.0 * math.ulp(max(abs(low), abs(high), 1e-300))
    return _clipped(low - slack, high + slack, spec["range"])


def built_from(kind: object, share: object) -> str:
    """Where an interval comes from, in words (receipts and the report)."""
    spent = f", {share:g} of the statistic's epsilon" if isinstance(share, int | float) else ""
    if kind == "released":
        return f"two more quantiles at ranks moved outward{spent}"
    if kind == "smooth":
        return f"a private upper bound on the noise scale{spent}"
    if kind == "population":
        return (
            "the population's value (a simple random sample): the sampling error from a "
            f"private count and spread{spent}"
        )
    if kind in ("ratio", "fraction"):
        return "the released sums and count (no extra budget)"
    return "the noise's public scale (no extra budget)"
