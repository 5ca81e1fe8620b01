"""Row-wise expressions in SQL on a Spark DataFrame equal the DuckDB answer for a seed: a
histogram of ``FLOOR(age / 10) * 10`` and a ``CASE WHEN`` grouping with an aggregate of an
expression (docs/sql.md). The computed columns are typed by DuckDB's binding on both
engines, so the groups (and the contribution bounding's hashes of them) agree."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from tests.spark.conftest import to_spark

pytestmark = pytest.mark.spark

DECADES = "SELECT FLOOR(age / 10) * 10 AS decade, COUNT(*) AS n FROM people GROUP BY decade"
BANDS = (
    "SELECT CASE WHEN age < 40 THEN 'young' ELSE 'old' END AS band, COUNT(*) AS n, "
    "AVG(price * qty) AS spend FROM people GROUP BY 1 ORDER BY band"
)


def _people() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 600
    return pd.DataFrame(
        {
            "person": np.arange(n) // 3,
            "age": rng.integers(18, 80, n),
            "price": rng.uniform(0, 10, n).round(2),
            "qty": rng.integers(0, 5, n),
        }
    )


def _both(spark: Any, query: str, **args: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    frame = _people()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        duck = ds.sql(query, tables={"people": frame}, **args).to_dicts()
        on_spark = ds.sql(query, tables={"people": to_spark(spark, frame)}, **args).to_dicts()
    return duck, on_spark


def test_a_histogram_of_decades_on_spark_equals_duckdb(spark: Any) -> None:
    duck, on_spark = _both(
        spark,
        DECADES,
        epsilon=1.0, privacy_unit="person", max_rows_per_unit=2, max_groups_per_unit=2,
        keys={"decade": [10, 20, 30, 40, 50, 60, 70]}, rng=3,
    )  # fmt: skip
    assert [r["decade"] for r in duck] == [10, 20, 30, 40, 50, 60, 70]
    assert on_spark == duck


def test_a_case_when_grouping_on_spark_equals_duckdb(spark: Any) -> None:
    duck, on_spark = _both(
        spark,
        BANDS,
        epsilon=1.0, delta=1e-6, privacy_unit="person", max_rows_per_unit=2,
        max_groups_per_unit=1, bounds={"spend": (0.0, 40.0)}, rng=8,
    )  # fmt: skip
    assert {r["band"] for r in duck} <= {"young", "old"}
    assert on_spark == duck
