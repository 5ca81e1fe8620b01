"""``where=`` on a Spark DataFrame: transpiled to Spark SQL by sqlglot and applied before
contribution bounding, so the release equals the pandas (DuckDB) one for a seed."""

from __future__ import annotations

from typing import Any

import pytest

import dpsense as ds
from tests.spark.conftest import to_spark
from tests.tables.helpers import HOURS_BY_YEAR

pytestmark = pytest.mark.spark


def _values(result: Any) -> list[Any]:
    return [rel.value for _, rel in result]


def test_where_on_spark_matches_duckdb(spark: Any, frame: Any) -> None:
    kwargs: dict[str, Any] = {
        **HOURS_BY_YEAR,
        "max_rows_per_unit": 2,
        "max_groups_per_unit": 1,
        "epsilon": 4.0,
        # the double quotes of DuckDB become Spark's backticks
        "where": "education >= 12 AND \"region\" IN ('south', 'east')",
    }
    expected = ds.release(frame, ds.Mean(0, 80), rng=3, **kwargs)
    got = ds.release(to_spark(spark, frame).repartition(2), ds.Mean(0, 80), rng=3, **kwargs)
    assert _values(got) == _values(expected)
    unfiltered = ds.release(frame, ds.Mean(0, 80), rng=3, **{**kwargs, "where": None})
    assert _values(unfiltered) != _values(expected)  # the filter changed the rows


# a predicate that would raise on one person's row under Spark's default ANSI mode: it must
# drop that row (NULL keeps no row) instead of deciding whether the person is present
_PARTIAL = (
    "CASE WHEN person = {p} THEN hours % 0 = 1 ELSE TRUE END",
    "CASE WHEN person = {p} THEN hours // 0 = 1 ELSE TRUE END",
    "CASE WHEN person = {p} THEN hours / 0 > 1 ELSE TRUE END",
    "CASE WHEN person = {p} THEN CAST(region AS INT) > 0 ELSE TRUE END",
    "CASE WHEN person = {p} THEN CAST(hours AS BIGINT) * 9223372036854775807 > 0 ELSE TRUE END",
)


def test_where_cannot_raise_on_a_value_under_ansi(spark: Any, frame: Any) -> None:
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"  # Spark 4's default
    person = int(frame["person"].iloc[0])
    plain = frame[frame["person"] != person]
    kwargs: dict[str, Any] = {
        **HOURS_BY_YEAR,
        "epsilon": 1.0,
    }
    for text in _PARTIAL:
        where = text.format(p=person)
        with_person = ds.release(
            to_spark(spark, frame), ds.Mean(0, 80), rng=1, where=where, **kwargs
        )
        without = ds.release(to_spark(spark, plain), ds.Mean(0, 80), rng=1, where=where, **kwargs)
        # the person's rows are dropped by the NULL predicate: the same release on both
        assert _values(with_person) == _values(without), where
        expected = ds.release(plain, ds.Mean(0, 80), rng=1, where=where, **kwargs)
        assert _values(without) == _values(expected), where
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"  # restored
