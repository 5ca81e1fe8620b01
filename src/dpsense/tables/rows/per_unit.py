"""One row per privacy unit (per public group): the engine-independent part of the
per-unit aggregation (docs/queries.md §7): what is aggregated, its SQL, its type checks.

``SELECT unit, [group,] SUM(col) AS total FROM t [WHERE ...] GROUP BY unit[, group]`` is a
function of each unit's own rows (Tumult's ``flat_map_by_id``; the per-user aggregation of
Wilson et al. 2020): adding or removing one unit adds or removes its rows of the derived
table only, one per group, and leaves every other unit's rows unchanged. The release that
reads the derived table then bounds each unit to one row per group
(``max_rows_per_unit=1``) and clips the per-unit value to the declared bounds.

Each engine builds the derived table (``Engine.per_unit``: DuckDB as the SQL of
:func:`per_unit_sql` over the release's own view, Spark as a ``groupBy``). Every per-unit
value is a DOUBLE, summed as one (nothing overflows on a value, and both engines give the
same numbers for the same rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from dpsense.errors import InputError

__all__ = [
    "FINITE",
    "FUNCTIONS",
    "SUMMED",
    "PerUnitRows",
    "PerUnitValue",
    "check_numeric",
    "per_unit_sql",
]

FUNCTIONS: Final = ("sum", "count", "avg", "min", "max")
"""The per-unit aggregates, by their SQL names (lower case)."""

_NUMERIC: Final = (
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
    "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "REAL",
    "BYTE", "SHORT", "INT", "LONG", "BOOLEAN",
)  # fmt: skip
"""Types a per-unit SUM, AVG, MIN or MAX may read (DuckDB's and Spark's names)."""


SUMMED: Final = ("sum", "avg")
"""The aggregates that add values: each row's value is first held to +-:data:`FINITE`.
In every aggregate but COUNT a NaN is read as NULL (skipped), on both engines."""

FINITE: Final = 1e300
"""A row's value beyond +-1e300 (an infinity) counts as +-1e300 in a per-unit SUM or AVG,
so that one unit's infinities of both signs add up to a number, not NaN (NaN would be a
missing value made by the aggregation, not by the data owner). The release clips the
per-unit value to its bounds afterwards, so this changes nothing else (up to 1e8 rows per
unit, whose sum stays finite)."""


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


@dataclass(frozen=True)
class PerUnitRows:
    """What an engine aggregates: per ``unit`` (and ``by`` group), the ``values`` of the
    rows that pass ``row_filter`` (a :class:`dpsense.tables.row_filter.RowFilter`, total;
    None: every row); ``label`` names the derived table in messages."""

    unit: str
    by: tuple[str, ...]
    values: tuple[PerUnitValue, ...]
    row_filter: Any = None
    label: str = "the per-person rows"

    @property
    def filter_columns(self) -> tuple[str, ...]:
        return tuple(self.row_filter.columns) if self.row_filter is not None else ()


def _held(value: Any, summed: bool) -> Any:
    """``value`` with NaN read as NULL (skipped, as SQL's aggregates skip nulls; DuckDB
    reads a pandas NaN as NULL already) and, in a SUM or AVG, held to [-FINITE, FINITE]."""
    from sqlglot import expressions as exp

    case = exp.Case().when(exp.func("isnan", value.copy()), exp.Null())
    if summed:
        top, bottom = exp.Literal.number(FINITE), exp.Literal.number(-FINITE)
        case = case.when(exp.GT(this=value.copy(), expression=top), top.copy())
        case = case.when(exp.LT(this=value.copy(), expression=bottom), bottom.copy())
    return case.else_(value.copy())


def _aggregate(value: PerUnitValue) -> Any:
    """The sqlglot aggregate of one per-unit column, as a DOUBLE (a value summed as one)."""
    from sqlglot import expressions as exp

    double = exp.DataType.build("DOUBLE")
    if value.column is None:
        node: Any = exp.Count(this=exp.Star())
    else:
        column = exp.column(exp.to_identifier(value.column, quoted=True))
        read = column if value.function == "count" else exp.cast(column, double)
        if value.function != "count":
            read = _held(read, value.function in SUMMED)
        node = {
            "count": exp.Count,
            "sum": exp.Sum,
            "avg": exp.Avg,
            "min": exp.Min,
            "max": exp.Max,
        }[value.function](this=read)
    return exp.alias_(exp.cast(node, double), exp.to_identifier(value.name, quoted=True))


def per_unit_sql(rows_sql: str, rows: PerUnitRows) -> str:
    """DuckDB SQL of the derived table: one row per unit (and group) of the rows of
    ``rows_sql`` that pass the row filter (total: it cannot raise on a row)."""
    import sqlglot
    from sqlglot import expressions as exp

    keys = [exp.column(exp.to_identifier(k, quoted=True)) for k in (rows.unit, *rows.by)]
    source = exp.Subquery(
        this=sqlglot.parse_one(rows_sql, read="duckdb"),
        alias=exp.TableAlias(this=exp.to_identifier("dpsense_rows")),
    )
    tree = exp.select(*keys, *(_aggregate(v) for v in rows.values)).from_(source)
    if rows.row_filter is not None:
        tree = tree.where(sqlglot.parse_one(rows.row_filter.sql, read="duckdb"))
    return str(tree.group_by(*(k.copy() for k in keys)).sql(dialect="duckdb"))


def check_numeric(types: dict[str, str], values: tuple[PerUnitValue, ...], label: str) -> None:
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
