"""``where=`` on a Spark DataFrame: transpiled to Spark SQL by sqlglot and applied before
contribution bounding, so the release equals the pandas (DuckDB) one for a seed."""

from __future__ import annotations

from typing import Any

import pytest

import dpsense as ds
from tests.spark.conftest import to_spark

pytestmark = pytest.mark.spark


def _values(result: Any) -> list[Any]:
    return [rel.value for _, rel in result]


def test_where_on_spark_matches_duckdb(spark: Any, frame: Any) -> None:
    kwargs: dict[str, Any] = {
        "column": "hours",
        "by": "year",
        "keys": [2019, 2020, 2021, 2022],
        "privacy_unit": "person",
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
