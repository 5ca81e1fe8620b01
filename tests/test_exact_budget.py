"""Directed rounding of budget arithmetic (dpsense._exact_budget; docs/noise.md §8).

* Quotients, products and differences land on the right side of the exact rational and
  are the nearest double there (one step further would cross it), on hard cases (1/3,
  1/7, 1e-3/3, ...) and on random doubles.
* log, exp and sqrt enclosures contain the value computed independently with mpmath at
  300 bits, and are narrow.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsense._exact_budget import (
    difference_down,
    exact,
    exp_bounds,
    float_down,
    float_up,
    log_bounds,
    product_down,
    product_up,
    quotient_down,
    quotient_up,
    rational_at_least,
    rational_ceil,
    sqrt_bounds,
)
from dpsense.noise.choice import eta_at_most
from dpsense.params import rest_of_budget

HARD_EPSILONS = (1 / 3, 1 / 7, 0.1, 0.3, 0.7, 1e-3 / 3, 2 / 3, 1 / 49, 5e-324, 1e308)
positive = st.floats(min_value=5e-324, max_value=1e300, allow_nan=False, allow_infinity=False)
rationals = st.builds(Fraction, st.integers(-(10**40), 10**40), st.integers(1, 10**40))

_PRECISE = mpmath.MPContext()
_PRECISE.prec = 300


def _up_is_tight(f: float, q: Fraction) -> bool:
    """f >= q, and the double below f is < q."""
    return Fraction(f) >= q and Fraction(math.nextafter(f, -math.inf)) < q


def _down_is_tight(f: float, q: Fraction) -> bool:
    return Fraction(f) <= q and Fraction(math.nextafter(f, math.inf)) > q


def test_a_float_quotient_can_round_down_and_quotient_up_does_not() -> None:
    # the case of the issue: 1 / float(1/3) is 3.0, below the exact quotient
    assert 1 / (1 / 3) == 3.0
    assert Fraction(3.0) * Fraction(1 / 3) < 1
    scale = quotient_up(1, 1 / 3)
    assert scale == math.nextafter(3.0, math.inf)
    assert Fraction(scale) * Fraction(1 / 3) >= 1


@pytest.mark.parametrize("epsilon", HARD_EPSILONS)
@pytest.mark.parametrize("sensitivity", [1, 2, 3, 7, 0.1, 1e-300])
def test_quotients_are_tight_on_hard_cases(sensitivity: float, epsilon: float) -> None:
    q = exact(sensitivity) / exact(epsilon)
    up, down = quotient_up(sensitivity, epsilon), quotient_down(sensitivity, epsilon)
    if q > Fraction(sys.float_info.max):
        assert up == math.inf
        assert down == sys.float_info.max
        return
    assert _up_is_tight(up, q)
    assert _down_is_tight(down, q)
    assert Fraction(up) * exact(epsilon) >= exact(sensitivity)


@settings(max_examples=400, deadline=None)
@given(positive, positive)
def test_quotients_products_and_differences_round_the_safe_way(a: float, b: float) -> None:
    for value, up, down in (
        (exact(a) / exact(b), quotient_up(a, b), quotient_down(a, b)),
        (exact(a) * exact(b), product_up(a, b), product_down(a, b)),
    ):
        if value <= Fraction(sys.float_info.max):
            assert _up_is_tight(up, value)
            assert _down_is_tight(down, value)
    rest = difference_down(a, b)
    assert exact(b) + exact(rest) <= exact(a)
    assert exact(b) + exact(math.nextafter(rest, math.inf)) > exact(a)
    assert rest == rest_of_budget(a, b)


@settings(max_examples=400, deadline=None)
@given(rationals)
def test_float_up_and_down_bracket_any_rational(q: Fraction) -> None:
    assert _up_is_tight(float_up(q), q)
    assert _down_is_tight(float_down(q), q)


def test_float_rounding_beyond_the_double_range() -> None:
    huge = Fraction(10) ** 400
    assert float_up(huge) == math.inf
    assert float_down(huge) == sys.float_info.max
    assert float_up(-huge) == -sys.float_info.max
    assert float_down(-huge) == -math.inf
    assert float_down(Fraction(1, 10**400)) == 0.0
    assert float_up(Fraction(1, 10**400)) == 5e-324
    # zero has one sign: a receipt never says "-0"
    assert math.copysign(1.0, float_down(0)) == 1.0
    assert math.copysign(1.0, quotient_down(0.0, 3)) == 1.0
    assert math.copysign(1.0, float_up(Fraction(-1, 10**400))) == 1.0
    with pytest.raises(ValueError, match="finite"):
        exact(math.inf)


@pytest.mark.parametrize("epsilon", HARD_EPSILONS[:6])
def test_the_exponential_mechanism_multiplier_is_the_same_helper(epsilon: float) -> None:
    assert eta_at_most(epsilon, 2.0) == quotient_down(epsilon, 2.0)
    assert eta_at_most(epsilon, 6.0) == quotient_down(epsilon, 6)


def test_rational_ceilings() -> None:
    assert rational_ceil(Fraction(1, 3), 4) == Fraction(2, 4)
    assert rational_ceil(Fraction(1, 2), 4) == Fraction(1, 2)
    assert rational_at_least(Fraction(4, 3), 2**20) == Fraction(4, 3)
    third = exact(1 / 3)  # denominator 2^54: rounded up onto 2^-20
    assert rational_at_least(1 / third, 2**20) == Fraction(3 * 2**20 + 1, 2**20)
    assert rational_at_least(1 / third, 2**20) >= 1 / third


def _mp(q: Fraction) -> mpmath.mpf:
    return _PRECISE.mpf(q.numerator) / q.denominator


@settings(max_examples=200, deadline=None)
@given(
    st.builds(Fraction, st.integers(1, 10**30), st.integers(1, 10**30)),
)
def test_log_bounds_enclose_the_logarithm(q: Fraction) -> None:
    low, high = log_bounds(q)
    value = _PRECISE.log(_mp(q))
    assert _mp(low) <= value <= _mp(high)
    assert high - low <= abs(value) * 2**-70 + Fraction(1, 2**90)


@settings(max_examples=200, deadline=None)
@given(st.builds(Fraction, st.integers(-(10**7), 10**7), st.integers(10**4, 10**5)))
def test_exp_bounds_enclose_the_exponential(q: Fraction) -> None:
    # |q| <= 1000, the range budget arithmetic uses (tails of e^-745 are below any delta)
    low, high = exp_bounds(q)
    value = _PRECISE.exp(_mp(q))
    assert _mp(low) <= value <= _mp(high)
    assert _mp(high - low) <= value * _PRECISE.mpf(2) ** -70


@settings(max_examples=200, deadline=None)
@given(st.builds(Fraction, st.integers(0, 10**30), st.integers(1, 10**30)), st.integers(0, 80))
def test_sqrt_bounds_enclose_the_root(q: Fraction, bits: int) -> None:
    low, high = sqrt_bounds(q, bits)
    assert low * low <= q <= high * high
    assert high - low <= Fraction(1, q.denominator * 2**bits)


def test_enclosures_are_exact_where_the_value_is_rational() -> None:
    assert log_bounds(1) == (0, 0)
    assert exp_bounds(0) == (1, 1)
    assert sqrt_bounds(Fraction(9, 4)) == (Fraction(3, 2), Fraction(3, 2))
    assert sqrt_bounds(4, 20) == (2, 2)
    with pytest.raises(ValueError, match="> 0"):
        log_bounds(0)
    with pytest.raises(ValueError, match=">= 0"):
        sqrt_bounds(-1)
