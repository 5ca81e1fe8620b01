r"""Propose-test-release (Dwork & Lei 2009; the often-quoted threshold corrected).

1. The analyst proposes a bound b on the local sensitivity.
2. Test: :math:`D(x, b) = \min\{k : A(x, k) > b\}` has sensitivity 1; add exact discrete
   Laplace noise Z of scale :math:`1/\varepsilon_t`.
3. If :math:`D + Z < m^*` refuse (⊥); else release :math:`f(x) + \mathrm{Lap}(b/\varepsilon_r)`.

The threshold is the smallest integer :math:`m^*` with :math:`P(Z \ge m^*) \le \delta`, from
the exact tail of the discrete Laplace, :math:`P(Z \ge m) = q^m/(1+q)`, :math:`q = e^{-1/s}`,
bounded from above with enclosed exponentials and compared with delta in exact rationals
(docs/noise.md §8).
(The continuous-Laplace version is :math:`T = \ln(1/(2\delta))/\varepsilon_t`; the
often-quoted :math:`\ln(2/\delta)/(2\varepsilon)` is too small — docs/frameworks.md.)

Guarantee: :math:`(\varepsilon_t + \varepsilon_r, \delta)`-DP. A refusal spends the whole
budget too.

Floating point: the released value is the statistic's exact rational ``_value_exact``,
within E = ``exact_value_error`` of f, so its local sensitivity is at most
:math:`LS_f + 2E`. The test therefore uses :math:`D(x, b - 2E)` (a distance to instability
of the same A(k), hence sensitivity 1), and refuses outright when :math:`b \le 2E`
(docs/sensitivity.md §Floating-point error of f).
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpsense._exact_budget import exact, exp_bounds, float_down, quotient_up, rational_at_least
from dpsense.errors import Assign, InputError, Param
from dpsense.mechanisms.additive import LaplaceMechanism
from dpsense.methods._release import (
    Release,
    accuracy_parameters,
    on_resolution,
    resolution_parameters,
)
from dpsense.methods.call import MethodCall
from dpsense.methods.global_sensitivity import output_range
from dpsense.methods.smooth import profile_value
from dpsense.noise.exact import discrete_laplace
from dpsense.params import check_finite, rest_of_budget
from dpsense.statistics import INFINITE_DISTANCE

__all__ = ["checked_ptr_options", "ptr_threshold", "release_ptr"]

_SCALE_DENOMINATOR = 2**20


def _test_scale(epsilon_test: float) -> Fraction:
    """1/epsilon_t as a fraction with a small denominator, rounded up."""
    return rational_at_least(1 / exact(epsilon_test), _SCALE_DENOMINATOR)


def _tail(m: int, scale: float) -> float:
    """P(Z >= m) for the discrete Laplace of this scale (m >= 0)."""
    q = math.exp(-1.0 / scale)
    return math.exp(-m / scale) / (1.0 + q)


def _tail_above(m: int, scale: Fraction) -> Fraction:
    """A certified upper bound on P(Z >= m) = q^m / (1 + q), q = e^{-1/scale}."""
    return exp_bounds(-m / scale)[1] / (1 + exp_bounds(-1 / scale)[0])


def ptr_threshold(epsilon_test: float, delta: float) -> int:
    """The smallest integer m whose certified bound on P(Z >= m) is at most delta, for
    Z ~ DLap(1/epsilon_test) (exp enclosed from above, compared in exact rationals)."""
    scale = _test_scale(epsilon_test)
    bound = exact(delta)
    q = math.exp(-1.0 / float(scale))
    m = max(0, math.ceil(float(scale) * math.log(1.0 / (delta * (1.0 + q)))))  # a start
    while _tail_above(m, scale) > bound:
        m += 1
    while m > 0 and _tail_above(m - 1, scale) <= bound:
        m -= 1
    return m


def _test_bound(bound: float, error: float) -> float | None:
    """The largest double <= bound - 2 * error, or None when that is negative or unknown."""
    if not math.isfinite(error):
        return None
    target = Fraction(bound) - 2 * Fraction(error)
    if target < 0:
        return None
    down = float_down(target)
    return max(down, 0.0)


def checked_ptr_options(
    delta: float, bound: object = None, test_fraction: object = 0.5
) -> tuple[float, float]:
    """(bound, test_fraction) of propose-test-release, checked from the parameters alone
    (``query.methods.check_parameters`` runs it before any charge)."""
    if bound is None:
        raise InputError(
            "Propose-test-release needs a proposed bound on the local sensitivity: pass ",
            Assign("bound"),
            ", chosen without looking at the data.",
        )
    b = check_finite(bound, "bound", where="ptr")
    frac = check_finite(test_fraction, "test_fraction", where="ptr")
    if b <= 0:
        raise InputError(
            Param("bound", word="option", of="ptr"), f" must be a float > 0. Got {bound!r} instead."
        )
    if not 0.0 < frac < 1.0:
        raise InputError(
            Param("test_fraction", word="option", of="ptr"),
            f" must be in (0, 1). Got {test_fraction!r} instead.",
        )
    if delta == 0.0:
        raise InputError(
            "Propose-test-release is (epsilon, delta)-DP: pass ",
            Assign("delta"),
            " > 0 (e.g. 1e-6).",
        )
    return b, frac


def release_ptr(
    call: MethodCall,
    *,
    bound: object = None,
    test_fraction: object = 0.5,
) -> Release:
    """Propose-test-release with the statistic's distance to instability."""
    xc, statistic, epsilon, delta, neighbours, rng = call.parts()
    b, frac = checked_ptr_options(delta, bound, test_fraction)
    eps_test = frac * epsilon
    eps_release = rest_of_budget(epsilon, eps_test)
    threshold = ptr_threshold(eps_test, delta)
    test_bound = _test_bound(b, statistic.exact_value_error)
    # b <= 2E: no dataset is certified safe, so the distance is 0
    profile = statistic.profile(xc, neighbours)
    distance = 0 if test_bound is None else profile.distance(test_bound)
    noise = int(discrete_laplace(rng, _test_scale(eps_test), 1)[0])
    passed = distance == INFINITE_DISTANCE or distance + noise >= threshold
    params = {
        "bound": b,
        "test_fraction": frac,
        "threshold": threshold,
        **resolution_parameters(statistic),
    }
    common = {
        "neighbours": neighbours,
        "statistic": statistic.name,
        "seeded": rng.seeded,
        "parameters": params,
    }
    scale = quotient_up(b, eps_release)
    if not passed:
        return Release(None, True, epsilon, delta, "ptr", "laplace", scale, **common)  # type: ignore[arg-type]
    value_exact = profile_value(profile, statistic, xc)
    out = LaplaceMechanism(b, eps_release).release(value_exact, rng)
    lo, hi = output_range(statistic, xc.shape[0] if neighbours == "substitute" else None)
    value = on_resolution(statistic, float(min(max(out.value, lo), hi)))
    if out.grid is not None:  # public: the noise grid and the proven error of the value
        params.update(accuracy_parameters(statistic, out.grid))
        # the answer is the value plus Laplace noise of a public scale, test or no test
        params["interval"] = {"kind": "noise", "range": (lo, hi)}
    return Release(value, False, epsilon, delta, "ptr", "laplace", out.scale, **common)  # type: ignore[arg-type]
