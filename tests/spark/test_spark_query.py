"""A query of several statistics on a Spark DataFrame: one contribution bounding over all
the query's columns that keeps exactly the rows of the definition (the DuckDB bounding's
rows and a brute force from DuckDB's hashes), one shared selection, and released tables
equal to the DuckDB answer on the same data for a seed; ``where`` before bounding."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.data.source import open_table
from dpsense.tables.engines.duckdb.query_rows import BOUNDED, bound_rows, checked_rows
from dpsense.tables.engines.spark import long_hash as spark_hash
from dpsense.tables.engines.spark import query_rows as spark_bounding
from dpsense.tables.engines.spark.frame import open_spark
from dpsense.tables.rows.unit_bounding import UnitBounding, canonical, keyed_hash
from tests.spark.conftest import to_spark

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::UserWarning")]
pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")

YEARS = [2019, 2020, 2021, 2022]
SALT = (918273645, 564738291)


def _query() -> dict[str, Any]:
    return {
        "n": ds.Count(),
        "people": ds.Count(distinct_units=True),  # the query's kept groups, one per person
        "mean_hours": ("hours", ds.Mean(0, 80)),
        "median_wage": ("log_wage", ds.Median(0.0, 4.0)),
        "wage_quartiles": ("log_wage", ds.Quantiles([0.25, 0.75], 0.0, 4.0)),
    }


def _table(result: ds.QueryResult) -> list[dict[str, Any]]:
    """The released rows, with arrays as tuples (so they compare with ==)."""
    return [
        {k: tuple(v.tolist()) if isinstance(v, np.ndarray) else v for k, v in row.items()}
        for row in result.to_dicts()
    ]


SETTINGS: dict[str, dict[str, Any]] = {
    # a person has up to 4 rows a year and rows in up to 4 years: both bounds drop rows
    "private-selection": {"by": "year", "max_rows_per_unit": 2, "max_groups_per_unit": 2,
                          "delta": 1e-6},
    "public-keys": {"by": ["year"], "keys": YEARS[:3], "max_rows_per_unit": 2,
                    "max_groups_per_unit": 2},
}  # fmt: skip


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_query_equals_duckdbs_answer(spark: Any, frame: Any, setting: str) -> None:
    kwargs = {"privacy_unit": "person", "epsilon": 4.0, **SETTINGS[setting]}
    shuffled = to_spark(spark, frame.sample(frac=1.0, random_state=2)).repartition(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        duck = ds.release(frame, _query(), rng=7, **kwargs)
        got = ds.release(shuffled, _query(), rng=7, **kwargs)
        other = ds.release(frame, _query(), rng=8, **kwargs)
    assert isinstance(got, ds.QueryResult)
    assert isinstance(duck, ds.QueryResult)
    assert len(_table(duck)) > 1
    assert _table(got) == _table(duck)
    assert got.parameters == duck.parameters
    assert _table(other) != _table(got)  # the seed matters: the comparison means something
    if "delta" in kwargs:  # one selection: every statistic releases the same groups
        groups = [[k for k, _ in got[name]] for name in got]
        assert all(g == groups[0] for g in groups)
        assert got["n"].selection == "private"


@pytest.mark.parametrize("m", [1, 3])
def test_a_people_count_alone_equals_duckdbs_answer(spark: Any, frame: Any, m: int) -> None:
    """Released alone, the count of the units is bounded by the engine at one row per
    person and group, whatever m is: the same answer on both engines and at every m."""
    kwargs: dict[str, Any] = {
        "by": "year", "keys": YEARS, "privacy_unit": "person", "max_rows_per_unit": m,
        "max_groups_per_unit": 2, "epsilon": 1.0, "rng": 5,
    }  # fmt: skip
    shuffled = to_spark(spark, frame.sample(frac=1.0, random_state=4)).repartition(2)
    people = ds.Count(distinct_units=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        duck = ds.release(frame, people, **kwargs)
        got = ds.release(shuffled, people, **kwargs)
        at_one = ds.release(frame, people, **{**kwargs, "max_rows_per_unit": 1})
    assert isinstance(got, ds.GroupedRelease)
    assert got.to_dicts() == duck.to_dicts()
    assert [r.value for _, r in got] == [r.value for _, r in at_one]


def test_sql_of_several_aggregates_on_a_spark_view(spark: Any, frame: Any) -> None:
    """Two by-columns, one of text (its group hash runs in DuckDB on the executors), and a
    private selection of their pairs."""
    query = (
        "SELECT region, year, COUNT(*) AS n, AVG(hours) AS mean_hours, "
        "MEDIAN(log_wage) AS median_wage, QUANTILE_CONT(log_wage, [0.25, 0.75]) AS q "
        "FROM {table} WHERE education >= 9 "
        "GROUP BY region, year ORDER BY region, year"
    )
    args: dict[str, Any] = {
        "epsilon": 3.0, "delta": 1e-6, "privacy_unit": "person", "max_rows_per_unit": 2,
        "max_groups_per_unit": 3, "bounds": {"hours": (0, 80), "log_wage": (0.0, 4.0)},
    }  # fmt: skip
    to_spark(spark, frame).createOrReplaceTempView("panel_query_view")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        duck = ds.sql(query.format(table="panel"), tables={"panel": frame}, rng=3, **args)
        view = ds.sql(query.format(table="panel_query_view"), rng=3, **args)
        other = ds.sql(query.format(table="panel"), tables={"panel": frame}, rng=4, **args)
    assert len(_table(duck)) > 1
    assert _table(view) == _table(duck)
    assert _table(other) != _table(view)


def test_where_is_applied_before_bounding(spark: Any, frame: Any) -> None:
    """Each person keeps one year. Filtered first, a person with rows in 2021-22 keeps
    one of those years, so they count every such person; filtered after bounding, only
    those whose kept year happened to be one of them."""
    kwargs: dict[str, Any] = {
        "by": "year", "keys": YEARS, "privacy_unit": "person", "max_groups_per_unit": 1,
        "epsilon": 1e4, "where": "year >= 2021",
    }  # fmt: skip
    query = {"n": ds.Count(), "h": ("hours", ds.Mean(0, 80))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        got = ds.release(to_spark(spark, frame), query, rng=2, **kwargs)
        duck = ds.release(frame, query, rng=2, **kwargs)
    counts = got["n"]
    assert isinstance(counts, ds.GroupedRelease)
    late_people = frame.loc[frame["year"] >= 2021, "person"].nunique()
    assert sum(counts[y].value for y in (2021, 2022)) == pytest.approx(late_people, abs=2)
    assert sum(counts[y].value for y in (2019, 2020)) == pytest.approx(0, abs=2)
    assert _table(got) == _table(duck)


def _brute_force(
    frame: Any,
    values: tuple[str, ...],
    by: tuple[str, ...],
    unit: str,
    m: int,
    g: int,
    keys: list[tuple[Any, ...]] | None,
) -> list[tuple[Any, ...]]:
    """The kept rows of the definition, by hand: DuckDB's hashes of each row, then in
    pandas each unit's g groups of smallest group hash and, in each, its m rows of
    smallest row hash (the tuple of every value column)."""
    con = duckdb.connect()
    con.register("f", frame)
    types = {str(r[0]): str(r[1]) for r in con.execute("DESCRIBE f").fetchall()}
    canon_g = ", ".join(canonical(f'"{b}"', types[b]) for b in by) or "0"
    canon_v = ", ".join(canonical(f'"{v}"', types[v]) for v in values)
    rows = con.execute(
        f"SELECT *, {keyed_hash(SALT[0], canon_g)} AS hg, {keyed_hash(SALT[1], canon_v)} AS hr "
        f"FROM (SELECT *, {canonical(f'{unit}', types[unit])} AS u FROM f)"
    ).df()
    if keys is not None:
        wanted = pd.DataFrame(keys, columns=list(by))
        rows = rows.merge(wanted, on=list(by))
    if keys is None or g < len(keys):
        pairs = rows[["u", *by, "hg"]].drop_duplicates().sort_values(["u", "hg"])
        chosen = pairs.groupby("u").head(g)[["u", *by]]
        rows = rows.merge(chosen, on=["u", *by])
    kept = rows.sort_values(["u", *by, "hr"]).groupby(["u", *by]).head(m)
    names = list(dict.fromkeys((*values, *by, unit)))
    return sorted(tuple(r) for r in kept[names].itertuples(index=False))


def _duckdb_rows(frame: Any, plan: dict[str, Any]) -> list[tuple[Any, ...]]:
    with open_table(frame) as source:
        keep = checked_rows(source, plan["values"], plan["by"], plan["unit"], "error")
        bound_rows(source, UnitBounding(salt=SALT, **plan), keep=keep)
        got = source.con.execute(f"SELECT * FROM {BOUNDED}").fetchall()
    return sorted(tuple(r) for r in got)


def _spark_rows(spark: Any, frame: Any, plan: dict[str, Any]) -> list[tuple[Any, ...]]:
    with open_spark(to_spark(spark, frame).repartition(3)) as source:
        checked = spark_bounding.spark_checked_rows(
            source, plan["values"], plan["by"], plan["unit"], "error"
        )
        kept = spark_bounding.spark_bound_rows(source, checked, UnitBounding(salt=SALT, **plan))
        return sorted(tuple(r) for r in kept.collect())


BOUNDINGS: dict[str, dict[str, Any]] = {
    # numbers only: Spark's own arithmetic hashes groups and rows
    "numeric": {"by": ("year",), "unit": "person", "max_rows": 2, "max_groups": 2},
    # text groups, a text unit and one group per unit: DuckDB hashes on the executors
    "text-unit": {"by": ("region", "year"), "unit": "name", "max_rows": 1, "max_groups": 1},
    "public-keys": {"by": ("year",), "unit": "person", "max_rows": 3, "max_groups": 2,
                    "keys": [(2019,), (2021,), (2022,)]},
    "no-by": {"by": (), "unit": "person", "max_rows": 2, "max_groups": 1},
}  # fmt: skip


@pytest.mark.parametrize("name", list(BOUNDINGS))
def test_kept_rows_are_duckdbs_and_the_definitions(spark: Any, frame: Any, name: str) -> None:
    people = frame.assign(name=[f"p{p:03d}" for p in frame["person"]])
    plan = {"values": ("hours", "log_wage"), "keys": None, **BOUNDINGS[name]}
    want = _brute_force(
        people,
        plan["values"],
        plan["by"],
        plan["unit"],
        plan["max_rows"],
        plan["max_groups"],
        plan["keys"],
    )
    duck = _duckdb_rows(people, plan)
    got = _spark_rows(spark, people, plan)
    assert duck == want
    assert got == want
    assert 0 < len(want) < len(people)  # the bounds drop rows, and keep some


def test_kept_rows_without_spark_arithmetic(
    spark: Any, frame: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The executors' DuckDB hashes the numeric rows and groups when Spark's arithmetic
    cannot (a DuckDB whose hash differs from the reference); the same rows are kept."""
    monkeypatch.setattr(spark_hash, "native_hash_available", lambda: False)
    plan = {"values": ("hours", "log_wage"), "keys": None, **BOUNDINGS["numeric"]}
    assert _spark_rows(spark, frame, plan) == _duckdb_rows(frame, plan)


def test_missing_values_in_any_query_column(spark: Any, frame: Any) -> None:
    """One check of every column the query reads: a missing value in one statistic's
    column is an error naming the columns (never values or counts), and with
    nulls="drop" its rows are dropped for every statistic, as in DuckDB."""
    holes = frame.assign(log_wage=frame["log_wage"].where(frame.index % 7 != 0))
    query = {"n": ds.Count(), "h": ("hours", ds.Mean(0, 80)), "w": ("log_wage", ds.Mean(0, 4))}
    kwargs: dict[str, Any] = {"privacy_unit": "person", "max_rows_per_unit": 2, "epsilon": 2.0}
    sdf = to_spark(spark, holes)
    with pytest.raises(ds.InputError, match="missing values") as caught:
        ds.release(sdf, query, rng=1, **kwargs)
    assert not any(ch.isdigit() for ch in str(caught.value))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        got = ds.release(sdf, query, rng=1, nulls="drop", **kwargs)
        duck = ds.release(holes, query, rng=1, nulls="drop", **kwargs)
    assert isinstance(got, ds.QueryResult)
    assert _table(got) == _table(duck)
