"""SQL ``COUNT(col)`` on a Spark DataFrame: the rows whose col holds a value, and the
DuckDB answer on the same data for a seed (``tests/query/test_sql_count_col.py``)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import dpsense as ds
from tests.query.test_sql_count_col import BIG, exact, table
from tests.spark.conftest import to_spark

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::UserWarning")]

QUERY = "SELECT g, COUNT(*) AS n, COUNT(x) AS c, COUNT(s) AS cs FROM t GROUP BY g"


def _sql(query: str, data: Any, **kwargs: Any) -> ds.QueryResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ds.sql(query, tables={"t": data}, keys={"g": ["a", "b", "c"]}, **kwargs)


@pytest.mark.parametrize("unit", [None, "id"])
def test_spark_count_col_is_the_duckdb_answer(spark: Any, unit: str | None) -> None:
    frame = table()
    kwargs: dict[str, Any] = {"privacy_unit": unit, "max_rows_per_unit": 2 if unit else 1}
    on_spark = _sql(QUERY, to_spark(spark, frame), epsilon=1.0, rng=8, **kwargs)
    on_pandas = _sql(QUERY, frame, epsilon=1.0, rng=8, **kwargs)
    assert on_spark.to_dicts() == on_pandas.to_dicts()
    exact_counts = _sql(QUERY, to_spark(spark, frame), epsilon=BIG, rng=9)
    want = exact(frame)
    for row in exact_counts.to_dicts():
        assert {k: row[k] for k in ("n", "c", "cs")} == want[row["g"]]


def test_spark_count_col_alone(spark: Any) -> None:
    frame = table()
    query = "SELECT g, COUNT(x) AS c FROM t GROUP BY g"
    on_spark = _sql(query, to_spark(spark, frame), epsilon=1.0, rng=3)
    on_pandas = _sql(query, frame, epsilon=1.0, rng=3)
    assert on_spark.to_dicts() == on_pandas.to_dicts()
