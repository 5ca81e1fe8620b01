r"""What one release by a method costs in zero-concentrated DP, from public parameters only.

A rho budget (:class:`dpsense.Accountant` with ``rho=``) charges a release before anything
is drawn, so its cost must follow from the method, its options, epsilon, delta and the
statistic's type — never from the data. :func:`method_rho` gives it for one release by a
resolved method (not ``"auto"``):

* pure epsilon-DP releases — ``exponential``, ``adaptive``, ``ksw``, ``global`` with Laplace
  or discrete Laplace noise (counts, and means under add-remove, whatever ``noise`` says),
  ``smooth`` with Cauchy or Student's t noise — are :math:`\varepsilon^2/2`-zCDP (Bun &
  Steinke 2016, Prop. 1.4);
* ``smooth`` with ``noise="lln"`` is :math:`\rho`-zCDP with the rho its plan
  (:func:`~dpsense.methods.smooth.plan_smooth`, the release's own) is calibrated to, which
  bounds the rho it achieves;
* ``global`` with ``noise="gaussian"`` is :math:`\Delta^2/(2\sigma^2)`-zCDP; sigma is the
  analytic Gaussian's, a function of :math:`\Delta/\sigma` only, so the rho depends on
  (epsilon, delta) alone. It is computed at :math:`\Delta = 1` and raised by a relative
  :math:`2^{-30}`, far above the root finder's relative error (1e-14) that separates it from
  the rho of another :math:`\Delta` (``tests/methods/test_zcdp_cost.py`` checks the receipts);
* everything else with delta > 0 — smooth sensitivity with Laplace noise,
  propose-test-release, ``bounded-ls`` — is (epsilon, delta)-DP with no zCDP guarantee:
  None.

Amounts follow the accountant's convention: a float epsilon is read by its shortest decimal
representation (docs/accounting.md §2); computed rhos are exact rationals of their floats.

These are the statistics' own prices (one release of one group); a request's price, their
sum with its other steps', is :func:`dpsense.query.price.price` (docs/architecture.md §2).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from dpsense.mechanisms.calibration import analytic_gaussian_sigma
from dpsense.methods.smooth import plan_smooth
from dpsense.neighbours import Neighbours, validate_neighbours
from dpsense.statistics import Count, Mean, Median, Statistic

__all__ = [
    "PURE_METHODS",
    "ZcdpPrice",
    "aggregate_rho",
    "amount",
    "method_rho",
    "pure_rho",
    "ratio_rho",
]

PURE_METHODS = ("exponential", "adaptive", "ksw")
"""Methods that are pure epsilon-DP whatever their options and delta."""

_GAUSSIAN_MARGIN = Fraction(1) + Fraction(1, 2**30)


@dataclass(frozen=True)
class ZcdpPrice:
    """A step's exact zCDP price: it is ``delta``-approximately ``rho``-zCDP (Bun &
    Steinke 2016, Def. 8.1; ``delta`` is 0 except for private partition selection).
    Prices add: zCDP composes by adding rhos, and approximate zCDP its deltas (Lemma 2.3,
    docs/accounting.md §3)."""

    rho: Fraction
    delta: Fraction = Fraction(0)

    def __add__(self, other: ZcdpPrice) -> ZcdpPrice:
        return ZcdpPrice(self.rho + other.rho, self.delta + other.delta)


def amount(value: float) -> Fraction:
    """A budget amount given as a float, read by its shortest decimal representation."""
    return Fraction(Decimal(repr(value)))


def pure_rho(epsilon: float) -> Fraction:
    """epsilon-DP is epsilon^2/2-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    eps = amount(epsilon)
    return eps * eps / 2


def _gaussian_rho(epsilon: float, delta: float) -> Fraction:
    sigma = analytic_gaussian_sigma(1.0, epsilon, delta)
    return Fraction(1) / (2 * Fraction(sigma) ** 2) * _GAUSSIAN_MARGIN


def method_rho(
    method: str,
    statistic: Statistic,
    *,
    epsilon: float,
    delta: float,
    neighbours: Neighbours,
    options: dict[str, Any],
) -> Fraction | None:
    """The rho of one release by ``method`` at (epsilon, delta), or None when the release
    is (epsilon, delta)-DP with delta > 0 and has no zCDP guarantee."""
    if method in PURE_METHODS:
        return pure_rho(epsilon)
    noise = options.get("noise")
    if method == "global":
        always_pure = isinstance(statistic, Count) or (
            isinstance(statistic, Mean) and neighbours == "add-remove"
        )
        if noise == "gaussian" and delta > 0 and not always_pure:
            return _gaussian_rho(epsilon, delta)
        return pure_rho(epsilon)
    if method == "smooth":
        # the release's own plan: its errors (lln or Laplace without delta, bad sigma, t or
        # dof) are raised here, before anything is charged
        extra = {k: options[k] for k in ("dof", "t", "sigma") if k in options}
        plan = plan_smooth(epsilon, delta, noise, **extra)
        if plan.rho is not None:
            return Fraction(plan.rho)
        return pure_rho(epsilon) if plan.delta == 0.0 else None
    return None


def aggregate_rho(
    aggregator: str, noise: str | None, epsilon: float, delta: float
) -> Fraction | None:
    """The rho of :func:`dpsense.sample_and_aggregate`: its "mean"
    aggregator is Laplace (pure epsilon; an unknown aggregator is refused by the release),
    its "median" one smooth sensitivity with ``noise``."""
    if aggregator != "median":
        return pure_rho(epsilon)
    return method_rho(
        "smooth",
        Median(0.0, 1.0),  # the aggregator's statistic; smooth noise does not depend on it
        epsilon=epsilon,
        delta=delta,
        neighbours="substitute",
        options={} if noise is None else {"noise": noise},
    )


def ratio_rho(method: str, neighbours: str, epsilon: float) -> Fraction | None:
    """The rho of :func:`dpsense.private_ratio`: "ksw" and "naive" are pure
    epsilon, and so is "local-bound" under substitute (it is then the naive method); under
    add-remove "local-bound" is (epsilon, delta)-DP with no zCDP guarantee."""
    # the relation as private_ratio reads it: its aliases ("unbounded", ...) included
    relation = validate_neighbours(neighbours, where="private_ratio")
    if method == "local-bound" and relation == "add-remove":
        return None
    return pure_rho(epsilon)
