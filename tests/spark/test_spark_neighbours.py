"""The neighbour harness (tests/neighbours/) on Spark DataFrames: no outcome may depend on
one person (SPEC §12, docs/entry_points.md).

Each case draws a small random table D and one adversarial person (harness.draw_tables),
builds D and D' = D + that person as Spark DataFrames of ONE explicit schema (id, grp, v:
bigint; x: double; s: string; every column nullable), so a Spark frame's types are public
exactly like a typed pandas frame's: the person's values stay in the column's type (0,
+-2**62, +-(2**63 - 1), +-1e300, +-inf, NaN, null, a new group key, odd text, a duplicate
row), never text in a numeric column. A random request from the harness's grammar (every
allowed WHERE node and function, schema casts, every aggregate, GROUP BY with public keys
and with private selection, a privacy unit, bounds="private") runs on both with the same
seed through ``ds.release`` (one statistic, or a dict), ``Accountant.release`` and
``ds.sql(..., tables={"tbl": spark_df})`` (alone and with an accountant); the outcome kind
and text, the charge, the columns and, under public keys, the groups must be equal.

The attack that motivates the contract, ``CASE WHEN id = <the person's id> THEN v % 0 = 1
ELSE TRUE END``, raises under Spark's default ANSI mode exactly when the person is present
unless the filter is made total; every third request here carries such a targeted
predicate (one that raises on any value of the person, such as ``id % 0 = 1`` or
``v % 0 = 1``, or one of the grammar's ``risky()`` operations), first and ANDed with the
drawn WHERE if any, besides those the grammar draws itself. With the Spark filter left
partial (no ``try_*`` forms, ANSI mode on) every entry point's quick tier fails.

Spark is slow (a release is a few Spark jobs, one more for a quantile's interval): the
quick tier runs 25 requests (about a minute on 2 cores), the ``slow`` tier 30 per entry
point (150 in all, about 12 minutes) with other seeds. A failure is shrunk less than
in the other tiers (each evaluation costs seconds).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.neighbours import harness
from tests.neighbours.harness import (
    COLUMNS,
    Case,
    Request,
    Stat,
    Tables,
    WhereGrammar,
    check_cases,
    draw_request,
    with_precondition,
)

pytestmark = [
    pytest.mark.spark,
    pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning"),
]

# every third request aims a predicate that is partial in a plain engine at the new person
TARGETED_EVERY = 3
# raise under ANSI mode on every non-null value: whether the person is present, unless the
# filter is total (id is never null; v may be)
ALWAYS_RAISES = ("id % 0 = 1", "v % 0 = 1", "id // 0 = 1", "LENGTH(s) % 0 = 0", "x / 0 > 1")
QUICK = {"release": 6, "query": 5, "accountant": 4, "sql": 6, "sql-accountant": 4}
SLOW = 30
SHRINK = 10  # evaluations of the greedy shrink after a failure (each runs Spark twice)


def _schema() -> Any:
    from pyspark.sql import types as st

    kinds = {"id": st.LongType(), "grp": st.LongType(), "v": st.LongType(),
             "x": st.DoubleType(), "s": st.StringType()}  # fmt: skip
    return st.StructType([st.StructField(c, kinds[c], nullable=True) for c in COLUMNS])


def spark_source(spark: Any) -> harness.Source:
    """D or D' as a Spark DataFrame, one explicit schema for both (a null stays a null,
    NaN stays NaN)."""
    schema = _schema()

    def source(tables: Tables, which: str, folder: Path) -> Any:
        rows = tables.base if which == "D" else tables.neighbour
        return spark.createDataFrame([tuple(r) for r in rows], schema)

    return source


def draw_spark_request(rs: np.random.Generator, entry: str, tables: Tables, index: int) -> Request:
    """harness.draw_request, and on every third request the targeted attack: a predicate
    that raises under ANSI mode when the person is present, put first (so that no other
    term keeps it from being evaluated) and ANDed with the drawn WHERE, if any. Every
    other targeted request uses one that raises on any value of the person (a division by
    zero of its never-null id, or of v), the others the grammar's ``risky()`` operations,
    which raise on some values only."""
    request = draw_request(rs, entry, tables, index)
    if index % TARGETED_EVERY:
        return request
    if (index // TARGETED_EVERY) % 2 == 0:
        risky = ALWAYS_RAISES[int(rs.integers(len(ALWAYS_RAISES)))]
    else:
        risky = WhereGrammar(rs, tables.new_id).risky()
    where = f"CASE WHEN id = {tables.new_id} THEN {risky} ELSE TRUE END"
    if request.where is not None:
        where = f"{where} AND ({request.where})"
    return with_precondition(replace(request, where=where), tables)


def _seed(entry: str, tier: str) -> int:
    return zlib.crc32(f"spark/{entry}/{tier}".encode())


def _check(entry: str, count: int, tier: str, spark: Any, tmp_path: Path, mp: Any) -> None:
    mp.setattr(harness, "MAX_SHRINK", min(harness.MAX_SHRINK, SHRINK))
    check_cases(
        entry,
        ("spark",),
        count,
        _seed(entry, tier),
        tmp_path,
        make=draw_spark_request,
        source=spark_source(spark),
    )


@pytest.mark.parametrize("entry", list(QUICK))
def test_spark_entry_point(
    entry: str, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _check(entry, QUICK[entry], "quick", spark, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("entry", list(QUICK))
def test_spark_entry_point_many(
    entry: str, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _check(entry, SLOW, "slow", spark, tmp_path, monkeypatch)


# A value that does not fit a declared type drops its row, never an error (SPEC §12): a
# double declared int on Spark, +-inf or beyond bigint (Spark's floor() of a double is a
# bigint, which overflows under ANSI mode for such values).
@pytest.mark.parametrize("entry", ["release", "sql"])
def test_declared_int_of_a_double_beyond_bigint(entry: str, spark: Any, tmp_path: Path) -> None:
    tables = Tables(
        base=((1, 1, 3, 2.0, "a"), (2, 2, 5, 3.0, "b")),
        person=((17, 1, 4, math.inf, "c"), (17, 1, 4, 1e300, "c"), (17, 1, 4, -1e19, "c")),
        new_id=17,
        container="spark",
    )
    stat = Stat("" if entry == "release" else "m", "median", "x", (0.0, 10.0))
    request = Request(
        entry, (stat,), 1.0, schema=(("x", "int"),), column_bounds=(("x", (0.0, 10.0)),)
    )
    case = Case(0, tables, request, spark_source(spark))
    diffs, a, b = case.differences(tmp_path)
    assert not diffs, case.report(a, b, diffs, 0)
