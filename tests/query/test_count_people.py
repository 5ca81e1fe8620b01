"""People counted at any ``max_rows_per_unit``: ``ds.Count(distinct_units=True)`` in a dict
query, through ``ds.join`` + ``ds.release`` and as SQL's ``COUNT(DISTINCT unit)``, with a
count's noise at sensitivity 1 per group and a count's interval (docs/joins.md §4). The
brute-force checks against the definition are in tests/tables/test_people_definition.py."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.errors import InputError
from dpsense.report.reproduce import _statistic_code
from tests.query.test_sql_joins import shop

pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

PEOPLE = ds.Count(distinct_units=True)
ON = [("orders", "customers", "customer_id"), ("customers", "regions", "country")]


def visits(seed: int = 0, people: int = 300) -> Any:
    """People with several rows in each of their (one to three) regions."""
    rng = np.random.default_rng(seed)
    rows = []
    for person in range(people):
        for region in rng.choice(["north", "south", "east", "west"], rng.integers(1, 4), False):
            rows += [(person, str(region), float(h)) for h in rng.uniform(0, 9, rng.integers(1, 9))]
    return pd.DataFrame(rows, columns=["person", "region", "hours"])


def test_a_dict_query_counts_each_person_once_per_group() -> None:
    """g covers every person's regions, so the kept pairs are every (person, region) pair:
    at a large epsilon the people count is the number of people of each region, while the
    count of rows at m = 5 counts up to 5 rows of each."""
    frame = visits()
    regions = ["east", "north", "south", "west"]
    res = ds.release(
        frame,
        {"people": PEOPLE, "n": ds.Count(), "mean": ("hours", ds.Mean(0, 9))},
        by="region", keys=regions, privacy_unit="person", max_rows_per_unit=5,
        max_groups_per_unit=3, epsilon=3000.0, rng=1,
    )  # fmt: skip
    got = res.to_pandas().set_index("region")
    people = frame.groupby("region")["person"].nunique()
    rows = frame.groupby(["region", "person"]).size().clip(upper=5).groupby("region").sum()
    for region in regions:
        assert got.loc[region, "people"] == people[region]  # noise scale 1/250 per group
        assert got.loc[region, "n"] == pytest.approx(rows[region], abs=1)
        assert got.loc[region, "n"] > 2 * people[region]
        assert got.loc[region, "people_low"] <= people[region] <= got.loc[region, "people_high"]


def test_its_noise_is_a_counts_at_one_row_per_person() -> None:
    """The same release at m = 1 and m = 7: the same kept pairs, the same draws."""
    frame = visits(seed=2)
    kw: dict[str, Any] = {
        "by": "region", "keys": ["north", "south"], "privacy_unit": "person",
        "max_groups_per_unit": 2, "epsilon": 1.0, "rng": 3,
    }  # fmt: skip
    one = ds.release(frame, {"people": PEOPLE, "n": ds.Count()}, max_rows_per_unit=1, **kw)
    seven = ds.release(frame, {"people": PEOPLE, "n": ds.Count()}, max_rows_per_unit=7, **kw)
    assert one["people"].to_dicts() == seven["people"].to_dicts()
    for key, rel in seven["people"]:
        assert rel.noise == "discrete-laplace"
        # each statistic has epsilon 1/2, each of a person's g = 2 groups 1/4
        assert rel.scale == pytest.approx(4.0, rel=1e-6)  # sensitivity 1
        assert seven["n"][key].scale == pytest.approx(28.0, rel=1e-6)  # sensitivity m = 7
        assert rel.accuracy() == one["n"][key].accuracy()
    plain = ds.release(frame, PEOPLE, rng=3, epsilon=1.0)  # every row a unit: the count
    assert plain.value == ds.release(frame, ds.Count(), rng=3, epsilon=1.0).value


def test_join_and_release_is_the_sql_count_distinct() -> None:
    tables = {k: v for k, v in shop(seed=4, n_customers=150).items() if k != "items"}
    kw: dict[str, Any] = {
        "privacy_unit": {"customers": "customer_id", "orders": "customer_id"},
        "max_rows_per_unit": 3, "max_groups_per_unit": 1,
        "epsilon": 1.0, "rng": 6,
    }  # fmt: skip
    joined = ds.join(tables, on=ON, public_tables=["regions"])
    got = ds.release(
        joined,
        {"people": PEOPLE, "n": ds.Count(), "total": ("amount", ds.Sum(0, 100))},
        by="region",
        **kw,
    ).to_dicts()
    want = ds.sql(
        "SELECT r.region, COUNT(DISTINCT c.customer_id) AS people, COUNT(*) AS n, "
        "SUM(o.amount) AS total FROM orders o JOIN customers c ON o.customer_id = "
        "c.customer_id JOIN regions r ON c.country = r.country GROUP BY r.region",
        tables=tables,
        public_tables=["regions"],
        bounds={"amount": (0, 100)},
        **kw,
    ).to_dicts()
    assert got == want
    customers = tables["customers"]
    buyers = customers[customers["customer_id"].isin(tables["orders"]["customer_id"])]
    europe = int(buyers["country"].isin(["fr", "de", "it"]).sum())
    row = next(r for r in got if r["region"] == "Europe")
    assert row["people_low"] <= europe <= row["people_high"]
    assert row["n"] > 1.5 * europe  # about three orders each, up to 3 kept


def test_a_people_count_paired_with_a_column_is_refused_before_the_charge() -> None:
    acc = ds.Accountant(epsilon=2.0)
    with pytest.raises(InputError, match="reads no column") as info:
        acc.release(visits(), {"people": ("hours", PEOPLE)}, privacy_unit="person", epsilon=1.0)
    assert "\n" not in str(info.value)
    assert acc.spent == (0.0, 0.0)
    with pytest.raises(InputError, match="True or False"):
        ds.Count(distinct_units=1)  # type: ignore[arg-type]


def test_a_plan_forecasts_a_people_count_at_one_row_per_person() -> None:
    kw: dict[str, Any] = {
        "epsilon": 1.0, "rows_per_group": 500, "by": "region", "keys": ["north"],
        "privacy_unit": "person", "max_groups_per_unit": 2,
    }  # fmt: skip
    at_five = ds.plan(None, {"people": PEOPLE, "n": ds.Count()}, max_rows_per_unit=5, **kw)
    at_one = ds.plan(None, {"people": PEOPLE, "n": ds.Count()}, max_rows_per_unit=1, **kw)
    people, n = at_five.statistics
    assert people.error_95 == at_one.statistics[0].error_95 == at_one.statistics[1].error_95
    assert n.error_95 > 3 * people.error_95


def test_the_report_rebuilds_the_people_count() -> None:
    assert PEOPLE.name == "count(distinct units)"
    assert repr(PEOPLE) == "Count(distinct_units=True)"
    assert _statistic_code({"statistic": PEOPLE.name}) == ("ds.Count(distinct_units=True)", False)
    assert _statistic_code({"statistic": "count"}) == ("ds.Count()", False)


def test_a_query_of_counts_alone_with_a_privacy_unit_releases() -> None:
    """A query that reads no column but the unit (counts only, no groups): the bounding's
    staged rows are the unit alone (found by the slow neighbour harness: the staged SELECT
    was empty before ``u``)."""
    frame = pd.DataFrame({"id": [0, 1, 1], "v": [5, 5, 6]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        for data in (frame, frame.iloc[:0]):
            res = ds.release(
                data, {"a": ds.Count(), "b": PEOPLE}, privacy_unit="id", max_rows_per_unit=1,
                epsilon=2.0, rng=1,
            )  # fmt: skip
            assert set(res.to_dicts()[0]) >= {"a", "b"}
