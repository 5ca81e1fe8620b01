"""The default split gives each released value (each quantile level) one share; several
quantiles are released jointly or one level at a time, as the plan picks and says."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dpsense as ds
from dpsense.mechanisms.quantiles import joint_is_better

SURVEY = (
    "SELECT g, COUNT(*) AS n, MEDIAN(v) AS med, AVG(v) AS mean, "
    "QUANTILE_CONT(v, [0.1, 0.9]) AS q FROM t GROUP BY g"
)
ARGS = {"bounds": {"v": (0.0, 50.0)}, "keys": {"g": ["a", "b"]}}
# the median of another column: q's two levels are not merged with it (query/joint_merge.py)
APART = SURVEY.replace("MEDIAN(v)", "MEDIAN(w)")
APART_BOUNDS = {"v": (0.0, 50.0), "w": (0.0, 50.0)}


def _frame(n: int = 200) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    v = rng.lognormal(np.log(5), 0.6, 2 * n)
    return {"g": np.repeat(["a", "b"], n), "v": v, "w": v + 1.0}


def _sql(query: str, **kwargs: object) -> ds.QueryResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        return ds.sql(query, tables={"t": _frame()}, epsilon=1.0, rng=3, **{**ARGS, **kwargs})


def test_each_level_is_one_share_of_the_default_split() -> None:
    """Five released values (count, median, mean, two levels): a fifth each, so the
    two-level statistic gets two fifths, in the release and in its plan."""
    res = _sql(SURVEY)
    split = res.parameters["split"]
    for name in ("n", "med", "mean"):
        assert math.isclose(split[name]["epsilon"], 0.2, rel_tol=1e-12)
    assert math.isclose(split["q"]["epsilon"], 0.4, rel_tol=1e-12)
    assert split["q"]["values"] == 2
    assert "values" not in split["n"]
    assert sum(part["epsilon"] for part in split.values()) <= 1.0
    assert "q: epsilon=0.4, delta=0 (2 values, released jointly)" in str(res)  # with med
    apart = _sql(APART, bounds=APART_BOUNDS)
    assert "q: epsilon=0.4, delta=0 (2 values, released one at a time)" in str(apart)
    plan = ds.plan(None, SURVEY.replace(" t ", " 'missing.csv' "), epsilon=1.0,
                   rows_per_group=200, **ARGS)  # fmt: skip
    assert plan.parameters["split"] == split


def test_a_weight_is_per_released_value() -> None:
    """weights={"q": 2} doubles each level's share: q's two levels 4 shares of 7."""
    split = _sql(SURVEY, weights={"q": 2}).parameters["split"]
    assert math.isclose(split["q"]["epsilon"], 4 / 7, rel_tol=1e-12)
    assert math.isclose(split["med"]["epsilon"], 1 / 7, rel_tol=1e-12)
    assert split["q"]["weight"] == 2.0


def test_a_dict_of_statistics_splits_per_value() -> None:
    stats = {"n": ds.Count(), "q": ("v", ds.Quantiles([0.25, 0.5, 0.75], 0, 50))}
    p = ds.plan(None, stats, epsilon=1.0, rows_per_group=100, by="g", keys=["a", "b"])
    split = p.parameters["split"]
    assert math.isclose(split["n"]["epsilon"], 0.25, rel_tol=1e-12)
    assert math.isclose(split["q"]["epsilon"], 0.75, rel_tol=1e-12)
    assert split["q"]["joint"] is True  # three levels: joint under add-remove


@pytest.mark.parametrize(
    ("m", "neighbours", "joint"),
    [
        (1, "add-remove", False),
        (2, "add-remove", False),
        (3, "add-remove", True),
        (9, "add-remove", True),
        (2, "substitute", False),
        (3, "substitute", True),
        (4, "substitute", False),
        (5, "substitute", True),
        (8, "substitute", True),
    ],
)
def test_the_pick_is_the_measured_rule(m: int, neighbours: str, joint: bool) -> None:
    """benchmarks/results/quantiles_joint_or_split.md: joint when D < m under add-remove,
    when m >= 2D - 1 under substitute (D = floor(log2 m) + 1)."""
    assert joint_is_better(m, neighbours) is joint  # type: ignore[arg-type]


def test_the_release_does_what_the_plan_says() -> None:
    """Two levels are released one at a time, each at half the values' share (after the
    interval's), and sorted; joint=True asks for recursive halving instead."""
    res = _sql(APART, bounds=APART_BOUNDS)
    for _, one in res["q"]:
        params = one.parameters
        assert params["joint"] is False
        assert params["depth"] == 1
        assert params["epsilon_per_call"] <= 0.4 * 0.85 / 2
        assert params["epsilon_per_call"] > 0.4 * 0.85 / 2 * (1 - 1e-12)
        assert list(one.value) == sorted(one.value)


def test_joint_can_be_asked_for() -> None:
    x = np.random.default_rng(1).uniform(0, 10, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        out = ds.release(x, ds.Quantiles([0.1, 0.9], 0, 10), epsilon=1.0, rng=2,
                         method="exponential", joint=True)  # fmt: skip
        auto = ds.release(x, ds.Quantiles([0.1, 0.9], 0, 10), epsilon=1.0, rng=2)
    assert out.parameters["joint"] is True
    assert out.parameters["depth"] == 2
    assert auto.parameters["joint"] is False


@pytest.mark.parametrize(
    ("statistic", "joint", "message"),
    [
        (ds.Quantile(0.5, 0, 10), True, "one value"),
        (ds.Quantiles([0.1, 0.9], 0, 10), "yes", "True or False"),
    ],
)
def test_a_wrong_joint_is_refused(statistic: ds.Statistic, joint: object, message: str) -> None:
    with pytest.raises(ds.InputError, match=message):
        ds.plan(None, statistic, epsilon=1.0, rows_per_group=10, method="exponential", joint=joint)
