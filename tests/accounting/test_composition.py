"""Composition rules: exact decimals, parallel groups, advanced composition, zCDP."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
from scipy import stats

from dpsense.accounting import advanced_epsilon, compose, zcdp_to_dp_epsilon
from dpsense.accounting.composition import Charge, as_decimal


def test_charges_add_exactly() -> None:
    charges = [Charge(as_decimal(0.05, "e"), as_decimal(1e-7, "d")) for _ in range(20)]
    eps, dlt = compose(charges)
    assert eps == Decimal(1)
    assert dlt == Decimal("0.0000020")
    assert sum([0.05] * 20) != 1.0  # the float sum would be off: why decimals


def test_parallel_group_costs_its_maximum() -> None:
    charges = [
        Charge(Decimal("0.5"), Decimal(0)),
        Charge(Decimal("0.3"), Decimal(0), "g"),
        Charge(Decimal("0.7"), Decimal("1e-6"), "g"),
        Charge(Decimal("0.2"), Decimal(0), "g"),
    ]
    assert compose(charges) == (Decimal("1.2"), Decimal("1e-6"))


def _exact_rr_delta(k: int, eps0: float, eps: float) -> float:
    """Exact delta(eps) of k-fold randomized response with eps0 (the worst case for pure DP,
    Kairouz-Oh-Viswanath 2015): privacy loss eps0 (k - 2j), j ~ Binomial(k, 1/(1+e^eps0))."""
    j = np.arange(k + 1)
    q = 1.0 / (1.0 + math.exp(eps0))
    weights = stats.binom.pmf(j, k, q)
    loss = eps0 * (k - 2 * j)
    return float(np.sum(weights * np.maximum(0.0, 1.0 - np.exp(eps - loss))))


@pytest.mark.parametrize(
    ("k", "eps0", "slack"), [(50, 0.1, 1e-6), (200, 0.05, 1e-5), (20, 0.5, 1e-3)]
)
def test_advanced_composition_bound_holds_against_the_exact_composition(
    k: int, eps0: float, slack: float
) -> None:
    eps_adv = float(advanced_epsilon([Decimal(repr(eps0))] * k, Decimal(repr(slack))))
    assert _exact_rr_delta(k, eps0, eps_adv) <= slack
    # useful for many small steps; for large ones it can exceed the basic sum, which is why
    # compose() takes the smaller of the two
    if eps0 <= 0.1:
        assert eps_adv < k * eps0


def test_compose_uses_the_better_of_basic_and_advanced() -> None:
    many = [Charge(Decimal("0.01"), Decimal(0)) for _ in range(1000)]
    eps, dlt = compose(many, composition="advanced", delta_slack=Decimal("1e-6"))
    assert eps < Decimal(10)
    assert dlt == Decimal("1e-6")
    few = [Charge(Decimal("0.5"), Decimal(0)) for _ in range(2)]
    assert compose(few, composition="advanced", delta_slack=Decimal("1e-6")) == (
        Decimal("1.0"),
        Decimal(0),
    )


def test_zcdp_conversion_is_bun_steinke() -> None:
    rho, delta = 0.5, 1e-6
    assert zcdp_to_dp_epsilon(rho, delta) == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e6)))


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "x", True])
def test_bad_amounts_are_refused(bad: object) -> None:
    from dpsense.errors import InputError

    with pytest.raises(InputError):
        as_decimal(bad, "epsilon")
