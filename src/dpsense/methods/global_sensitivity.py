r"""The ``global`` method: noise calibrated to global sensitivity.

* Count: discrete Laplace (pure epsilon), whatever ``noise`` says; under substitute the
  count is public and released as is.
* Mean under add-remove (n private): noisy sum over noisy count (the textbook split),
  each with half the budget; the sum is of the records mapped to a fine public grid centred at the
  midpoint (accumulated exactly in integers), so its sensitivity is about w/2.
* Everything else: Laplace at the global sensitivity (pure epsilon), or the analytic
  Gaussian when ``noise="gaussian"`` and delta > 0. Under substitute the global
  sensitivity uses the public n.

Floating point: the value is the statistic's exact rational ``_value_exact``, rounded to
the noise grid in exact arithmetic, and the sensitivity is inflated by twice its proven
error bound ``exact_value_error`` (|f^(x) - f^(x')| <= |f(x) - f(x')| + 2E), so the
guarantee is about the computed value (docs/sensitivity.md §Floating-point error of f).

Outputs are clipped to the statistic's range (post-processing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from dpsense._arrays import FloatArray
from dpsense._exact_budget import float_up, quotient_down
from dpsense.errors import Assign, InputError, Param
from dpsense.mechanisms.additive import (
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
)
from dpsense.methods._release import (
    Release,
    accuracy_parameters,
    on_resolution,
    resolution_parameters,
)
from dpsense.methods.call import MethodCall
from dpsense.methods.intervals import ratio_parts
from dpsense.neighbours import Neighbours
from dpsense.noise.rng import RandomSource
from dpsense.statistics import Count, Mean, Statistic
from dpsense.statistics._exact import RecordGrid
from dpsense.statistics._records import grid_sum, record_count
from dpsense.statistics.units import rows_per_unit

__all__ = ["checked_global_noise", "inflated_sensitivity", "output_range", "release_global"]


def inflated_sensitivity(sensitivity: float | Fraction, statistic: Statistic) -> float:
    """``sensitivity + 2 * exact_value_error``, rounded up: covers the computed value.

    ``sensitivity`` may be an exact rational (``w / k``): it is rounded once, here, up."""
    error = statistic.exact_value_error
    if not math.isfinite(error):
        raise InputError(
            f"The {statistic.name} statistic has no proven bound on the floating-point "
            "error of its value; implement exact_value_error to release it."
        )
    return float_up(Fraction(sensitivity) + 2 * Fraction(error))


def output_range(statistic: Statistic, n: int | None = None) -> tuple[float, float]:
    """The public range of the statistic's values, used to clip releases (each statistic
    says its own: :meth:`Statistic.output_range`)."""
    return statistic.output_range(n)


def _clip(value: float, statistic: Statistic, n: int | None) -> float:
    lo, hi = output_range(statistic, n)
    return on_resolution(statistic, float(min(max(value, lo), hi)))


def checked_global_noise(noise: str | None, delta: float) -> str:
    """The global method's ``noise`` option ("laplace" by default), checked from the
    parameters alone (``query.methods.check_parameters`` runs it before any charge)."""
    noise = noise or "laplace"
    if noise not in ("laplace", "gaussian"):
        raise InputError(
            Param("noise", word="option", method="global"),
            f" must be 'laplace' or 'gaussian'. Got {noise!r} instead.",
        )
    if noise == "gaussian" and delta == 0.0:
        raise InputError(
            "Gaussian noise needs delta > 0: pass ",
            Assign("delta"),
            " or ",
            Assign("noise", "laplace", quoted=True),
            ".",
        )
    return noise


@dataclass(frozen=True)
class _Receipt:
    """Builds the :class:`Release` of one global-sensitivity release (fixed public parts)."""

    statistic: Statistic
    epsilon: float
    neighbours: Neighbours
    rng: RandomSource
    n: int | None = None
    """The public number of records (substitute), for a sum's range; None: private."""

    def __call__(
        self,
        value: float,
        dlt: float,
        kind: str | None,
        scale: float | None,
        rho: float | None = None,
        grid: float | None = None,
    ) -> Release:
        statistic = self.statistic
        params = resolution_parameters(statistic)
        if grid is not None:  # public: the noise grid and the proven error of the value
            params.update(accuracy_parameters(statistic, grid))
        if kind is None or grid is not None or kind == "discrete-laplace":
            # value ± accuracy within the statistic's public range
            params["interval"] = {"kind": "noise", "range": output_range(statistic, self.n)}
        return Release(
            value,
            False,
            self.epsilon,
            dlt,
            "global",
            kind,
            scale,
            self.neighbours,
            statistic.name,
            self.rng.seeded,
            rho,
            params,
        )


def release_global(
    call: MethodCall,
    *,
    noise: str | None = None,
) -> Release:
    """Release ``statistic`` on clipped data with global-sensitivity noise (``xc`` may be
    records held by an engine for a count, a sum or a mean: the same exact sums)."""
    xc, statistic, epsilon, delta, neighbours, rng = call.parts()
    noise = checked_global_noise(noise, delta)
    n = record_count(xc)
    public_n = n if neighbours == "substitute" else None
    receipt = _Receipt(statistic, epsilon, neighbours, rng, public_n)

    if isinstance(statistic, Count):
        if neighbours == "substitute":  # n is public: no noise is needed
            return receipt(float(n), 0.0, None, 0.0)
        # a unit adds or removes at most m rows (m = 1 without a privacy unit)
        out = DiscreteLaplaceMechanism.for_privacy(rows_per_unit(statistic), epsilon).release(
            n, rng
        )
        return receipt(float(max(out.value, 0)), 0.0, "discrete-laplace", out.scale)

    if isinstance(statistic, Mean) and neighbours == "add-remove":
        return _noisy_sum_over_count(xc, statistic, epsilon, rng)

    sensitivity = inflated_sensitivity(
        statistic.global_sensitivity(neighbours, n=public_n), statistic
    )
    value = statistic._value_exact(xc)
    if noise == "gaussian":
        gauss = GaussianMechanism(sensitivity, epsilon, delta)
        out = gauss.release(value, rng)
        return receipt(
            _clip(out.value, statistic, public_n),
            delta,
            "gaussian",
            out.scale,
            gauss.rho,
            out.grid,
        )
    out = LaplaceMechanism(sensitivity, epsilon).release(value, rng)
    return receipt(_clip(out.value, statistic, public_n), 0.0, "laplace", out.scale, grid=out.grid)


def _noisy_sum_over_count(
    xc: FloatArray, statistic: Mean, epsilon: float, rng: RandomSource
) -> Release:
    r"""The textbook mean under add-remove: (noisy centred sum) / (noisy count) + centre.

    The centred sum is :math:`\sum_i (\varphi(x_i) - c) = \gamma \sum_i k_i`, exact in
    integers, with sensitivity :math:`\gamma \max(|k_\ell|, |k_u|) \le w/2 + \gamma`
    (:class:`~dpsense.statistics._exact.RecordGrid`); the estimate is post-processing.
    """
    half = quotient_down(epsilon, 2)  # exact but for subnormals; never above
    m = rows_per_unit(statistic)  # rows one unit adds or removes (1 without a unit)
    grid = RecordGrid.for_bounds(statistic.lower, statistic.upper)
    n = record_count(xc)  # the records may be held by an engine: the same exact sums
    centred_sum = Fraction(grid.grid) * grid_sum(grid, xc)
    sensitivity = float_up(m * grid.max_offset)  # an integer below 2^42 times 2^j, times m
    sum_out = LaplaceMechanism(sensitivity, half).release(centred_sum, rng)
    count_out = DiscreteLaplaceMechanism.for_privacy(m, half).release(n, rng)
    noisy_sum, noisy_count = sum_out.value, count_out.value
    value = grid.centre + noisy_sum / max(noisy_count, 1)
    # the interval reads both released parts (post-processing, docs/intervals.md §2)
    parts = ratio_parts(
        noisy_sum=noisy_sum,
        sum_scale=sum_out.scale,
        sum_grid=sum_out.grid,
        noisy_count=int(noisy_count),
        count_scale=count_out.scale,
        centre=grid.centre,
        value_error=float(grid.grid),
        span=output_range(statistic),
    )
    return Release(
        _clip(value, statistic, None),
        False,
        epsilon,
        0.0,
        "global",
        "laplace",
        None,
        "add-remove",
        statistic.name,
        rng.seeded,
        None,
        {"construction": "noisy sum / noisy count", "budget_split": 0.5, "interval": parts},
    )
