"""A join query on Spark DataFrames equals the DuckDB answer for a seed: the join runs in
Spark (its temporary views), a public table given as a pandas frame is copied in, and the
public groups come from it."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import dpsense as ds
from dpsense.errors import InputError
from tests.query.test_sql_joins import UNITS, shop
from tests.spark.conftest import to_spark

pytestmark = pytest.mark.spark

QUERY = (
    "SELECT r.region, COUNT(DISTINCT c.customer_id) AS people, SUM(i.price) AS total, "
    "MEDIAN(i.price) AS med FROM items i JOIN orders o ON i.order_id = o.order_id "
    "JOIN customers c ON o.customer_id = c.customer_id "
    "JOIN regions r ON c.country = r.country WHERE i.price > 1 GROUP BY r.region"
)
ARGS: dict[str, Any] = {
    "privacy_unit": UNITS, "public_tables": ["regions"], "epsilon": 1.0, "rng": 11,
    "bounds": {"price": (0.0, 20.0)}, "max_rows_per_unit": 1,
}  # fmt: skip


@pytest.mark.parametrize("m", [1, 4])
def test_spark_join_equals_duckdb(spark: Any, m: int) -> None:
    """COUNT(DISTINCT unit) at any max_rows_per_unit, from the query's one bounding."""
    tables = shop(seed=6, n_customers=150)
    on_spark = {name: to_spark(spark, frame) for name, frame in tables.items()}
    args = {**ARGS, "max_rows_per_unit": m}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        duck = ds.sql(QUERY, tables=tables, **args).to_dicts()
        spark_all = ds.sql(QUERY, tables=on_spark, **args).to_dicts()
        mixed = ds.sql(QUERY, tables={**on_spark, "regions": tables["regions"]}, **args)
    assert [r["region"] for r in duck] == ["Asia", "Europe", "Oceania"]
    assert spark_all == duck
    assert mixed.to_dicts() == duck


def test_a_private_frame_beside_spark_frames_is_refused(spark: Any) -> None:
    tables = shop(seed=6, n_customers=30)
    on_spark = {name: to_spark(spark, frame) for name, frame in tables.items()}
    with pytest.raises(InputError, match="one engine"):
        ds.sql(QUERY, tables={**on_spark, "orders": tables["orders"]}, **ARGS)
    with pytest.raises(InputError, match="one kind"):
        ds.sql(
            "SELECT COUNT(*) FROM orders o JOIN regions r ON o.customer_id = r.country",
            tables=on_spark,
            **{**ARGS, "rng": None},
        )
