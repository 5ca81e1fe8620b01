"""A join query on Spark DataFrames equals the DuckDB answer for a seed: the join runs in
Spark (its temporary views), a public table given as a pandas frame is copied in, and the
public groups come from it."""

from __future__ import annotations

import warnings
from pathlib import Path
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
def test_spark_join_equals_duckdb(spark: Any, m: int, tmp_path: Path) -> None:
    """COUNT(DISTINCT unit) at any max_rows_per_unit, from the query's one bounding; a
    public CSV file beside Spark tables is copied into Spark, its columns as text."""
    tables = shop(seed=6, n_customers=150)
    on_spark = {name: to_spark(spark, frame) for name, frame in tables.items()}
    args = {**ARGS, "max_rows_per_unit": m}
    csv = tmp_path / "regions.csv"
    tables["regions"].to_csv(csv, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        duck = ds.sql(QUERY, tables=tables, **args).to_dicts()
        spark_all = ds.sql(QUERY, tables=on_spark, **args).to_dicts()
        mixed = ds.sql(QUERY, tables={**on_spark, "regions": tables["regions"]}, **args)
        from_file = ds.sql(QUERY, tables={**on_spark, "regions": str(csv)}, **args)
    assert [r["region"] for r in duck] == ["Asia", "Europe", "Oceania"]
    assert spark_all == duck
    assert mixed.to_dicts() == duck
    assert from_file.to_dicts() == duck


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


def test_a_declared_type_is_cast_in_each_table_before_the_join(spark: Any) -> None:
    """Country codes held as numbers by the customers and as text by the regions: the join
    is refused for comparing a number with text, on both engines, and the refusal's own
    advice (``schema={'country': 'text'}``, the key named once) makes it release, with
    the same seeded answer on Spark as on DuckDB."""
    tables = shop(seed=6, n_customers=150)
    codes = {"fr": 0, "de": 1, "it": 2, "jp": 3, "nz": 4}
    customers = tables["customers"].assign(country=tables["customers"]["country"].map(codes))
    regions = tables["regions"].assign(country=[str(codes[c]) for c in tables["regions"].country])
    tables = {**tables, "customers": customers, "regions": regions}
    on_spark = {name: to_spark(spark, frame) for name, frame in tables.items()}
    query = QUERY.replace(" WHERE i.price > 1", "")
    for given in (tables, on_spark):
        with pytest.raises(InputError, match="one kind") as info:
            ds.sql(query, tables=given, **{**ARGS, "rng": None})
        assert "schema={'country': 'text'} " in str(info.value)  # the key named once
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        duck = ds.sql(query, tables=tables, schema={"country": "text"}, **ARGS).to_dicts()
        spark_all = ds.sql(query, tables=on_spark, schema={"country": "text"}, **ARGS).to_dicts()
    assert [r["region"] for r in duck] == ["Asia", "Europe", "Oceania"]
    assert spark_all == duck
