r"""Noise calibration for the Gaussian mechanism.

* Classic (Dwork & Roth 2014, Theorem A.1):
  :math:`\sigma = \Delta_2\sqrt{2\ln(1.25/\delta)}/\varepsilon`, proven only for
  :math:`\varepsilon < 1`; dpsense refuses it otherwise.
* Analytic (Balle & Wang 2018, Theorem 8): the smallest sigma with

  .. math::
      \Phi\left(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\right)
      - e^{\varepsilon}\,\Phi\left(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\right)
      \le \delta,

  valid for every epsilon > 0, found with scipy's ``brentq`` on a log-space evaluation,
  nudged upward until the inequality holds in floating point and then until it holds in a
  256-bit evaluation (mpmath), which the cancellation of the two terms cannot defeat.
"""

from __future__ import annotations

import functools
import math
import threading
from fractions import Fraction
from typing import Any

from dpsense._exact_budget import exact, log_bounds, quotient_up, sqrt_bounds
from dpsense.errors import Assign, InputError

__all__ = ["analytic_gaussian_delta", "analytic_gaussian_sigma", "classic_gaussian_sigma"]


def analytic_gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """The exact delta of the Gaussian mechanism with scale sigma (Balle & Wang, Thm 8)."""
    a = sensitivity / (2.0 * sigma) - epsilon * sigma / sensitivity
    b = -sensitivity / (2.0 * sigma) - epsilon * sigma / sensitivity
    from scipy import special  # lazy: scipy costs ~0.4 s to import

    return float(special.ndtr(a) - math.exp(epsilon + special.log_ndtr(b)))


def classic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon, rounded up, for epsilon < 1 only."""
    if epsilon >= 1.0:
        raise InputError(
            "The classic Gaussian mechanism is only proven for epsilon < 1 (Dwork & Roth, "
            "Theorem A.1). Got ",
            Assign("epsilon", f"{epsilon:g}"),
            "; use analytic=True instead.",
        )
    # rounded up: ln and sqrt enclosed from above, then one rounding of the exact rational
    log_high = log_bounds(Fraction(5, 4) / exact(delta))[1]
    return quotient_up(exact(sensitivity) * sqrt_bounds(2 * log_high)[1], epsilon)


@functools.lru_cache(maxsize=256)  # a pure function, called once per group
def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """The smallest sigma for which the Gaussian mechanism is (epsilon, delta)-DP."""
    if not 0.0 < delta < 1.0:
        raise InputError(
            "The Gaussian mechanism needs delta in (0, 1). Got ",
            Assign("delta", repr(delta)),
            " instead.",
        )

    def excess(sigma: float) -> float:
        return analytic_gaussian_delta(sigma, sensitivity, epsilon) - delta

    hi = sensitivity * (math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon + 1.0)
    while excess(hi) > 0:
        hi *= 2.0
    lo = hi / 2.0
    while excess(lo) <= 0 and lo > 1e-300:
        lo /= 2.0
    from scipy import optimize

    sigma = float(optimize.brentq(excess, lo, hi, xtol=1e-15 * hi, rtol=1e-14, maxiter=500))
    while excess(sigma) > 0:  # land on the private side of the root
        sigma = math.nextafter(sigma, math.inf) * (1.0 + 1e-15)
    # The two terms of delta cancel when delta is far below them (relative errors of 1e-11
    # measured at delta = 1e-30): confirm at 256 bits, moving sigma up until it holds.
    step = 2.0**-50
    while _precise_delta(sigma, sensitivity, epsilon) > delta:
        sigma *= 1.0 + step
        step *= 2.0
    return sigma


_CONTEXTS = threading.local()


def _precise_delta(sigma: float, sensitivity: float, epsilon: float) -> Any:
    """The Balle-Wang delta of sigma at 256 bits (mpmath), for the final check."""
    ctx = getattr(_CONTEXTS, "ctx", None)
    if ctx is None:  # a private context: no other code's precision setting is touched
        from mpmath import MPContext  # type: ignore[import-untyped,unused-ignore]

        ctx = _CONTEXTS.ctx = MPContext()
        ctx.prec = 256
    s, d, e = ctx.mpf(sigma), ctx.mpf(sensitivity), ctx.mpf(epsilon)
    return ctx.ncdf(d / (2 * s) - e * s / d) - ctx.exp(e) * ctx.ncdf(-d / (2 * s) - e * s / d)
