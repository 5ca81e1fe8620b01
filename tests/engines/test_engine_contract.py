"""The engine contract (``dpsense.tables.engines.Engine``), run against every engine.

Each test opens the same small table of people in one engine (DuckDB from pandas, Spark
from a typed DataFrame of the same rows), asks the engine one thing through the interface
and compares the answer with what plain Python computes from the rows. The Spark cases are
in the engines tier (``make test-engines``); the DuckDB cases in the quick tier.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from dpsense.errors import InputError
from dpsense.tables.engines import engine_for
from dpsense.tables.row_filter import parse_row_filter
from dpsense.tables.rows.casts import Cast
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.rows.unit_bounding import QueryRows, UnitBounding

pd = pytest.importorskip("pandas")

# person, group, value, a text column; one person has several rows in several groups
ROWS: list[tuple[int, str, float | None, str | None]] = [
    (1, "a", 1.0, "x"),
    (1, "a", 2.0, "x"),
    (1, "b", 3.0, "y"),
    (2, "a", 2.5, None),
    (3, "b", 4.0, "x"),
    (3, "b", math.inf, "z"),
    (4, "c", 9.223372036854775808e18, "x"),
    (5, "c", -7.0, "y"),
    (5, "c", None, "y"),
    (6, "a", 0.0, "x"),
]
COLUMNS = ["person", "grp", "v", "t"]


def _pandas() -> Any:
    return pd.DataFrame(ROWS, columns=COLUMNS)


def _spark(session: Any) -> Any:
    from pyspark.sql import types as st

    schema = st.StructType(
        [
            st.StructField("person", st.LongType()),
            st.StructField("grp", st.StringType()),
            st.StructField("v", st.DoubleType()),
            st.StructField("t", st.StringType()),
        ]
    )
    return session.createDataFrame(ROWS, schema)


@pytest.fixture(params=["duckdb", pytest.param("spark", marks=pytest.mark.spark)], scope="module")
def table(request: pytest.FixtureRequest) -> Any:
    """The table as the engine under test reads it."""
    if request.param == "duckdb":
        return _pandas()
    return _spark(request.getfixturevalue("spark"))


@contextmanager
def opened(table: Any, row_filter: Any = None) -> Iterator[Any]:
    engine = engine_for(table)
    with engine.open(table, None, row_filter) as source:
        yield engine, source


def _counts(engine: Any, source: Any, nulls: str = "drop", by: tuple[str, ...] = ("grp",)) -> dict:
    rows = QueryRows(values=("v",), by=by, unit="person", nulls=nulls)
    with engine.kept(source, rows) as kept:
        return {r[0]: int(r[-1]) for r in kept.unit_counts(by, "person")}


def _python_units(rows: list[tuple[Any, ...]]) -> dict[str, int]:
    """Distinct people per group among ``rows`` (the rows with a value)."""
    people: dict[str, set[int]] = {}
    for person, grp, v, _ in rows:
        if v is not None:
            people.setdefault(grp, set()).add(person)
    return {g: len(p) for g, p in sorted(people.items())}


def _fits_int(v: float) -> bool:
    return math.isfinite(v) and v == int(v) and abs(v) < 2**63


def test_engine_for_chooses_by_the_input(table: Any) -> None:
    engine = engine_for(table)
    assert engine.name == ("spark" if type(table).__module__.startswith("pyspark") else "duckdb")
    with opened(table) as (_, source):
        assert engine_for(source) is engine  # an opened source keeps its engine
        assert list(source.columns) == COLUMNS


def test_require_names_the_argument_and_never_a_value(table: Any) -> None:
    with opened(table) as (_, source), pytest.raises(InputError) as caught:
        source.require("age", "column")
    text = str(caught.value)
    assert "'age'" in text
    assert "column=" in text
    assert "2.5" not in text


def test_kept_rows_count_units_per_group(table: Any) -> None:
    with opened(table) as (engine, source):
        got = _counts(engine, source, nulls="drop")
    assert got == _python_units(ROWS)


def test_missing_values_are_an_error_that_names_the_column(table: Any) -> None:
    with opened(table) as (engine, source), pytest.raises(InputError) as caught:
        _counts(engine, source, nulls="error")
    assert "'v'" in str(caught.value)
    assert "-7" not in str(caught.value)


def test_schema_cast_drops_the_rows_whose_value_does_not_fit(table: Any) -> None:
    """An int cast keeps whole numbers below 2^63 and drops 2.5, inf and 2^63 (a null
    stays a null: ``nulls=`` decides)."""
    with opened(table) as (engine, source):
        engine.apply_schema(source, {"v": Cast("int")})
        got = _counts(engine, source)
    fits = [
        r
        for r in ROWS
        if r[2] is None or (math.isfinite(r[2]) and r[2] == int(r[2]) and abs(r[2]) < 2**63)
    ]
    assert got == _python_units(fits)


def test_a_total_filter_cannot_raise_and_keeps_the_rows_it_passes(table: Any) -> None:
    """``v % 0`` and a cast of text are errors in SQL; the filter is total, so they are
    NULL and keep no row, whatever the values."""
    row_filter = parse_row_filter("v % 0 = 1 OR CAST(t AS INTEGER) = 1 OR v >= 2")
    with opened(table, row_filter) as (engine, source):
        engine.check_filter(source, row_filter, {})
        with engine.filtered(source, row_filter):
            got = _counts(engine, source)
    assert got == _python_units([r for r in ROWS if r[2] is not None and r[2] >= 2])


def test_presence_marks_the_rows_that_hold_a_value(table: Any) -> None:
    with opened(table) as (engine, source):
        names = {"t": "dpsense_has_0"}
        engine.add_presence(source, names)
        present = engine.present_rows(source, "dpsense_has_0")
        got = _counts(engine, present)
    assert got == _python_units([r for r in ROWS if r[3] is not None])


def test_keys_that_do_not_fit_the_declared_type_are_refused(table: Any) -> None:
    plan = TablePlan(None, ("person",), None, 1, 1, "error", None, None, (0, 0))
    with opened(table) as (engine, source):
        engine.check_keys(source, plan, [(1,), (2,)])  # fits
        with pytest.raises(InputError):
            engine.check_keys(source, plan, [("not a number",)])


def test_one_bounding_keeps_the_same_rows_in_every_engine(table: Any) -> None:
    """With at most one group and one row per person, every person counts once in
    exactly one group, and the choice (a keyed hash of the person's own rows and a secret
    key) is the same in every engine: DuckDB's choice on the same rows is the reference."""
    bounding = UnitBounding(("v",), ("grp",), "person", 1, 1, None, (12345, 67890))
    rows = QueryRows(values=("v",), by=("grp",), unit="person", nulls="drop", bounding=bounding)

    def counts(data: Any) -> dict[str, int]:
        with opened(data) as (engine, source), engine.kept(source, rows) as kept:
            return {r[0]: int(r[-1]) for r in kept.unit_counts(("grp",), "person")}

    got = counts(table)
    people = {p for p, _, v, _ in ROWS if v is not None}
    assert sum(got.values()) == len(people)
    assert all(got[g] <= n for g, n in _python_units(ROWS).items() if g in got)
    assert got == counts(_pandas())


def test_bound_hands_over_each_groups_clipped_values(table: Any) -> None:
    plan = TablePlan("v", ("grp",), None, 1, 1, "drop", -5.0, 5.0, (1, 2))
    with opened(table) as (engine, source):
        bounded = engine.bound(source, plan, None)
        got = {
            bounded.keys[gid][0]: sorted(np.asarray(values, dtype=float).tolist())
            for gid, values in bounded.values(list(range(len(bounded.keys))))
        }
    want: dict[str, list[float]] = {}
    for _, grp, v, _ in ROWS:
        if v is not None:
            want.setdefault(grp, []).append(min(max(v, -5.0), 5.0))
    assert got == {g: sorted(vs) for g, vs in sorted(want.items())}
    assert Counter(len(v) for v in got.values()) == Counter(len(v) for v in want.values())
