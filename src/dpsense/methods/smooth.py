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

What is released is exactly the real-valued mechanism above, rounded to the nearest point
of a public lattice (spacing about :math:`2^{-40}` times the width of the statistic's range)
and clamped to that range: :func:`dpsense.noise.lattice.sample_on_lattice` draws that
rounded value exactly, tails included, so the printed double has precisely the distribution
the proof is about (post-processing of the real mechanism). No floating-point noise sample
is ever multiplied by the data-dependent scale. Five safeguards make the scale itself an
honest beta-smooth upper bound (docs/exact_sampling.md):

* the smooth bound is computed at :math:`\beta - 2^{-37}` and inflated by
  :math:`1 + 2^{-38}`, which absorbs its floating-point error while keeping it
  beta-smooth;
* it is floored at :math:`\max(2^{-64}\,\mathrm{cap}, 2^{-960})` (a constant: the
  maximum of a beta-smooth bound and a constant is beta-smooth), so a bound that underflows
  never means "no noise" and no subnormal rounding error reaches the maximum;
* twice the statistic's public bound on the floating-point error of its value is added
  (a constant added to a beta-smooth bound keeps it beta-smooth and makes it cover the
  local sensitivity of the computed value), and for statistics other than quantiles a
  margin of :math:`2^{-30}` times the cap covers the rounding of their closed-form local
  sensitivities;
* the divisor s is a rational lower bound on the exact one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from dpsense._arrays import FloatArray
from dpsense._exact_budget import difference_down, float_up, product_down, sqrt_bounds
from dpsense.defaults import SMOOTH_INTERVAL_SHARE
from dpsense.errors import Assign, InputError, Param
from dpsense.methods._release import Release, on_resolution, resolution_parameters
from dpsense.methods.call import MethodCall
from dpsense.methods.global_sensitivity import output_range
from dpsense.methods.smooth_interval import INTERVAL_NOISES, noisy_log_scale
from dpsense.neighbours import Neighbours
from dpsense.noise.lattice import NoiseShape, OutputLattice, sample_on_lattice
from dpsense.params import check_finite, check_int, smooth_beta
from dpsense.statistics import BoundedStatistic, Count, Quantile, Statistic, Sum

__all__ = [
    "LATTICE_NOTE",
    "SMOOTH_NOISES",
    "SmoothPlan",
    "check_smooth",
    "plan_smooth",
    "point_plan",
    "release_smooth",
    "smooth_scale",
    "zcdp_rho_for",
]

SMOOTH_NOISES: Final = ("laplace", "cauchy", "student-t", "lln")
BETA_MARGIN: Final = 2.0**-37
"""The smooth bound is computed at beta minus this (absorbs its floating-point error)."""
_MIN_BETA: Final = 2.0**-30
_BOUND_SLACK: Final = Fraction(1) + Fraction(1, 2**38)
_FLOOR: Final = Fraction(1, 2**64)
_ABSOLUTE_FLOOR: Final = Fraction(1, 2**960)
_PROFILE_MARGIN: Final = Fraction(1, 2**30)
_DIVISOR_SLACK: Final = Fraction(1) - Fraction(1, 2**40)
LATTICE_NOTE: Final = (
    "the output is the real-valued release rounded to a public lattice; where the noise is "
    "smaller than the lattice spacing it may equal the exact value on that lattice, which is "
    "still private: rounding is post-processing of a mechanism proven private over the reals"
)


@dataclass(frozen=True)
class SmoothPlan:
    """The public parameters of one smooth-sensitivity release.

    ``beta`` is the smoothness the privacy theorem needs; the bound is computed at
    ``bound_beta`` (slightly smaller, see the module docstring). ``divisor`` is an exact
    rational lower bound on the theorem's divisor s: noise of scale S/divisor is at least
    the scale the theorem asks for.
    """

    noise: str
    beta: float
    divisor: Fraction
    epsilon: float
    delta: float
    rho: float | None
    shape: NoiseShape
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def bound_beta(self) -> float:
        """The beta at which the smooth bound is computed."""
        return self.beta - BETA_MARGIN


def zcdp_rho_for(epsilon: float, delta: float) -> float:
    r"""The rho with :math:`\rho + 2\sqrt{\rho \ln(1/\delta)} = \varepsilon` (Bun & Steinke
    2016, Proposition 1.3): rho-zCDP then implies (epsilon, delta)-DP.

    Computed as :math:`(\varepsilon / (\sqrt{L + \varepsilon} + \sqrt L))^2`,
    :math:`L = \ln(1/\delta)`, which has no cancellation (relative error of a few ulps).
    """
    log_term = math.log(1.0 / delta)
    root = epsilon / (math.sqrt(log_term + epsilon) + math.sqrt(log_term))
    return root * root


def _check_beta(beta: float) -> float:
    if not beta >= _MIN_BETA:
        raise InputError(
            "This epsilon is too small for smooth sensitivity (its smoothness parameter "
            "would be below 2^-30); use ",
            Assign("method", "global", quoted=True),
            " or a larger epsilon.",
        )
    return beta


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
            Param("noise", word="option", method="smooth"),
            f" must be one of {', '.join(SMOOTH_NOISES)}. Got {noise!r} instead.",
        )
    eps = Fraction(epsilon)
    if noise == "laplace":
        return _plan_laplace(noise, epsilon, delta, eps)
    if noise == "cauchy":
        return _plan_cauchy(noise, epsilon, eps)
    if noise == "student-t":
        return _plan_student_t(noise, epsilon, eps, dof, t)
    return _plan_lln(noise, epsilon, delta, t, sigma)


def _plan_laplace(noise: str, epsilon: float, delta: float, eps: Fraction) -> SmoothPlan:
    if delta == 0.0:
        raise InputError(
            "Smooth sensitivity with Laplace noise needs delta > 0; pass ",
            Assign("delta"),
            " or use ",
            Assign("noise", "student-t", quoted=True),
            " or 'cauchy' for pure epsilon.",
        )
    beta = _check_beta(smooth_beta(epsilon, delta))
    return SmoothPlan(
        noise, beta, eps / 2, epsilon, delta, None, NoiseShape("laplace"), {"beta": beta}
    )


def _plan_cauchy(noise: str, epsilon: float, eps: Fraction) -> SmoothPlan:
    beta = _check_beta(smooth_beta(epsilon))
    return SmoothPlan(
        noise, beta, eps / 6, epsilon, 0.0, None, NoiseShape("cauchy"), {"beta": beta}
    )


def _plan_student_t(
    noise: str, epsilon: float, eps: Fraction, dof: object, t: object
) -> SmoothPlan:
    d = check_int(dof, "dof", where="smooth method", minimum=1)
    if d > 64:
        raise InputError(
            Param("dof", word="option", method="smooth"),
            f" must be an int in [1, 64]. Got {dof!r} instead.",
        )
    limit = eps / (d + 1)
    beta = float(limit) / 2.0 if t is None else check_finite(t, "t", where="smooth method")
    if not 0.0 < beta < limit:
        raise InputError(
            Param("t", word="option", method="smooth"),
            f" must be in (0, epsilon/(dof+1)) = (0, {float(limit):g}). Got {t!r} instead.",
        )
    _check_beta(beta)
    divisor = 2 * sqrt_bounds(d, 60)[0] * (limit - Fraction(beta))
    return SmoothPlan(
        noise,
        beta,
        divisor,
        epsilon,
        0.0,
        None,
        NoiseShape("student-t", dof=d),
        {"beta": beta, "dof": d},
    )


def _plan_lln(noise: str, epsilon: float, delta: float, t: object, sigma: object) -> SmoothPlan:
    if delta == 0.0:
        raise InputError(
            "Laplace-log-normal noise gives zCDP, which needs delta > 0 to state an "
            "(epsilon, delta) guarantee; pass ",
            Assign("delta"),
            " or use ",
            Assign("noise", "student-t", quoted=True),
            ".",
        )
    rho = zcdp_rho_for(epsilon, delta)
    # sqrt(2 rho) has a relative error of a few ulps: round it down by far more
    eps_prime = Fraction(math.sqrt(2.0 * rho)) * _DIVISOR_SLACK
    sig = 0.5 if sigma is None else check_finite(sigma, "sigma", where="smooth method")
    if not (sig > 0 and sig <= 8):
        raise InputError(
            f"The 'sigma' option of the lln noise must be in (0, 8]. Got {sigma!r} instead."
        )
    beta = (
        float(eps_prime * Fraction(sig)) / 2.0
        if t is None
        else check_finite(t, "t", where="smooth method")
    )
    gap = eps_prime - Fraction(beta) / Fraction(sig)
    if not (beta > 0 and gap > 0):
        raise InputError(
            "The lln noise needs 0 < t < epsilon' * sigma, where "
            f"epsilon' = {float(eps_prime):g} comes from (epsilon, delta) via zCDP."
        )
    _check_beta(beta)
    damping = Fraction(math.exp(-1.5 * sig * sig)) * _DIVISOR_SLACK
    return SmoothPlan(
        noise,
        beta,
        damping * gap,
        epsilon,
        delta,
        rho,
        NoiseShape("lln", sigma=sig),
        {"beta": beta, "sigma": sig, "t": beta},
    )


def smooth_scale(
    xc: FloatArray, statistic: BoundedStatistic, neighbours: Neighbours, plan: SmoothPlan
) -> Fraction:
    """The exact rational noise scale S/s of one release (data-dependent: never publish).

    Every term added or maxed in here is a public constant, so the result stays
    beta-smooth (docs/exact_sampling.md §3).
    """
    return _scale_and_value(xc, statistic, neighbours, plan)[0]


def _scale_and_value(
    xc: FloatArray, statistic: BoundedStatistic, neighbours: Neighbours, plan: SmoothPlan
) -> tuple[Fraction, Fraction]:
    """The scale S/s and the exact rational value f~(x), from one pass over the data
    (a quantile's value is read from the order statistics its profile selected)."""
    profile = statistic.profile(xc, neighbours)
    cap = Fraction(profile.cap)
    floor = cap * _FLOOR
    # terms provably below floor / 2 may be skipped: the floor replaces them below
    computed = Fraction(profile.smooth(plan.bound_beta, float(floor))) * _BOUND_SLACK
    # Floors: relative to the cap, and absolute so that every term that can reach the
    # maximum was computed from normal (not subnormal) doubles.
    bound = max(computed, cap * _FLOOR, _ABSOLUTE_FLOOR)
    bound += 2 * Fraction(statistic.exact_value_error)
    if not isinstance(statistic, Quantile):
        # closed-form and recomputed local sensitivities (means, variances) carry
        # rounding errors far below this public margin
        bound += cap * _PROFILE_MARGIN
    value = profile_value(profile, statistic, xc)
    return bound / plan.divisor, value


def profile_value(profile: object, statistic: Statistic, xc: FloatArray) -> Fraction:
    """f~(x) as an exact rational; for a quantile, read from its profile's window (the
    data buffer has been reordered by the selection, which f does not depend on)."""
    value = getattr(profile, "value", None)
    if isinstance(statistic, Quantile) and callable(value):
        return Fraction(value())
    return statistic._value_exact(xc)


def point_plan(
    epsilon: float, delta: float, noise: str | None = None, **noise_options: object
) -> tuple[SmoothPlan, float]:
    """The plan of a smooth release's value and the epsilon of its interval's share: for
    the noises whose plan is chosen from epsilon alone (``INTERVAL_NOISES``, no options
    set), ``SMOOTH_INTERVAL_SHARE`` of epsilon bounds the noise scale privately
    (:mod:`dpsense.methods.smooth_interval`) and the value is released with the rest;
    otherwise the value has all of it (and no interval)."""
    plan = plan_smooth(epsilon, delta, noise, **noise_options)
    if plan.noise not in INTERVAL_NOISES or noise_options:
        return plan, 0.0
    eps_bound = product_down(Fraction(SMOOTH_INTERVAL_SHARE), epsilon)
    return plan_smooth(difference_down(epsilon, eps_bound), delta, noise), eps_bound


def _check_smooth_statistic(statistic: Statistic) -> None:
    if isinstance(statistic, Count | Sum):
        raise InputError(
            f"The {statistic.name} has the same local and global sensitivity: use ",
            Assign("method", "global", quoted=True),
            " (smooth sensitivity cannot help it).",
        )


def check_smooth(
    statistic: Statistic,
    *,
    epsilon: float,
    delta: float,
    noise: str | None = None,
    **noise_options: object,
) -> None:
    """What :func:`release_smooth` refuses from its parameters alone (the statistic, the
    noise and its options at this budget), without data (``query.methods.check_parameters``
    runs it before any charge)."""
    _check_smooth_statistic(statistic)
    point_plan(epsilon, delta, noise, **noise_options)  # the value's plan: what runs


def release_smooth(
    call: MethodCall,
    *,
    noise: str | None = None,
    with_interval: bool = True,
    **noise_options: object,
) -> Release:
    """Release ``statistic`` on clipped data with smooth-sensitivity noise (and, unless
    ``with_interval`` is False, a private bound on its noise scale for its interval)."""
    xc, statistic, epsilon, delta, neighbours, rng = call.parts()
    _check_smooth_statistic(statistic)
    assert isinstance(statistic, BoundedStatistic)
    plan = plan_smooth(epsilon, delta, noise, **noise_options)
    main, eps_bound = point_plan(epsilon, delta, noise, **noise_options)
    if not with_interval:
        main, eps_bound = plan, 0.0
    with_interval = eps_bound > 0
    lo, hi = output_range(statistic, xc.shape[0] if neighbours == "substitute" else None)
    lattice = OutputLattice.for_range(lo, hi)
    scale, value = _scale_and_value(xc, statistic, neighbours, main)
    k = sample_on_lattice(rng, main.shape, value, scale, lattice)
    params = {
        **main.parameters,
        "lattice": lattice.spacing,
        "note": LATTICE_NOTE,
        **resolution_parameters(statistic),
    }
    if with_interval:
        params["interval"] = {
            "kind": "smooth",
            **noisy_log_scale(scale, main.beta, eps_bound, rng),
            "shape": main.noise,
            "dof": main.shape.dof,
            "lattice": lattice.spacing,
            "value_error": float_up(Fraction(statistic.exact_value_error)),
            "range": (lo, hi),
            "share": SMOOTH_INTERVAL_SHARE,
        }
    return Release(
        on_resolution(statistic, lattice.value(k)),
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
        params,
    )
