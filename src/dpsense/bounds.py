r"""Private bounds: a public ``(lower, upper)`` for a column, found with privacy.

A noisy histogram over a public log-scale grid (the approach of Google's ApproxBounds and
Tumult's ``get_bounds``). The grid is ``g_0 < ... < g_{G-1}``: 0 and ±2^k for
k = -30..60. Each value falls in one bucket, ``(-inf, g_0)``, ``[g_{i-1}, g_i)``, ...,
``[g_{G-1}, inf)`` (an infinite value in the outermost one); every bucket count gets
independent exact discrete Laplace noise of scale ``m / epsilon`` (m = rows per person, 1
without a privacy unit). Adding or removing a person changes at most m counts by one in
total (L1 sensitivity m), so the noisy histogram is epsilon-DP (the discrete Laplace
mechanism; Ghosh, Roughgarden & Sundararajan 2012; Canonne, Kamath & Steinke 2020 for the
exact sampler), and everything below is post-processing:

* ``lower`` is the largest grid point whose noisy count below it is at most
  ``p_lo`` times the noisy total, ``upper`` the smallest grid point whose noisy count at or
  above it is at most ``(1 - p_hi)`` times the noisy total (2% and 98% by default);
* so without noise ``lower <= q_lo`` and ``upper >= q_hi`` (the true quantiles) and each
  is within one grid step (a factor 2 in magnitude) of them; the noise moves the counts by
  a few ``m / epsilon`` (docs/bounds.md gives the failure probability);
* before that, noisy counts below ``ceil((m / epsilon) ln((G + 1) / 0.05))`` are set to 0,
  so that the empty buckets (most of the grid) add no noise mass, and the mass this hides
  (noisy total minus what is kept, plus two standard deviations of the summed noise) is
  counted on the wrong side of each bound; on data too small or too spread out for that,
  the bounds come out as the ends of the grid.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from dpsense._arrays import as_data
from dpsense._exact_budget import exact, float_up, log_bounds, rational_ceil
from dpsense.errors import InputError
from dpsense.methods import Release
from dpsense.noise.exact import discrete_laplace
from dpsense.noise.rng import resolve_rng
from dpsense.params import check_epsilon
from dpsense.tables.grouped import bounded_values
from dpsense.tables.schema import Cast, parse_schema

__all__ = ["bounds_grid", "check_bounds_delta", "private_bounds"]

K_LOW: Final = 30
"""The smallest non-zero magnitude on the grid is 2^-K_LOW."""
K_HIGH: Final = 60
"""The largest magnitude on the grid is 2^K_HIGH."""
NOISE_BETA: Final = 0.05
"""Probability that any empty bucket's noisy count reaches the threshold."""
_SCALE_GRID: Final = 2**20
"""The noise scale is rounded up to a multiple of 2^-20 (more noise, exact sampling)."""


def bounds_grid() -> np.ndarray:
    """The public candidate grid: 0 and ±2^k for k = -K_LOW..K_HIGH, increasing."""
    powers = np.ldexp(1.0, np.arange(-K_LOW, K_HIGH + 1))
    return np.concatenate([-powers[::-1], [0.0], powers])


def bucket_counts(x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Counts of ``x`` in the G + 1 buckets ``(-inf, g_0)``, ``[g_{i-1}, g_i)``,
    ``[g_{G-1}, inf)``."""
    index = np.searchsorted(grid, x, side="right")
    return np.bincount(index, minlength=grid.size + 1).astype(np.int64)


def bounds_from_counts(
    noisy: np.ndarray,
    threshold: int,
    grid: np.ndarray,
    p_lo: float,
    p_hi: float,
    noise_scale: float = 0.0,
) -> tuple[float, float]:
    """The post-processing of the noisy histogram (docs/bounds.md).

    Counts below ``threshold`` are set to 0 (an empty bucket rarely passes), and the mass
    that hides there (noisy total minus the kept counts, plus two standard deviations of
    the noise summed over those buckets, ``noise_scale`` being the discrete Laplace scale)
    is assumed to lie on the wrong side:
    ``lower`` is the largest grid point with ``kept below + hidden <= p_lo total`` and
    ``upper`` the smallest with ``kept at or above + hidden <= (1 - p_hi) total``. When no
    grid point qualifies the bound is the end of the grid (the data are too few to say
    more), and so are both bounds when the kept buckets hold less than half of the noisy
    total plus that margin.
    """
    kept = np.where(noisy >= threshold, noisy, 0).astype(np.float64)
    total = float(noisy.sum())
    dropped = int(np.count_nonzero(noisy < threshold))
    margin = 2.0 * noise_scale * math.sqrt(2.0 * dropped)
    hidden = max(total - float(kept.sum()) + margin, 0.0)
    below = np.cumsum(kept)[:-1]  # below[i]: kept count of values < g_i
    above = float(kept.sum()) - below  # kept count of values >= g_i
    low_ok = np.flatnonzero(below + hidden <= p_lo * total)
    high_ok = np.flatnonzero(above + hidden <= (1.0 - p_hi) * total)
    # when the kept buckets hold less than half of the noisy total, the histogram says too
    # little about where the data lie: the ends of the grid
    informative = total > 0 and float(kept.sum()) >= 0.5 * (total + margin)
    i_lo = int(low_ok[-1]) if low_ok.size and informative else 0
    i_hi = int(high_ok[0]) if high_ok.size and informative else grid.size - 1
    if i_lo >= i_hi:
        i_lo, i_hi = max(min(i_lo, i_hi) - 1, 0), min(max(i_lo, i_hi) + 1, grid.size - 1)
    return float(grid[i_lo]), float(grid[i_hi])


def check_bounds_delta(delta: float) -> None:
    """Raise unless ``delta`` is 0: private bounds are pure epsilon-DP."""
    if delta != 0.0:
        raise InputError(
            "private_bounds is pure epsilon-DP and spends no delta: pass delta=0 (the default)."
        )


def private_bounds(
    data: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    column: str | None = None,
    privacy_unit: str | None = None,
    max_rows_per_unit: int = 1,
    nulls: str = "error",
    quantiles: tuple[float, float] = (0.02, 0.98),
    rng: object = None,
    schema: Mapping[str, str] | None = None,
) -> Release:
    """Private ``(lower, upper)`` bounds of a column, epsilon-DP (add-remove).

    ``data`` is anything :func:`dpsense.release` takes (an array, a DataFrame, a file, a
    Spark DataFrame...). The value is a pair of public grid points (0 or ±2^k) just
    outside the ``quantiles`` of the data (a noisy histogram over the grid, so a factor of
    about 2 wider): use them as the bounds of a later release, whose budget is separate
    (an :class:`dpsense.Accountant` adds both). ``delta`` must be 0: this is pure
    epsilon-DP. On very small data the noise dominates and the bounds come out wide.
    ``schema`` casts columns in the engine as in :func:`dpsense.release` (a value that
    does not fit becomes a null, for ``nulls``), so that ``release(..., schema=...,
    bounds="private")`` reads the same column in both steps.
    """
    where = "private_bounds"
    eps = check_epsilon(epsilon, where=where)
    check_bounds_delta(delta)
    p_lo, p_hi = _check_quantiles(quantiles)
    if nulls not in ("error", "drop"):
        raise InputError(f"The 'nulls' parameter must be 'error' or 'drop'. Got {nulls!r}.")
    if privacy_unit is None and max_rows_per_unit != 1:
        raise InputError(
            "max_rows_per_unit needs a privacy unit: pass privacy_unit='...' "
            "(--privacy-unit) or leave max_rows_per_unit at 1."
        )
    if not isinstance(max_rows_per_unit, int) or max_rows_per_unit < 1:
        raise InputError(
            f"max_rows_per_unit must be an integer >= 1. Got {max_rows_per_unit!r} instead."
        )
    casts = parse_schema(schema, where)
    source = resolve_rng(rng, where=where)
    x = _values(data, column, privacy_unit, max_rows_per_unit, nulls, source, casts)
    m = max_rows_per_unit if privacy_unit is not None else 1
    grid = bounds_grid()
    scale = rational_ceil(m / exact(eps), _SCALE_GRID)
    noisy = bucket_counts(x, grid) + discrete_laplace(source, scale, grid.size + 1)
    # buckets whose noisy count is below the threshold are treated as empty: an empty
    # bucket passes with probability at most NOISE_BETA / (G + 1), so the ~180 empty
    # buckets add no noise mass that would drag the bounds off the data (the log from
    # above, so that bound holds exactly: docs/noise.md §8)
    threshold = math.ceil(scale * log_bounds((grid.size + 1) / exact(NOISE_BETA))[1])
    lower, upper = bounds_from_counts(noisy, threshold, grid, p_lo, p_hi, float(scale))
    return Release(
        value=(lower, upper),
        refused=False,
        epsilon=eps,
        delta=0.0,
        method="histogram",
        noise="discrete-laplace",
        scale=float_up(scale),
        neighbours="add-remove",
        statistic="bounds",
        seeded=source.seeded,
        parameters={
            "quantiles": (p_lo, p_hi),
            "grid": f"0 and ±2^k, k = {-K_LOW}..{K_HIGH}",
            "privacy_unit": privacy_unit,
            "max_rows_per_unit": m,
        },
    )


def _check_quantiles(quantiles: Any) -> tuple[float, float]:
    try:
        p_lo, p_hi = (float(q) for q in quantiles)
    except (TypeError, ValueError):
        raise InputError(
            "The 'quantiles' parameter of private_bounds must be two numbers, e.g. (0.02, 0.98)."
        ) from None
    if not (0.0 <= p_lo < p_hi <= 1.0) or math.isnan(p_lo) or math.isnan(p_hi):
        raise InputError(
            "The 'quantiles' of private_bounds must satisfy 0 <= low < high <= 1, e.g. "
            "(0.02, 0.98)."
        )
    return p_lo, p_hi


def _values(
    data: Any,
    column: str | None,
    unit: str | None,
    m: int,
    nulls: str,
    source: Any,
    casts: Mapping[str, Cast],
) -> np.ndarray:
    from dpsense.release import _is_table

    if _is_table(data) or unit is not None or column is not None or casts:
        return bounded_values(
            data,
            column=column,
            privacy_unit=unit,
            max_rows_per_unit=m,
            nulls=nulls,
            rng=source,
            schema=casts,
        )
    # the table path draws a bounding key from the generator first: drawing it here too
    # keeps seeded releases equal whatever the input's format
    source.words(2)
    # infinities fall in the outermost buckets of the histogram, as any value beyond
    # the grid does; NaN and None are missing values, for nulls=
    return as_data(data, name="data", where="private_bounds", allow_empty=True, nulls=nulls)
