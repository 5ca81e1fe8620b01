r"""The ``adaptive`` method for quantiles: a private stability test picks the mechanism.

Smooth sensitivity is nearly exact when the quantile sits deep inside a run of ties and
poor on spread-out data, where the exponential mechanism wins (benchmarks/results/
utility.md). No rule on public information can tell the two apart, so this method lets the
data decide — privately:

1. Spend :math:`\varepsilon_t` (``test_fraction`` of epsilon, default 0.15) on
   :math:`D(x, b) + Z`: the distance to instability for a tiny public bound
   :math:`b = w\,2^{-20}` (sensitivity 1) plus exact discrete Laplace noise Z of scale
   :math:`1/\varepsilon_t`.
2. With the remaining :math:`\varepsilon_m`, release by smooth sensitivity with Student's t
   noise (pure epsilon, :math:`\beta = \varepsilon_m/8`) when

   .. math:: D + Z \ge T = \max\left(\left\lceil \frac{\ln(5/\varepsilon_m)}{\beta}
             \right\rceil, \left\lceil \frac{3.9}{\varepsilon_t} \right\rceil\right),

   else by the exponential mechanism. The first term is the break-even distance: beyond
   it the smooth bound :math:`\approx e^{-\beta D}` times a gap gives an expected error
   :math:`\approx 2.5 S/\varepsilon_m` below the exponential mechanism's half-gap on tied
   data. The second keeps the chance of choosing smooth sensitivity on unstable data
   (D = 0) at :math:`e^{-3.9}/2 \approx 1\%`.

Privacy: the test is :math:`\varepsilon_t`-DP and each branch is
:math:`\varepsilon_m`-DP, so by adaptive sequential composition the release is
:math:`\varepsilon`-DP (and (epsilon, delta)-DP for any delta). The branch is on the
receipt; it is part of the private output.

Price: both branches run on :math:`0.85\,\varepsilon`. For the exponential mechanism that
costs ~18% accuracy; for smooth sensitivity in the tied regime, where the error decays like
:math:`e^{-\beta D}`, it can cost a factor of a few on errors that are already tiny.
"""

from __future__ import annotations

import math
from dataclasses import replace

from dpsense._exact_budget import exact, rational_at_least
from dpsense.errors import Assign, InputError, Param
from dpsense.methods._release import Release
from dpsense.methods.call import MethodCall
from dpsense.methods.exponential import release_exponential
from dpsense.methods.smooth import point_plan, release_smooth
from dpsense.noise.exact import discrete_laplace
from dpsense.params import check_finite, rest_of_budget
from dpsense.statistics import INFINITE_DISTANCE, Quantile, Statistic

__all__ = ["checked_adaptive", "release_adaptive"]

_BOUND_BITS = 20
_BREAK_EVEN = 5.0
_CONFIDENCE = 3.9
_SMOOTH_NOISE = "student-t"


def checked_adaptive(statistic: Statistic, test_fraction: object = 0.15) -> float:
    """The test's share of epsilon, with the statistic and the option checked from the
    parameters alone (``query.methods.check_parameters`` runs it before any charge)."""
    if not isinstance(statistic, Quantile):
        raise InputError(
            Assign("method", "adaptive", quoted=True),
            f" releases quantiles (Quantile or Median); got {statistic.name}.",
        )
    frac = check_finite(test_fraction, "test_fraction", where="adaptive")
    if not 0.0 < frac < 1.0:
        raise InputError(
            Param("test_fraction", word="option", of="adaptive"),
            f" must be in (0, 1). Got {test_fraction!r} instead.",
        )
    return frac


def release_adaptive(
    call: MethodCall,
    *,
    test_fraction: object = 0.15,
) -> Release:
    """Release a quantile with smooth sensitivity or the exponential mechanism, chosen by a
    private stability test."""
    xc, statistic, epsilon, _, neighbours, rng = call.parts()  # delta unused
    frac = checked_adaptive(statistic, test_fraction)
    assert isinstance(statistic, Quantile)
    eps_test = frac * epsilon
    eps_main = rest_of_budget(epsilon, eps_test)
    plan, _ = point_plan(eps_main, 0.0, _SMOOTH_NOISE)  # the smooth branch's value's plan
    bound = statistic.width * 2.0**-_BOUND_BITS
    d0 = math.ceil(math.log(max(_BREAK_EVEN / eps_main, math.e)) / plan.beta)
    threshold = max(d0, math.ceil(_CONFIDENCE / eps_test))
    distance = statistic.profile(xc, neighbours).distance(bound)
    scale = rational_at_least(1 / exact(eps_test), 2**20)
    noise = int(discrete_laplace(rng, scale, 1)[0])
    stable = distance == INFINITE_DISTANCE or distance + noise >= threshold
    if stable:
        inner = release_smooth(replace(call, epsilon=eps_main), noise=plan.noise)
    else:
        inner = release_exponential(replace(call, epsilon=eps_main, delta=0.0))
    params = {
        "branch": inner.method,
        "test_fraction": frac,
        "test_threshold": threshold,
        **inner.parameters,
    }
    return Release(
        inner.value,
        False,
        epsilon,
        inner.delta,
        "adaptive",
        inner.noise,
        None,
        neighbours,
        statistic.name,
        rng.seeded,
        inner.rho,
        params,
        inner.interval_parts,
    )
