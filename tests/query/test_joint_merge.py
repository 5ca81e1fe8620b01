"""Quantile statistics of one column merged into one joint release by the plan
(query/joint_merge.py): the pick, the price, each statistic's own levels back, and the
cases that keep them apart."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from dpsense.methods.zcdp import pure_rho
from dpsense.query.plan import ReleaseArgs, plan_query
from dpsense.query.price import price
from tests.tables.helpers import ENGINES, on_engine

SURVEY = (
    "SELECT g, COUNT(*) AS n, MEDIAN(v) AS med, AVG(v) AS mean, "
    "QUANTILE_CONT(v, [0.1, 0.9]) AS q FROM t GROUP BY g"
)
LEVELS = (
    "SELECT g, COUNT(*) AS n, QUANTILE_CONT(v, [0.1, 0.5, 0.9]) AS q, AVG(v) AS mean "
    "FROM t GROUP BY g"
)
ARGS: dict[str, Any] = {"bounds": {"v": (0.0, 50.0)}, "keys": {"g": ["a", "b"]}}


def _frame(n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "g": np.repeat(["a", "b"], n),
            "v": rng.lognormal(np.log(5), 0.6, 2 * n),
            "pid": np.arange(2 * n) // 2,
        }
    )


def _sql(query: str, **kwargs: Any) -> ds.QueryResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        return ds.sql(query, tables={"t": _frame()}, epsilon=1.0, rng=3, **{**ARGS, **kwargs})


def _release(statistics: dict[str, Any], data: Any = None, **kwargs: Any) -> Any:
    frame = _frame() if data is None else data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        return ds.release(frame, statistics, epsilon=1.0, rng=4, **kwargs)


def test_median_and_percentiles_are_released_as_one_three_level_statistic() -> None:
    """MEDIAN and QUANTILE_CONT(v, [0.1, 0.9]) of one column: three levels, released
    jointly at their three fifths, the values those of one QUANTILE_CONT(v, [0.1, 0.5,
    0.9]) drawn from the same seed (the statistic in the second place both times)."""
    merged, one = _sql(SURVEY), _sql(LEVELS)
    split = merged.parameters["split"]
    assert split["med"]["joint"] is True
    assert split["med"]["released_with"] == ["q"]
    assert split["q"]["joint"] is True
    assert split["q"]["released_with"] == ["med"]
    for key in ("a", "b"):
        med, q, whole = merged["med"][key], merged["q"][key], one["q"][key]
        assert isinstance(med.value, float)
        assert [q.value[0], med.value, q.value[1]] == list(whole.value)
        low, high = whole.interval()
        assert med.interval() == (low[1], high[1])
        q_low, q_high = q.interval()
        assert list(q_low) == [low[0], low[2]]
        assert list(q_high) == [high[0], high[2]]
        joint = med.parameters["joint_release"]
        assert joint["with"] == ["q"]
        assert joint["ps"] == [0.1, 0.5, 0.9]
        assert joint["epsilon"] <= whole.epsilon  # two shares rounded down, summed
        assert math.isclose(joint["epsilon"], whole.epsilon, rel_tol=1e-12)
        assert med.epsilon == split["med"]["epsilon"]
        assert q.epsilon == split["q"]["epsilon"]
        assert q.parameters["ps"] == [0.1, 0.9]
        assert "ps" not in med.parameters
        assert med.parameters["depth"] == 2  # recursive halving over three levels
    # the joint release runs at the sum of the shares, no more: 3/5 of epsilon
    eps = merged["med"]["a"].parameters["joint_release"]["epsilon"]
    assert eps <= split["med"]["epsilon"] + split["q"]["epsilon"]
    assert math.isclose(eps, 0.6, rel_tol=1e-12)
    assert merged.epsilon == 1.0
    text = str(merged)
    assert "med: epsilon=0.2, delta=0 (one joint release with q)" in text
    assert (
        "q: epsilon=0.4, delta=0 (2 values, released jointly) (one joint release with med)" in text
    )
    assert merged["n"]["a"].value == one["n"]["a"].value  # the count draws as before


def test_the_plan_forecasts_the_merge() -> None:
    res = _sql(SURVEY)
    plan = ds.plan(None, SURVEY.replace(" t ", " 'missing.csv' "), epsilon=1.0,
                   rows_per_group=200, **ARGS)  # fmt: skip
    assert plan.parameters["split"] == res.parameters["split"]


@pytest.mark.parametrize(
    ("statistics", "kwargs"),
    [
        # different bounds
        ({"med": ds.Median(0, 50), "q": ds.Quantiles([0.1, 0.9], 0, 60)}, {}),
        # different weights: the levels would not get their shares
        ({"med": ds.Median(0, 50), "q": ds.Quantiles([0.1, 0.9], 0, 50)}, {"weights": {"q": 2}}),
        # a level twice
        ({"med": ds.Median(0, 50), "q": ds.Quantiles([0.5, 0.9], 0, 50)}, {}),
        # two levels in all: the rule keeps them apart under add-remove
        ({"med": ds.Median(0, 50), "q": ds.Quantile(0.9, 0, 50)}, {}),
        # asked for: one level at a time
        (
            {"q1": ds.Quantiles([0.1, 0.5], 0, 50), "q2": ds.Quantiles([0.7, 0.9], 0, 50)},
            {"method": "exponential", "joint": False},
        ),
        # another column
        ({"med": ("v", ds.Median(0, 50)), "q": ("w", ds.Quantiles([0.1, 0.9], 0, 50))}, {}),
    ],
)
def test_what_is_not_merged_is_released_apart(
    statistics: dict[str, Any], kwargs: dict[str, Any]
) -> None:
    data = _frame().assign(w=lambda f: f["v"] + 1)
    column = {} if isinstance(next(iter(statistics.values())), tuple) else {"column": "v"}
    res = _release(statistics, data, by="g", keys=["a", "b"], **column, **kwargs)
    for name in statistics:
        assert "released_with" not in res.parameters["split"][name]
        assert "joint_release" not in res[name]["a"].parameters


def test_joint_true_merges_two_levels_per_person_and_without_groups() -> None:
    stats = {"q1": ds.Quantiles([0.1, 0.5], 0, 50), "q2": ds.Quantiles([0.7, 0.9], 0, 50)}
    res = _release(stats, column="v", method="exponential", joint=True,
                   privacy_unit="pid", max_rows_per_unit=2)  # fmt: skip
    assert res.parameters["split"]["q1"]["released_with"] == ["q2"]
    q1, q2 = res["q1"], res["q2"]
    assert q1.parameters["joint_release"]["ps"] == [0.1, 0.5, 0.7, 0.9]
    assert q1.parameters["depth"] == 3
    values = [*q1.value, *q2.value]
    assert values == sorted(values)
    assert q1.parameters["max_rows_per_unit"] == 2


def test_private_bounds_and_private_groups_merge() -> None:
    """Both statistics' bounds found by the column's one private bounds step, the groups
    by the query's one selection: the merged release is the query's only one."""
    stats = {"med": ds.Median(), "q": ds.Quantiles([0.1, 0.9])}
    res = _release(stats, column="v", by="g", bounds="private", delta=1e-6)
    assert res.parameters["split"]["med"]["released_with"] == ["q"]
    assert "selection" in res.parameters
    for key, med in res["med"]:
        q = res["q"][key]
        assert q.value[0] <= med.value <= q.value[1]
    assert res["med"].parameters["bounds"] == res["q"].parameters["bounds"]


def test_the_price_is_the_sum_of_the_shares() -> None:
    """(epsilon, delta): unchanged by the merge. zCDP: one release at the summed epsilon
    per group, its rho split between its statistics in proportion to their shares."""
    stats = {"n": ds.Count(), "med": ds.Median(0, 50), "q": ds.Quantiles([0.1, 0.9], 0, 50)}
    plan = plan_query(stats, ReleaseArgs(column="v", by="g", keys=["a", "b"]), epsilon=1.0,
                      delta=0.0, options={}, where="test")  # fmt: skip
    assert [m.names for m in plan.merges] == [("med", "q")]
    cost = price(plan)
    assert (cost.epsilon, cost.delta) == (1.0, 0.0)
    parts = {s.name: s.price().rho for s in cost.steps}
    shares = {e.name: e.epsilon for e in plan.entries}
    assert parts["n"] == pure_rho(shares["n"])
    assert parts["med"] + parts["q"] == pure_rho(plan.merges[0].epsilon)
    assert parts["q"] == 2 * parts["med"]
    assert parts["med"] + parts["q"] > pure_rho(shares["med"]) + pure_rho(shares["q"])
    assert plan.merges[0].epsilon <= float(sum(Fraction(shares[k]) for k in ("med", "q")))


@pytest.mark.parametrize("engine", ENGINES)
def test_both_engines_release_the_merge_alike(request: pytest.FixtureRequest, engine: str) -> None:
    stats = {"n": ds.Count(), "med": ds.Median(0, 50), "q": ds.Quantiles([0.1, 0.9], 0, 50)}
    data = on_engine(engine, _frame(), request)
    res = _release(stats, data, column="v", by="g", keys=["a", "b"], privacy_unit="pid",
                   max_rows_per_unit=2)  # fmt: skip
    ref = _release(stats, column="v", by="g", keys=["a", "b"], privacy_unit="pid",
                   max_rows_per_unit=2)  # fmt: skip
    for key in ("a", "b"):
        assert res["med"][key].parameters["joint_release"]["with"] == ["q"]
        assert res["med"][key].value == ref["med"][key].value
        assert list(res["q"][key].value) == list(ref["q"][key].value)
