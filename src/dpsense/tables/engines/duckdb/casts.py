"""Casting a DuckDB source to the declared ``schema=`` types: a row whose non-null value
does not fit its declared type is dropped (docs/tables.md, "Declared types")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from dpsense.data.source import quote
from dpsense.tables.rows.casts import Cast, CastDialect, fitting_cast
from dpsense.tables.rows.checks import SQL_INTEGERS as _SQL_INTEGERS

__all__ = ["apply_duckdb_schema", "cast_view_sql"]


def _whole_number(d: Any, limit: Any) -> Any:
    """``CASE WHEN isfinite(d) AND d = trunc(d) AND d >= -limit AND d < limit THEN
    CAST(d AS BIGINT) END``."""
    from sqlglot import expressions as exp

    def fn(name: str) -> Any:
        return exp.Anonymous(this=name, expressions=[d.copy()])

    whole = exp.and_(
        fn("isfinite"),
        exp.EQ(this=d.copy(), expression=fn("trunc")),
        exp.GTE(this=d.copy(), expression=exp.Neg(this=limit.copy())),
        exp.LT(this=d.copy(), expression=limit.copy()),
    )
    as_bigint = exp.Cast(this=d.copy(), to=exp.DataType.build("BIGINT"))
    return exp.Case(ifs=[exp.If(this=whole, true=as_bigint)])


_DUCKDB: Final = CastDialect("duckdb", _SQL_INTEGERS, _whole_number)


def _duckdb_cast(column: str, sql_type: str, cast: Cast) -> str:
    """SQL for ``column`` cast to ``cast``: NULL where a value does not fit (a fraction
    for an integer, more digits than the decimal holds, text that is not a number).

    DuckDB's own casts round (``TRY_CAST('3.5' AS BIGINT)`` is 4), so a value fits only
    when it survives the cast unchanged: compared as doubles (every double beyond 2^53 is a
    whole number, and the release reads doubles). Text is trimmed first: besides being
    harmless (DuckDB's casts ignore surrounding spaces), it stops DuckDB from pushing a bare
    ``TRY_CAST`` into its CSV reader, which then fails on text instead of giving NULL."""
    return fitting_cast(_DUCKDB, column, cast, sql_type, trim=sql_type == "VARCHAR")


def apply_duckdb_schema(source: Any, casts: Mapping[str, Cast]) -> None:
    """Cast the columns of an opened table (a DuckDB ``TableSource`` or a ``SparkSource``)
    as ``casts`` says, in its engine; each column must exist. A row with a value that is
    not null but does not fit its declared type is dropped (module docstring)."""
    if not casts:
        return
    for name in casts:
        source.require(name, "schema")
    con = source.con
    reader = getattr(source, "csv_reader", None)
    if reader is not None and source.view == "src":
        # read the declared columns as the file's own text, whatever DuckDB would infer
        text = dict.fromkeys(casts, "VARCHAR")
        con.execute(f"CREATE OR REPLACE TEMP VIEW src AS SELECT * FROM {reader(text)}")
    con.execute(f"CREATE TEMP VIEW dpsense_schema AS {cast_view_sql(con, source.view, casts)}")
    source.view = "dpsense_schema"


def cast_view_sql(con: Any, view: str, casts: Mapping[str, Cast]) -> str:
    """The SELECT of ``view`` with the columns of ``casts`` cast, keeping the rows whose
    non-null values fit (module docstring)."""
    described = con.execute(f"DESCRIBE SELECT * FROM {view}").fetchall()
    types = {str(r[0]): str(r[1]) for r in described}
    cast_sql = {name: _duckdb_cast(name, types[name], cast) for name, cast in casts.items()}
    exprs_sql = ", ".join(f"{e} AS {quote(n)}" for n, e in cast_sql.items())
    fits_sql = " AND ".join(
        f"({quote(n)} IS NULL OR ({e}) IS NOT NULL)" for n, e in cast_sql.items()
    )
    return f"SELECT * REPLACE ({exprs_sql}) FROM {view} WHERE {fits_sql}"
