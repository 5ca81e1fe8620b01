r"""The interval of a smooth-sensitivity release: a private upper bound on its noise scale.

A smooth release is :math:`\tilde f(x) + (S(x)/s) Z` with S a beta-smooth upper bound on the
local sensitivity: :math:`S(x) \le e^\beta S(x')` between neighbours, so
:math:`\ln(S(x)/s)` moves by at most beta (s is public). Laplace noise of scale
:math:`\beta / \varepsilon_b` on it is an :math:`\varepsilon_b`-DP release (docs/intervals.md
§4; Nissim, Raskhodnikova and Smith 2007 for the smoothness). With probability at least
:math:`1 - \alpha/2` the true log-scale is below the released one plus the Laplace tail
:math:`t_{\alpha}`; with probability at least :math:`1 - \alpha/2`, :math:`|Z|` is below its
:math:`1 - \alpha/2` quantile q. So the release lies within
:math:`e^{\tilde L + t} q` (plus the output lattice's half-step and the statistic's proven
floating-point error) of f(x) with probability at least :math:`1 - \alpha`.

The logarithm is computed in doubles: its error is below ``LOG_ERROR``, and the Laplace
mechanism's sensitivity is inflated by twice that, so the guarantee is about the computed
value (the same argument as for every global-noise release).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

from dpsense._exact_budget import float_up
from dpsense.mechanisms.accuracy import grid_halfwidth
from dpsense.mechanisms.additive import LaplaceMechanism
from dpsense.noise.rng import RandomSource

__all__ = ["INTERVAL_NOISES", "LOG_ERROR", "noisy_log_scale", "smooth_interval"]

LOG_ERROR: Final = 2.0**-30
"""A bound on |computed ln(scale) - ln(scale)|: ``ln(numerator) - ln(denominator)`` of the
exact rational scale, each within an ulp, and the subtraction's rounding (:func:`exact_log`)."""
LOG_CAP: Final = 2.0**20
"""The log-scale is clamped to [-LOG_CAP, LOG_CAP]: within it every ulp is below 2^-32, so
the two logarithms and their difference stay within LOG_ERROR (their integers, from the
doubles and rationals of a smooth bound, have far fewer than 2^20 bits)."""
INTERVAL_NOISES: Final = ("laplace", "cauchy", "student-t")
"""The smooth noises whose releases carry an interval (Laplace-log-normal releases are
zCDP: a pure-epsilon share would change what they are charged)."""


def noisy_log_scale(
    scale: Fraction, beta: float, epsilon: float, rng: RandomSource
) -> dict[str, Any]:
    """Release ln(scale) with Laplace noise for sensitivity ``beta`` (epsilon-DP) and return
    the interval's record of it: the released log, its public noise scale and grid."""
    log_value = exact_log(scale)
    mech = LaplaceMechanism(float_up(Fraction(beta) + 2 * Fraction(LOG_ERROR)), epsilon)
    out = mech.release(log_value, rng)
    return {
        "noisy_log_scale": float(out.value),
        "log_noise_scale": float(out.scale),
        "log_grid": None if out.grid is None else float(out.grid),
    }


def exact_log(scale: Fraction) -> float:
    """ln(scale) of a positive rational within LOG_ERROR, for any size, clamped to
    [-LOG_CAP, LOG_CAP]: the logarithms of its numerator and denominator (``math.log`` of an
    int is within an ulp of its value whatever its size, with no overflow), then their
    difference. Clamping is 1-Lipschitz, so the result is still beta-smooth; a scale past
    the cap is beyond every double, and its interval is the statistic's range."""
    logs = math.log(scale.numerator) - math.log(scale.denominator)
    return min(max(logs, -LOG_CAP), LOG_CAP)


def _noise_quantile(shape: str, dof: int, tail: float) -> float:
    """q with P(|Z| > q) <= tail for the standard noise Z, rounded up."""
    if shape == "laplace":
        q = math.log(1.0 / tail)
    elif shape == "cauchy":
        q = math.tan(0.5 * math.pi * (1.0 - tail))
    else:
        from scipy import stats

        q = float(stats.t.ppf(1.0 - tail / 2.0, dof))
    return q * (1.0 + 2.0**-30)


def smooth_interval(value: float, spec: Mapping[str, Any], alpha: float) -> tuple[float, float]:
    """The interval at ``alpha`` from the release and its recorded parts (module docstring)."""
    half = alpha / 2.0
    grid = spec["log_grid"]
    # one-sided: P(noise < -t) = P(|noise| > t) / 2 <= alpha / 2
    tail = (
        0.0
        if grid is None
        else grid_halfwidth("laplace", spec["log_noise_scale"], grid, 0.0, alpha)
    )
    log_upper = spec["noisy_log_scale"] + tail + LOG_ERROR
    lo, hi = (float(v) for v in spec["range"])
    if log_upper > 700.0:  # a scale beyond every double: the range is all it can say
        return lo, hi
    scale_upper = math.exp(log_upper) * (1.0 + 2.0**-40)
    width = scale_upper * _noise_quantile(spec["shape"], int(spec["dof"]), half)
    width += 0.5 * spec["lattice"] + spec["value_error"]
    return max(value - width, lo), min(value + width, hi)
