"""The value checks of the engines: non-numeric entries and missing values (the DuckDB
engine's SQL of them is :mod:`dpsense.tables.engines.duckdb.rows_sql`).

A release raises on non-numeric entries in the value column, and on missing values (null
or NaN) in any column it uses unless ``nulls="drop"``, which drops those rows. The checks
are row expressions: ``check_table`` aggregates them in a pass of their own, and the
engine's held path (``held_scan``) reads them from aggregates of its first pass instead,
redoing that pass with the null rows dropped only when the table has some.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from dpsense.errors import missing_values, not_numbers

if TYPE_CHECKING:
    from dpsense.tables.rows.plan import TablePlan

__all__ = [
    "FLOAT_TYPES",
    "exact_numeric",
    "raise_on_flags",
]

FLOAT_TYPES: Final = frozenset({"FLOAT", "DOUBLE"})
SQL_INTEGERS: Final = frozenset(
    {
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "BIGINT",
        "HUGEINT",
        "UTINYINT",
        "USMALLINT",
        "UINTEGER",
        "UBIGINT",
        "UHUGEINT",
        "BOOLEAN",
    }
)
"""DuckDB's integer types (and BOOLEAN), which a declared integer reads exactly."""

_INTEGERS: Final = SQL_INTEGERS - {"BOOLEAN"}


def exact_numeric(sql_type: str) -> bool:
    """Integer and decimal types: every entry is a number, never NaN."""
    return sql_type in _INTEGERS or sql_type.startswith("DECIMAL")


def raise_on_flags(plan: TablePlan, flags: list[bool]) -> bool:
    """The InputError for the value checks of an engine (``flags``: non-numeric entries
    in the value column when there is one, then missing values, null or NaN, in any used
    column); True when rows with missing values are to be dropped. Infinities are not
    checked: they are values, clipped to the bounds like any other outside them. The
    messages name columns only, never values or counts."""
    if plan.column is not None and flags[0]:
        raise not_numbers(f"The column {plan.column!r}", plan.column)
    if not (flags and flags[-1]):
        return False
    if plan.nulls != "drop":
        used = ", ".join(repr(c) for c in (plan.column, *plan.by, plan.unit) if c is not None)
        raise missing_values(f"The columns this release uses ({used})", plural=True)
    return True
