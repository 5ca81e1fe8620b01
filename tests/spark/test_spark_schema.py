"""The Spark engine reads the schema as every other engine does: LongType means resolution 1,
DecimalType(p, s) 10**-s, and ``schema=`` casts in Spark (a row whose value does not fit is
dropped) with the same releases as pandas for a seed."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import dpsense as ds
from tests.spark.conftest import pd, to_spark

pytestmark = pytest.mark.spark


def test_integer_and_decimal_types(spark: Any, frame: Any) -> None:
    from pyspark.sql import types as st

    stat = ds.Median(0, 80)
    expected = ds.release(frame, stat, column="hours", epsilon=1.0, rng=21)
    got = ds.release(to_spark(spark, frame), stat, column="hours", epsilon=1.0, rng=21)
    assert got.parameters["resolution_source"] == "schema: BIGINT"
    assert got.value == expected.value
    assert got.parameters == expected.parameters
    schema = st.StructType([st.StructField("price", st.DecimalType(6, 2))])
    prices = [(Decimal(v),) for v in ("1.10", "2.35", "2.35", "2.35", "7.99")]
    rel = ds.release(spark.createDataFrame(prices, schema), ds.Median(0, 10), epsilon=500.0, rng=22)
    assert rel.parameters["resolution_source"] == "schema: DECIMAL(6,2)"
    assert rel.value == 2.35


def test_schema_casts_in_spark_like_duckdb(spark: Any) -> None:
    text = pd.DataFrame({"age": ["3", "4", "3.5", "abc", "5", " 6 ", "7"]})
    frame = to_spark(spark, text)  # a string column
    kwargs: dict[str, Any] = {"column": "age", "schema": {"age": "int"}, "epsilon": 1.0}
    # "3.5" and "abc" do not fit int: their rows are dropped, never an error (under the
    # default nulls="error" a null would be one, and would depend on the values)
    dropped = ds.release(frame, ds.Median(0, 10), rng=23, **kwargs)
    assert dropped.value == ds.release(text, ds.Median(0, 10), rng=23, **kwargs).value
    got = ds.release(frame, ds.Median(0, 10), nulls="drop", rng=23, **kwargs)
    expected = ds.release(text, ds.Median(0, 10), nulls="drop", rng=23, **kwargs)
    assert got.parameters["resolution_source"] == "schema argument: int"
    assert got.value == expected.value
    assert got.parameters == expected.parameters
