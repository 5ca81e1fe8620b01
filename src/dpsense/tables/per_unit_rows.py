"""One row per privacy unit (per public group): a table's rows aggregated per person on
its engine, before the release (docs/queries.md §8, docs/sql.md).

``SELECT unit, [group,] SUM(col) AS total FROM t [WHERE ...] GROUP BY unit[, group]`` is a
function of each unit's own rows (Tumult's ``flat_map_by_id``; the per-user aggregation of
Wilson et al. 2020): adding or removing one unit adds or removes its rows of the derived
table only, one per group, and leaves every other unit's rows unchanged. The release that
reads the derived table then bounds each unit to one row per group
(``max_rows_per_unit=1``) and clips the per-unit value to the declared bounds.

The table comes from the one-table form of the join (:func:`dpsense.query.join_form.
joined_input`: declared casts, a unit read as text when its type is undeclared); here its
rows are filtered with the total row predicate of ``where=`` (:mod:`dpsense.tables.
row_filter`) and aggregated: on DuckDB as the SQL of the release's own view ``src``, on
Spark as the DataFrame's ``groupBy``. Every per-unit value is a DOUBLE, summed as one (so
nothing overflows on a value, and both engines give the same numbers). Nothing here
reads a row: the types are checked from the declared schema, the SQL is bound on no rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from dpsense.errors import InputError
from dpsense.tables.engines import is_spark_frame
from dpsense.tables.engines.duckdb.joined import JoinedTables, open_joined
from dpsense.tables.row_filter import RowFilter
from dpsense.tables.rows.joins import join_sql

__all__ = ["FUNCTIONS", "PerUnitValue", "per_unit_rows", "per_unit_sql"]

FUNCTIONS: Final = ("sum", "count", "avg", "min", "max")
"""The per-unit aggregates, by their SQL names (lower case)."""

_NUMERIC: Final = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
    "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "REAL",
    "BYTE", "SHORT", "INT", "LONG", "BOOLEAN",
)  # fmt: skip
"""Types a per-unit SUM, AVG, MIN or MAX may read (DuckDB's and Spark's names)."""


@dataclass(frozen=True)
class PerUnitValue:
    """One per-unit column: ``name`` = ``function(column)`` over one unit's rows (per
    group); ``column`` None is ``COUNT(*)``."""

    name: str
    function: str
    column: str | None = None

    @property
    def shown(self) -> str:
        """How messages write it: SUM(hours), COUNT(*)."""
        return f"{self.function.upper()}({self.column or '*'})"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _aggregate_sql(value: PerUnitValue) -> str:
    """The DuckDB aggregate of one per-unit column, as a DOUBLE."""
    if value.column is None:
        return f"CAST(COUNT(*) AS DOUBLE) AS {_quoted(value.name)}"
    column = _quoted(value.column)
    if value.function == "count":
        return f"CAST(COUNT({column}) AS DOUBLE) AS {_quoted(value.name)}"
    return f"{value.function.upper()}(CAST({column} AS DOUBLE)) AS {_quoted(value.name)}"


def per_unit_sql(
    rows_sql: str,
    unit: str,
    by: tuple[str, ...],
    values: tuple[PerUnitValue, ...],
    predicate: str | None = None,
) -> str:
    """DuckDB SQL of the derived table: one row per ``unit`` (and ``by`` group) of the
    rows of ``rows_sql`` that pass ``predicate`` (total: it cannot raise on a row)."""
    keys = ", ".join(_quoted(k) for k in (unit, *by))
    items = ", ".join(_aggregate_sql(v) for v in values)
    where = f" WHERE {predicate}" if predicate else ""
    return (
        f"SELECT {keys}, {items} FROM ({rows_sql}) AS dpsense_rows{where} GROUP BY {keys}"
    )


def _check_numeric(types: dict[str, str], values: tuple[PerUnitValue, ...], label: str) -> None:
    """A SUM, AVG, MIN or MAX reads a column of numbers (from its declared type)."""
    for value in values:
        if value.column is None or value.function == "count":
            continue
        kind = types.get(value.column, "").split("(")[0].upper()
        if kind not in _NUMERIC:
            raise InputError(
                f"The per-person {value.shown} reads {value.column!r}, which is not a "
                f"column of numbers in {label} (its type is {kind or 'unknown'}); "
                "aggregate a numeric column, or declare its type with schema=."
            )


def _duckdb_rows(
    joined: JoinedTables,
    by: tuple[str, ...],
    values: tuple[PerUnitValue, ...],
    row_filter: RowFilter | None,
    label: str,
) -> JoinedTables:
    """The derived table as the release's view ``src``, bound (on no rows) first."""
    import duckdb

    read = [v.column for v in values if v.column is not None]
    read += list(row_filter.columns if row_filter is not None else ())
    inferred = sorted({c for c in read if c in joined.inferred_columns})
    if inferred:
        shown = ", ".join(f"{c}=TYPE" for c in inferred[:2])
        raise InputError(
            f"The per-person aggregation reads {', '.join(map(repr, inferred))} from a CSV "
            f"file whose type it does not declare; declare it with schema= ({shown})."
        )
    with open_joined(joined) as source:
        found = source.con.execute("DESCRIBE SELECT * FROM src").fetchall()
    _check_numeric({str(r[0]): str(r[1]) for r in found}, values, label)
    sql = per_unit_sql(
        join_sql(joined.plan.relation),
        joined.plan.unit,
        by,
        values,
        row_filter.sql if row_filter is not None else None,
    )
    derived = replace(joined, sql=sql, plan=replace(joined.plan, label=label))
    try:
        with open_joined(derived) as source:
            source.con.execute("SELECT * FROM src LIMIT 0").fetchall()
    except duckdb.Error as exc:
        raise InputError(
            f"The per-person aggregation could not be evaluated on {label} "
            f"({type(exc).__name__}): check that WHERE compares columns with values of "
            "their declared types."
        ) from None
    return derived


def _spark_rows(
    frame: Any,
    unit: str,
    by: tuple[str, ...],
    values: tuple[PerUnitValue, ...],
    row_filter: RowFilter | None,
    label: str,
) -> Any:
    """The derived table as a (lazy) Spark DataFrame."""
    from pyspark.sql import functions as sf

    _check_numeric(dict(frame.dtypes), values, label)
    if row_filter is not None:
        frame = row_filter.spark_frame(frame)
    columns = []
    for value in values:
        if value.column is None:
            column = sf.count(sf.lit(1))
        elif value.function == "count":
            column = sf.count(sf.col(value.column))
        else:
            read = sf.col(value.column).cast("double")
            column = {"sum": sf.sum, "avg": sf.avg, "min": sf.min, "max": sf.max}[
                value.function
            ](read)
        columns.append(column.cast("double").alias(value.name))
    return frame.groupBy(unit, *by).agg(*columns)


def per_unit_rows(
    data: Any,
    unit: str,
    by: tuple[str, ...],
    values: tuple[PerUnitValue, ...],
    row_filter: RowFilter | None,
    label: str,
) -> Any:
    """The derived table of ``data`` (the one-table join's data: DuckDB's
    :class:`JoinedTables` or a Spark DataFrame), one row per unit per group."""
    if is_spark_frame(data):
        return _spark_rows(data, unit, by, values, row_filter, label)
    assert isinstance(data, JoinedTables)
    return _duckdb_rows(data, by, values, row_filter, label)
