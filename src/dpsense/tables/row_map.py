"""Computed columns: row-wise expressions added to a table before contribution bounding.

A computed column is a SQL expression over the columns of one row (DuckDB dialect), such
as ``FLOOR(age / 10) * 10`` or ``CASE WHEN age < 40 THEN 'young' ELSE 'old' END``, named
like a column (SQL: its SELECT alias, or the alias of the aggregate that reads it). Each
output row is a function of one input row, so adding or removing a unit's rows adds or
removes exactly as many rows, with the unit's own values: a row-wise map is a 1-stable
transformation (McSherry 2009, PINQ's ``Select``; Tumult's ``map``), and every guarantee
of the release holds for the mapped table's neighbours as for the original's (docs/sql.md
§3).

That holds only if the map is **total**. The expression passes the WHERE filter's one
allow-list (:func:`dpsense.tables.row_filter.refused_reason`) and is compiled by its
compiler (:func:`~dpsense.tables.row_filter.total_tree`): every operation that can fail
on a value gives NULL instead (DuckDB ``TRY``/``TRY_CAST``; Spark ``try_*`` functions,
analysed with ANSI mode off). A NULL (or NaN) result of a computed column that a
statistic aggregates or a query groups by **drops its row**, under either ``nulls=``
policy, as a value that does not fit a ``schema=`` cast does: an error there would let the
analyst learn whether some row makes the expression fail
(``AVG(CASE WHEN id = 17 THEN 1 / 0 ELSE x END)``). A computed column only counted
(SQL ``COUNT(expr)``) keeps its NULLs: the count counts around them.

A computed column's type is decided by binding the expression, in DuckDB, against the
table's declared types (no row is read); on Spark the expression's result is cast to that
type, so that both engines group (and hash, for the contribution bounding) the same keys.
A computed column that a statistic aggregates must bind to a number (an integer, a
decimal, a float or a boolean): the value check of a column of another type reads its
values (text that is not a number is an error), so ``AVG(CASE WHEN id = 17 THEN 'x' ELSE
'1' END)`` would raise exactly when person 17 is present. It is refused from its type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dpsense.errors import InputError, Param
from dpsense.tables.row_filter import (
    ALLOWED_SUMMARY,
    refused_reason,
    row_expression,
    total_sql,
    total_tree,
)

__all__ = [
    "Computed",
    "check_names",
    "duckdb_computed",
    "not_evaluated",
    "parse_computed",
    "spark_computed",
    "with_computed",
]

_VIEW = "dpsense_computed"
_KEPT = "dpsense_computed_rows"
_FLOATS = frozenset({"FLOAT", "DOUBLE", "REAL"})
_RESERVED = "dpsense_"
"""The prefix of the columns dpsense adds to a table (computed views, presence flags)."""


@dataclass(frozen=True)
class Computed:
    """One checked computed column."""

    name: str
    text: str
    """The expression as written (DuckDB dialect, printed back by sqlglot)."""
    spark_sql: str
    """The expression in Spark SQL, made total."""
    columns: tuple[str, ...]
    """The table's columns it reads."""
    drop_missing: bool = True
    """Drop the rows where it is NULL or NaN (module docstring)."""
    tree: Any = field(default=None, compare=False, repr=False)
    """The expression in DuckDB's dialect, made total, as a sqlglot tree."""
    numeric: bool = False
    """Aggregated as a number by a statistic: its bound type must be one (module
    docstring)."""


def parse_computed(
    computed: Mapping[str, str] | None, counted_only: Iterable[str] = (), *, where: str
) -> tuple[Computed, ...]:
    """Each ``name: expression`` of ``computed`` checked (the WHERE allow-list) and made
    total; the names in ``counted_only`` keep their NULL rows (module docstring).

    Raises
    ------
    InputError
        When an entry is not a name and an expression over one row, or the expression
        uses anything outside the allow-list (the message names the construct, never a
        value).
    """
    if computed is None:
        return ()
    if not isinstance(computed, Mapping):
        raise InputError(
            Param("columns", of=where),
            " must be a mapping {name: SQL expression over one row}. "
            f"Got {type(computed).__name__} instead.",
        )
    keep = set(counted_only)
    return tuple(
        _parse_one(str(name), text, drop_missing=name not in keep, where=where)
        for name, text in computed.items()
    )


def _parse_one(name: str, text: object, *, drop_missing: bool, where: str) -> Computed:
    from sqlglot import expressions as exp

    tree = row_expression(text)
    if tree is None:
        raise InputError(
            f"The computed column {name!r} of ",
            Param("columns", of=where, capital=False),
            " must be one SQL expression over the columns of a row (DuckDB dialect), such "
            'as "FLOOR(age / 10) * 10". Check its quotes and parentheses.',
        )
    for node in tree.walk():
        reason = refused_reason(node)
        if reason is not None:
            raise InputError(
                f"The computed column {name!r} uses {reason}, which is not supported: it "
                f"must read one row at a time with {ALLOWED_SUMMARY}.",
            )
    reads = tuple(dict.fromkeys(str(c.name) for c in tree.find_all(exp.Column)))
    return Computed(
        name,
        str(tree.sql(dialect="duckdb")),
        total_sql(tree, "spark"),
        reads,
        drop_missing,
        total_tree(tree, "duckdb"),
    )


def _check_numeric(computed: tuple[Computed, ...], types: Mapping[str, str]) -> None:
    """Refuse an aggregated computed column whose bound type is not a number (module
    docstring), decided from the text and the declared types alone."""
    from dpsense.tables.rows.checks import FLOAT_TYPES, SQL_INTEGERS, exact_numeric

    for c in computed:
        kind = types.get(c.name, "")
        if c.numeric and not (kind in FLOAT_TYPES or kind in SQL_INTEGERS or exact_numeric(kind)):
            raise InputError(
                f"The computed column {c.name!r} is aggregated as a number, but its "
                f"expression gives {kind or 'other'} values: CAST it to a number (e.g. "
                "CAST(... AS DOUBLE)); a value that does not fit then drops its row."
            )


def check_names(computed: tuple[Computed, ...], columns: Iterable[str], label: str) -> None:
    """Refuse a computed column named like a column of the table (which would one name
    mean?), whatever the case of its letters (DuckDB and Spark match names without regard
    to case: ``AS "ID"`` would read, or replace, the unit ``id``), or with a name of
    dpsense's own columns (``dpsense_...``); decided from the names alone."""
    names = {str(n).casefold() for n in columns}
    for c in computed:
        if c.name.casefold().startswith(_RESERVED):
            raise InputError(
                f"The computed column {c.name!r} has a name that dpsense keeps for its own "
                f"columns ({_RESERVED}...); give it another name (in SQL, another alias "
                "with AS)."
            )
        if c.name.casefold() in names:
            raise InputError(
                f"The computed column {c.name!r} has the name of a column of {label}; "
                "give it another name (in SQL, another alias with AS)."
            )


def duckdb_computed(source: Any, computed: tuple[Computed, ...]) -> None:
    """Point ``source`` (a DuckDB TableSource) at a view of its rows with the computed
    columns added, the rows where one that drops its missing values is NULL or NaN left
    out. Bound, not run: a type error depends on the text and the declared types only."""
    import duckdb

    check_names(computed, source.columns, source.label)
    try:
        _duckdb_view(source, computed)
    except duckdb.Error as exc:  # DuckDB's message could quote a value
        raise not_evaluated(computed, type(exc).__name__) from None


def not_evaluated(computed: tuple[Computed, ...], kind: str) -> InputError:
    """The error of computed columns that do not bind on the table (a type error, decided
    by the declared types and the text alone); it names no value."""
    names = ", ".join(repr(c.name) for c in computed)
    return InputError(
        f"The computed column(s) {names} could not be evaluated on the table ({kind}): "
        "check that each combines columns with values of their declared types and uses "
        f"only {ALLOWED_SUMMARY}."
    )


def _duckdb_view(source: Any, computed: tuple[Computed, ...]) -> None:
    from sqlglot import expressions as exp

    from dpsense.data.sql_build import (
        column,
        create_view,
        describe,
        duckdb_sql,
        select,
        star,
        table,
    )

    items = [exp.Star(), *(exp.alias_(c.tree.copy(), c.name, quoted=True) for c in computed)]
    source.con.execute(create_view(_VIEW, select(items, table(source.view)), replace=True))
    described = source.con.execute(describe(star(table(_VIEW)))).fetchall()
    types = {str(r[0]): str(r[1]) for r in described}
    _check_numeric(computed, types)
    tests: list[exp.Expression] = []
    for c in computed:
        if not c.drop_missing:
            continue
        tests.append(exp.Not(this=exp.Is(this=column(c.name), expression=exp.Null())))
        if types.get(c.name) in _FLOATS:
            tests.append(exp.Not(this=exp.Anonymous(this="isnan", expressions=[column(c.name)])))
    keep = exp.and_(*tests) if tests else None
    source.con.execute(create_view(_KEPT, star(table(_VIEW), keep), replace=True))
    source.con.execute(duckdb_sql(star(table(_KEPT)).limit(0))).fetchall()
    source.view = _KEPT
    source.columns = [*source.columns, *(c.name for c in computed)]


def _duckdb_types(fields: Mapping[str, str], computed: tuple[Computed, ...]) -> dict[str, str]:
    """Each computed column's DuckDB type, bound against an empty table whose columns have
    the Spark ``fields``' types (Spark SQL type names): no row of the data is read."""
    import duckdb
    from sqlglot import expressions as exp

    from dpsense.data.sql_build import describe, ident, select, table

    con = duckdb.connect()
    try:
        read = dict.fromkeys(n for c in computed for n in c.columns)
        schema = exp.Schema(
            this=table("dpsense_types"),
            expressions=[
                exp.ColumnDef(
                    this=ident(name),
                    kind=exp.DataType.build(fields[name], dialect="spark"),
                )
                for name in read
                if name in fields
            ],
        )
        if schema.expressions:
            con.execute(exp.Create(this=schema, kind="TABLE").sql(dialect="duckdb"))
        else:
            con.execute("CREATE TABLE dpsense_types (dpsense_none INTEGER)")
        items = [exp.alias_(c.tree.copy(), c.name, quoted=True) for c in computed]
        rows = con.execute(describe(select(items, table("dpsense_types")))).fetchall()
        return {str(r[0]): str(r[1]) for r in rows}
    finally:
        con.close()


def spark_computed(source: Any, computed: tuple[Computed, ...], ansi_off: Any) -> None:
    """``source`` (a SparkSource) with the computed columns added, each cast to the type
    DuckDB binds it to (so both engines group the same keys), and the rows where one that
    drops its missing values is NULL or NaN left out. Analysed with ANSI mode off
    (``ansi_off``), so that no value can make it raise."""
    from pyspark.sql import functions as sf
    from pyspark.sql import types as st
    from sqlglot import expressions as exp

    check_names(computed, source.columns, source.label)
    fields = {f.name: f.dataType.simpleString() for f in source.frame.schema.fields}
    try:
        types = _duckdb_types(fields, computed)
    except Exception as exc:  # a type error, or a Spark type DuckDB cannot declare
        raise not_evaluated(computed, type(exc).__name__) from None
    _check_numeric(computed, types)
    frame = source.frame
    with ansi_off(frame.sparkSession):
        for c in computed:
            spark_type = exp.DataType.build(types[c.name], dialect="duckdb").sql(dialect="spark")
            frame = frame.withColumn(c.name, sf.expr(c.spark_sql).cast(spark_type))
        for c in computed:
            if not c.drop_missing:
                continue
            keep = sf.col(c.name).isNotNull()
            if isinstance(frame.schema[c.name].dataType, st.FloatType | st.DoubleType):
                keep = keep & ~sf.isnan(sf.col(c.name))
            frame = frame.where(keep)
    source.frame = frame
    source.columns = list(frame.columns)
    source.types = {f.name: f.dataType for f in frame.schema.fields}


def with_computed(
    row_filter: Any,
    computed: Mapping[str, str],
    read: Iterable[str],
    where: str,
    numeric: Iterable[str] = (),
) -> Any:
    """``row_filter`` (a ``RowFilter``, or None without a predicate) with the computed
    columns added; those not in ``read`` (the columns aggregated or grouped by) are only
    counted and keep their NULL rows; those in ``numeric`` (aggregated as numbers) must
    bind to a number."""
    from dataclasses import replace

    from dpsense.tables.row_filter import RowFilter

    read, numbers = set(read), set(numeric)
    counted = [name for name in computed if name not in read]
    parsed = tuple(
        replace(c, numeric=c.name in numbers)
        for c in parse_computed(computed, counted, where=where)
    )
    if row_filter is None:
        row_filter = RowFilter("", "", ())
    columns = tuple(dict.fromkeys((*row_filter.columns, *(n for c in parsed for n in c.columns))))
    return replace(row_filter, columns=columns, computed=parsed)
