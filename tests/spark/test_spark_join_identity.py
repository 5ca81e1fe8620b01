"""The two join holes of issue "Joins without holes" on Spark, under ANSI on and off
(docs/entry_points.md, "Types"; docs/joins.md §4): text unit ids that read alike as
numbers stay apart whatever another person's id is, and a LEFT JOIN's unmatched rows are
in no group. Each equals the DuckDB answer for the same seed."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

import dpsense as ds
from tests.neighbours.harness import observe
from tests.spark.conftest import to_spark

pytestmark = pytest.mark.spark

EXACT = 1e5


@pytest.fixture(params=["true", "false"])
def ansi(request: pytest.FixtureRequest, spark: Any) -> Iterator[Any]:
    previous = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", request.param)
    try:
        yield spark
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)


def _quiet() -> Any:
    context = warnings.catch_warnings()
    context.__enter__()
    warnings.simplefilter("ignore")
    return context


def test_text_unit_ids_stay_apart_on_spark(ansi: Any) -> None:
    """A Spark frame's string column is declared text: ids "1" and "1.0" are two people on
    D and on D' (D plus "abc"), as on DuckDB; the count at m = 1 is the number of ids."""
    context = _quiet()
    try:
        for ids in (["1", "1.0", "2"], ["1", "1.0", "2", "abc"]):
            frame = pd.DataFrame({"person": ids, "x": [5.0] * len(ids)})
            kwargs: dict[str, Any] = {"privacy_unit": "person", "epsilon": EXACT, "rng": 1}
            on_spark = ds.release(to_spark(ansi, frame), ds.Count(), **kwargs).value
            on_duck = ds.release(frame, ds.Count(), **kwargs).value
            assert on_spark == on_duck == float(len(ids))
    finally:
        context.__exit__(None, None, None)


REGIONS = pd.DataFrame({"country": ["FR", "DE", "ES"], "region": ["west", "centre", None]})
LEFT = (
    "SELECT r.region, COUNT(*) AS n FROM people p LEFT JOIN regions r "
    "ON p.country = r.country GROUP BY r.region"
)


def test_left_join_nulls_are_in_no_group_on_spark(ansi: Any) -> None:
    """A person whose country has no region row (PT) or a NULL region (ES): released, the
    same groups, the same charge on D and D', equal to DuckDB's answer."""
    base = pd.DataFrame({"id": [1, 2, 3, 4], "country": ["FR", "DE", "FR", "DE"]})
    context = _quiet()
    try:
        for country in ("PT", "ES"):
            added = pd.concat(
                [base, pd.DataFrame({"id": [9], "country": [country]})], ignore_index=True
            )
            outcomes, answers = [], []
            for people in (base, added):
                acc = ds.Accountant(epsilon=1e6)
                tables = {"people": to_spark(ansi, people), "regions": to_spark(ansi, REGIONS)}
                args: dict[str, Any] = {
                    "public_tables": ["regions"], "privacy_unit": "id", "epsilon": EXACT,
                    "rng": 4,
                }  # fmt: skip
                outcomes.append(
                    observe(
                        lambda t=tables, a=acc, k=args: ds.sql(  # type: ignore[misc]
                            LEFT, tables=t, accountant=a, **k
                        ),
                        acc,
                    )
                )
                answers.append(ds.sql(LEFT, tables=tables, **args).to_dicts())
                duck = ds.sql(LEFT, tables={"people": people, "regions": REGIONS}, **args)
                assert answers[-1] == duck.to_dicts()
            assert outcomes[0].kind == outcomes[1].kind == "release", outcomes[1].short()
            assert outcomes[0].differences(outcomes[1], public_keys=True) == []
            assert {r["region"]: r["n"] for r in answers[1]} == {"centre": 2.0, "west": 2.0}
    finally:
        context.__exit__(None, None, None)
