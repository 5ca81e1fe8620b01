"""One door: every charging method of the accountant goes through ``pipeline.execute`` and
charges exactly ``query.price.price`` of its request, once, before anything is drawn
(docs/architecture.md §2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from tests.accounting.counting import CountingRandom

import dpsense as ds
from dpsense.accountant import Accountant
from dpsense.pipeline import Request, prepare_release
from dpsense.query.plan import release_arguments
from dpsense.query.price import Price, aggregate_step, price, private_bounds_step, ratio_step

X = np.array([31.0, 45, 45, 52, 60, 61, 70, 12, 88, 47])
TABLE = {"t": {"x": X.tolist(), "g": [1, 2] * 5}}
MEDIAN = ds.Median(0, 100)


def _release_price() -> Price:
    args, options = release_arguments({"method": "exponential"})
    return price(prepare_release(Request(X, MEDIAN, args, 0.5, 0.0, None, options, "t")))


def _sql_price() -> Price:
    query = {"m": ("x", ds.Median(0, 100))}
    args, options = release_arguments({"by": "g", "keys": [1, 2]})
    plan = prepare_release(Request(TABLE["t"], query, args, 0.5, 0.0, None, options, "t"))
    return price(plan)


# each door: how the accountant is asked, and the price of its request (built here from
# query.price's steps, not by the door)
DOORS: dict[str, tuple[Callable[[Accountant, Any], Any], Callable[[], Price]]] = {
    "release": (
        lambda a, r: a.release(X, MEDIAN, epsilon=0.5, method="exponential", rng=r),
        _release_price,
    ),
    "sql": (
        lambda a, r: a.sql(
            "SELECT g, MEDIAN(x) AS m FROM t GROUP BY g",
            tables={"t": TABLE["t"]},
            epsilon=0.5,
            bounds={"x": (0, 100)},
            keys={"g": [1, 2]},
            rng=r,
        ),
        _sql_price,
    ),
    "private_bounds": (
        lambda a, r: a.private_bounds(X, epsilon=0.5, rng=r),
        lambda: price(private_bounds_step(0.5)),
    ),
    "private_ratio": (
        lambda a, r: a.private_ratio(30, 100, epsilon=0.5, rng=r),
        lambda: price(ratio_step("ksw", "add-remove", 0.5, 0.0)),
    ),
    "private_ratio local-bound": (
        lambda a, r: a.private_ratio(30, 100, epsilon=0.5, delta=1e-6, method="local-bound", rng=r),
        lambda: price(ratio_step("local-bound", "add-remove", 0.5, 1e-6)),
    ),
    "sample_and_aggregate": (
        lambda a, r: a.sample_and_aggregate(
            X, np.mean, blocks=2, lower=0, upper=100, epsilon=0.5, rng=r
        ),
        lambda: price(aggregate_step("mean", None, 0.5, 0.0)),
    ),
}


def _zcdp(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except ds.InputError as exc:  # a step with no zCDP price says so when asked
        return str(exc)


def _summary(cost: Price) -> tuple[Any, ...]:
    steps = tuple((s.name, s.epsilon, s.delta, _zcdp(s.price)) for s in cost.steps)
    return cost.epsilon, cost.delta, steps, _zcdp(cost.zcdp)


@pytest.fixture
def charges(monkeypatch: pytest.MonkeyPatch) -> list[Price]:
    """Every price the accountant is asked to charge."""
    seen: list[Price] = []
    original = Accountant.charged

    def spy(self: Accountant, cost: Price, *args: Any, **kwargs: Any) -> Any:
        seen.append(cost)
        return original(self, cost, *args, **kwargs)

    monkeypatch.setattr(Accountant, "charged", spy)
    return seen


@pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")
@pytest.mark.parametrize("door", list(DOORS))
def test_each_door_charges_its_price_once(door: str, charges: list[Price]) -> None:
    call, expected = DOORS[door]
    cost = expected()
    acct = ds.Accountant(epsilon=4.0, delta=1e-3)
    call(acct, 7)
    assert [_summary(c) for c in charges] == [_summary(cost)]
    assert acct.spent == (cost.epsilon, cost.delta)  # exactly: one charge of that price
    assert len(acct.entries()) == 1


@pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")
@pytest.mark.parametrize("door", list(DOORS))
def test_each_door_charges_its_zcdp_price_once(door: str, charges: list[Price]) -> None:
    call, expected = DOORS[door]
    cost = _zcdp(expected().zcdp)
    acct = ds.Accountant(rho=2.0, delta=1e-6)
    if isinstance(cost, str):  # no zCDP price: refused when charged, nothing spent
        with pytest.raises(ds.InputError, match="no zCDP guarantee"):
            call(acct, 7)
        assert len(charges) == 1
        assert acct.spent_zcdp == (0.0, 0.0)
        return
    call(acct, 7)
    assert len(charges) == 1
    assert acct.spent_zcdp == (float(cost.rho), float(cost.delta))


@pytest.mark.parametrize("door", list(DOORS))
def test_over_budget_each_door_draws_nothing(door: str) -> None:
    call, _ = DOORS[door]
    acct = ds.Accountant(epsilon=0.25, delta=1e-9)
    rng = CountingRandom()
    with pytest.raises(ds.BudgetExceededError):
        call(acct, rng)
    assert rng.drawn == 0
    assert acct.spent == (0.0, 0.0)


BAD = {
    "private_bounds": lambda a: a.private_bounds(X, epsilon=0.5, quantiles=(0.9, 0.1)),
    "private_ratio": lambda a: a.private_ratio(30, 100, epsilon=0.5, method="nope"),
    "sample_and_aggregate": lambda a: a.sample_and_aggregate(
        X, np.mean, blocks=0, lower=0, upper=100, epsilon=0.5
    ),
}


@pytest.mark.parametrize("door", list(BAD))
def test_an_argument_error_costs_nothing(door: str) -> None:
    acct = ds.Accountant(epsilon=1.0)
    with pytest.raises(ds.InputError):
        BAD[door](acct)
    assert acct.spent == (0.0, 0.0)
    assert acct.entries() == []
