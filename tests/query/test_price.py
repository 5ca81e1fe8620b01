"""One function prices a request (``query.price.price``): the sum of its steps' own prices.

Under an (epsilon, delta) budget the price is the request's total, and the steps it pays
for add up to no more (basic composition); under a rho budget it is the sum of the steps'
zCDP prices, each step counted once: each column's bounds step, the shared selection, each
statistic over the groups one unit can change (docs/architecture.md §2)."""

from __future__ import annotations

import warnings
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

import dpsense as ds
from dpsense.accounting.composition import decimal_up
from dpsense.bounds import bounds_price
from dpsense.methods.zcdp import method_rho, pure_rho
from dpsense.query.plan import ReleaseArgs, plan_query, statistic_split
from dpsense.query.price import Step, price
from dpsense.release import zcdp_cost
from dpsense.tables.request import selection_price

QUERY = {
    "n": ds.Count(),
    "m": ("hours", ds.Median()),
    "w": ("wage", ds.Mean()),
    "h": ("hours", ds.Mean(0, 60)),
}
GROUPED = {"by": "year", "privacy_unit": "person", "max_groups_per_unit": 3}


def _plan(statistic: Any, epsilon: float, delta: float, **kwargs: Any) -> Any:
    return plan_query(
        statistic, ReleaseArgs(**kwargs), epsilon=epsilon, delta=delta, options={}, where="test"
    )


@pytest.mark.parametrize(
    ("statistic", "kwargs"),
    [
        (ds.Median(0, 10), {}),
        (ds.Median(), {"bounds": "private"}),
        (ds.Count(), {**GROUPED, "method": "global"}),
        (ds.Mean(0, 5), {**GROUPED, "keys": [2020, 2021], "method": "global"}),
        (QUERY, {**GROUPED, "bounds": "private", "method": "global"}),
        (QUERY, {**GROUPED, "keys": [1, 2, 3, 4], "bounds": "private", "method": "global"}),
    ],
)
def test_the_steps_cost_at_most_the_total_that_is_charged(
    statistic: Any, kwargs: dict[str, Any]
) -> None:
    plan = _plan(statistic, 1.3, 1e-6, **kwargs)
    cost = price(plan)
    assert (cost.epsilon, cost.delta) == (plan.epsilon, plan.delta) == (1.3, 1e-6)
    assert sum(Fraction(s.epsilon) for s in cost.steps) <= Fraction(cost.epsilon)
    assert sum(Fraction(s.delta) for s in cost.steps) <= Fraction(cost.delta)
    # and each statistic's groups cost at most its share
    for entry in plan.entries:
        split = statistic_split(plan, entry)
        spent = split.touched * Fraction(split.per_group[0])
        spent += Fraction(split.selection[0]) if split.selection else 0
        assert spent <= Fraction(entry.epsilon)


def test_a_query_costs_each_of_its_steps_once() -> None:
    plan = _plan(QUERY, 2.0, 1e-5, **GROUPED, bounds="private", method="global")
    assert plan.selection is not None
    assert len(plan.bounds_columns) == 2
    g = plan.groups_per_unit
    expected = 2 * bounds_price(plan.bounds_epsilon).rho
    expected += selection_price(plan.selection, g).rho
    for entry in plan.entries:
        eps_g = statistic_split(plan, entry).per_group[0]
        assert Fraction(eps_g) <= Fraction(entry.epsilon) / g  # over g, never the s selected
        expected += Fraction(decimal_up(g * pure_rho(eps_g)))
    cost = price(plan).zcdp()
    assert cost.rho == decimal_up(expected)
    assert cost.delta == decimal_up(Fraction(Decimal(repr(plan.selection[1]))))
    assert cost == zcdp_cost(QUERY, epsilon=2.0, delta=1e-5, **GROUPED, bounds="private")
    assert [s.name for s in price(plan).steps] == [*QUERY, "selection", "bounds", "bounds"]


def test_a_statistic_with_its_own_selection_costs_its_groups_and_the_selection() -> None:
    plan = _plan(ds.Mean(0, 5), 1.0, 1e-6, **GROUPED, method="global")
    (entry,) = plan.entries
    split = statistic_split(plan, entry)
    assert split.selection is not None
    assert split.touched == 3
    one = method_rho(
        "global",
        entry.statistic,
        epsilon=split.per_group[0],
        delta=split.per_group[1],
        neighbours=plan.neighbours,
        options={},
    )
    assert one is not None
    sel = selection_price(split.selection, 3)
    cost = price(plan).zcdp()
    assert cost.rho == decimal_up(3 * one + sel.rho)
    assert cost.delta == decimal_up(sel.delta) > 0


def test_a_step_without_zcdp_is_refused_only_when_priced_in_zcdp() -> None:
    plan = _plan(ds.Median(0, 10), 1.0, 1e-6, method="smooth")
    cost = price(plan)  # the (epsilon, delta) price is there
    assert (cost.epsilon, cost.delta) == (1.0, 1e-6)
    with pytest.raises(ds.InputError, match="no zCDP guarantee"):
        cost.zcdp()


def test_the_accountants_other_doors_charge_their_one_steps_price() -> None:
    acct = ds.Accountant(rho=1.0, delta=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        acct.private_bounds([1.0, 2.0, 3.0, 40.0], epsilon=0.3, rng=1)
        acct.private_ratio([1, 0, 1], [1, 1, 1], epsilon=0.2, rng=2)
    rho = bounds_price(0.3).rho + pure_rho(0.2)  # 0.045 + 0.02
    assert acct.spent_rho == float(decimal_up(rho)) == 0.065
    alone = price(Step("bounds", 0.3, 0.0, lambda: bounds_price(0.3)))
    assert (alone.epsilon, alone.delta) == (0.3, 0.0)
    assert alone.zcdp().rho == decimal_up(Fraction(9, 200))
