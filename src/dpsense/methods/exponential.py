"""The ``exponential`` method: quantiles by the exponential mechanism (Smith 2011).

The standard baseline for private quantiles: pure epsilon, no sensitivity analysis of the
data needed. See :mod:`dpsense.mechanisms.quantile` and docs/quantile_mechanisms.md.
"""

from __future__ import annotations

from dpsense._arrays import FloatArray
from dpsense.errors import InputError
from dpsense.mechanisms.quantile import ExponentialQuantile
from dpsense.methods._release import Release
from dpsense.neighbours import Neighbours
from dpsense.noise.rng import RandomSource
from dpsense.statistics import Quantile, Statistic
from dpsense.statistics.units import group_privacy_budget, rows_per_unit

__all__ = ["release_exponential"]


def _grid_parameters(statistic: Quantile, spacing: float) -> dict[str, object]:
    if statistic.resolution is None:
        return {"grid": spacing}
    return {"grid": spacing, "resolution": statistic.resolution}


def release_exponential(
    xc: FloatArray,
    statistic: Statistic,
    *,
    epsilon: float,
    delta: float,
    neighbours: Neighbours,
    rng: RandomSource,
) -> Release:
    """Release a quantile with the exponential mechanism (pure epsilon; delta unused).

    ``xc`` (clipped records) is reordered in place: callers pass a buffer they own.
    """
    if not isinstance(statistic, Quantile):
        raise InputError(
            "method='exponential' releases quantiles (Quantile or Median); "
            f"got {statistic.name}. Use 'global', 'smooth' or 'ptr'."
        )
    # a unit moves every score by at most m times a row's change (m = 1 without a unit)
    mech = ExponentialQuantile(
        statistic.p,
        statistic.lower,
        statistic.upper,
        group_privacy_budget(epsilon, 0.0, rows_per_unit(statistic))[0],
        statistic.resolution,
        neighbours,
    )
    out = mech.release_clipped(xc, rng)
    return Release(
        float(out.value),
        False,
        epsilon,
        0.0,
        "exponential",
        mech.selection,
        None,
        neighbours,
        statistic.name,
        rng.seeded,
        None,
        _grid_parameters(statistic, mech.grid),
    )
