r"""The ``smooth`` method: noise scaled to a beta-smooth upper bound on local sensitivity.

Release :math:`f(x) + \frac{S(x)}{s} Z` (NRS07; Bun & Steinke 2019), with S the smooth
bound of :meth:`Statistic.smooth_sensitivity` at the beta the noise requires:

* ``laplace``: :math:`\beta = \varepsilon/(2\ln(2/\delta))`, :math:`s = \varepsilon/2`;
  (epsilon, delta)-DP (NRS07, Lemma 2.6).
* ``cauchy``: :math:`\beta = \varepsilon/6`, :math:`s = \varepsilon/6`; pure epsilon
  (NRS07, Lemma 2.7).
* ``student-t`` with d degrees of freedom: :math:`\beta = t` with
  :math:`0 < t < \varepsilon/(d+1)`, :math:`s = 2\sqrt d\,(\varepsilon/(d+1) - t)`; pure
  epsilon (Bun & Steinke 2019). Default d = 3, :math:`t = \varepsilon/(2(d+1))`.
* ``lln`` (Laplace-log-normal, sigma): :math:`\beta = t`,
  :math:`s = e^{-1.5\sigma^2}(\varepsilon' - t/\sigma)`;
  :math:`\varepsilon'^2/2`-zCDP (Bun & Steinke 2019). Default sigma = 1/2,
  :math:`t = \varepsilon'\sigma/2`.

For ``lln`` the caller's (epsilon, delta) is met through zCDP:
:math:`\rho + 2\sqrt{\rho\ln(1/\delta)} = \varepsilon`, :math:`\varepsilon' = \sqrt{2\rho}`.

Two safeguards (docs/frameworks.md): the smooth bound is floored at
:math:`\mathrm{cap}\,e^{-K\beta}` with :math:`K = \lceil 690/\beta \rceil` (SPEC §2's S_K, so a
bound that underflows to 0 never means "no noise"), and the noisy double is rounded to a
power-of-two grid fixed by the public bounds and clipped to the statistic's range, so the
output's support never depends on the data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpsense._arrays import FloatArray
from dpsense.errors import InputError
from dpsense.methods._release import Release
from dpsense.methods.global_sensitivity import output_range
from dpsense.neighbours import Neighbours
from dpsense.noise import continuous
from dpsense.noise.grid import pow2_at_most
from dpsense.noise.rng import RandomSource
from dpsense.params import check_finite, check_int
from dpsense.statistics import BoundedStatistic, Count, Statistic, Sum

__all__ = ["SMOOTH_NOISES", "SmoothPlan", "plan_smooth", "release_smooth", "zcdp_rho_for"]

SMOOTH_NOISES = ("laplace", "cauchy", "student-t", "lln")
_FLOOR_EXPONENT = 690.0  # e^-690 ~ 1e-300: the smallest floor that is still a double
_GRID_BITS = 40


class SmoothPlan:
    """The public parameters of one smooth-sensitivity release."""

    def __init__(
        self,
        noise: str,
        beta: float,
        divisor: float,
        epsilon: float,
        delta: float,
        rho: float | None,
        parameters: dict[str, Any],
    ) -> None:
        self.noise = noise
        self.beta = beta
        self.divisor = divisor
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.parameters = parameters

    def draw(self, rng: RandomSource) -> float:
        """One draw of the standard noise Z."""
        if self.noise == "laplace":
            return float(continuous.standard_laplace(rng, 1)[0])
        if self.noise == "cauchy":
            return float(continuous.cauchy(rng, 1)[0])
        if self.noise == "student-t":
            return float(continuous.student_t(rng, float(self.parameters["dof"]), 1)[0])
        return float(continuous.laplace_log_normal(rng, float(self.parameters["sigma"]), 1)[0])


def zcdp_rho_for(epsilon: float, delta: float) -> float:
    r"""The rho with :math:`\rho + 2\sqrt{\rho \ln(1/\delta)} = \varepsilon` (Bun & Steinke
    2016, Proposition 1.3): rho-zCDP then implies (epsilon, delta)-DP."""
    log_term = math.log(1.0 / delta)
    root = math.sqrt(log_term + epsilon) - math.sqrt(log_term)
    return root * root


def plan_smooth(
    epsilon: float,
    delta: float,
    noise: str | None = None,
    *,
    dof: object = 3,
    t: object = None,
    sigma: object = None,
) -> SmoothPlan:
    """Choose beta and the noise divisor from public parameters only."""
    if noise is None:
        noise = "laplace" if delta > 0 else "student-t"
    if noise not in SMOOTH_NOISES:
        raise InputError(
            f"The 'noise' option of the smooth method must be one of {', '.join(SMOOTH_NOISES)}. "
            f"Got {noise!r} instead."
        )
    if noise == "laplace":
        if delta == 0.0:
            raise InputError(
                "Smooth sensitivity with Laplace noise needs delta > 0; pass delta=... or use "
                "noise='student-t' or 'cauchy' for pure epsilon."
            )
        beta = epsilon / (2.0 * math.log(2.0 / delta))
        return SmoothPlan(noise, beta, epsilon / 2.0, epsilon, delta, None, {"beta": beta})
    if noise == "cauchy":
        beta = epsilon / 6.0
        return SmoothPlan(noise, beta, epsilon / 6.0, epsilon, 0.0, None, {"beta": beta})
    if noise == "student-t":
        d = check_int(dof, "dof", where="smooth method", minimum=1)
        limit = epsilon / (d + 1)
        beta = limit / 2.0 if t is None else check_finite(t, "t", where="smooth method")
        if not 0.0 < beta < limit:
            raise InputError(
                f"The 't' option of the smooth method must be in (0, epsilon/(dof+1)) = "
                f"(0, {limit:g}). Got {t!r} instead."
            )
        divisor = 2.0 * math.sqrt(d) * (limit - beta)
        return SmoothPlan(noise, beta, divisor, epsilon, 0.0, None, {"beta": beta, "dof": d})
    if delta == 0.0:
        raise InputError(
            "Laplace-log-normal noise gives zCDP, which needs delta > 0 to state an "
            "(epsilon, delta) guarantee; pass delta=... or use noise='student-t'."
        )
    rho = zcdp_rho_for(epsilon, delta)
    eps_prime = math.sqrt(2.0 * rho)
    sig = 0.5 if sigma is None else check_finite(sigma, "sigma", where="smooth method")
    beta = eps_prime * sig / 2.0 if t is None else check_finite(t, "t", where="smooth method")
    if not (sig > 0 and 0.0 < beta < eps_prime * sig):
        raise InputError(
            "The lln noise needs sigma > 0 and 0 < t < epsilon' * sigma, where "
            f"epsilon' = {eps_prime:g} comes from (epsilon, delta) via zCDP."
        )
    divisor = math.exp(-1.5 * sig * sig) * (eps_prime - beta / sig)
    return SmoothPlan(
        noise, beta, divisor, epsilon, delta, rho, {"beta": beta, "sigma": sig, "t": beta}
    )


def release_smooth(
    xc: FloatArray,
    statistic: Statistic,
    *,
    epsilon: float,
    delta: float,
    neighbours: Neighbours,
    rng: RandomSource,
    noise: str | None = None,
    **noise_options: object,
) -> Release:
    """Release ``statistic`` on clipped data with smooth-sensitivity noise."""
    if isinstance(statistic, Count | Sum):
        raise InputError(
            f"The {statistic.name} has the same local and global sensitivity: use "
            "method='global' (smooth sensitivity cannot help it)."
        )
    assert isinstance(statistic, BoundedStatistic)
    plan = plan_smooth(epsilon, delta, noise, **noise_options)
    profile = statistic.profile(xc, neighbours)
    cap = profile.cap
    k_floor = math.ceil(_FLOOR_EXPONENT / plan.beta)
    smooth = max(profile.smooth(plan.beta), cap * math.exp(-plan.beta * k_floor))
    value = statistic._value(xc)
    raw = value + (smooth / plan.divisor) * plan.draw(rng)
    lo, hi = output_range(statistic, xc.shape[0] if neighbours == "substitute" else None)
    grid = pow2_at_most(statistic.width) * 2.0**-_GRID_BITS
    rounded = float(np.rint(raw / grid) * grid) if math.isfinite(raw) else raw
    released = float(min(max(rounded, lo), hi))
    return Release(
        released,
        False,
        plan.epsilon,
        plan.delta,
        "smooth",
        plan.noise,
        None,
        neighbours,
        statistic.name,
        rng.seeded,
        plan.rho,
        {**plan.parameters, "grid": grid},
    )
