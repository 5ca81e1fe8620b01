"""The value checks of the DuckDB engine: non-numeric entries and missing values.

A release raises on non-numeric entries in the value column, and on missing values (null
or NaN) in any column it uses unless ``nulls="drop"``, which drops those rows. The checks
are row expressions: :func:`check_table` aggregates them in a pass of their own, and the
engine's held path (``held_scan``) reads them from aggregates of its first pass instead,
redoing that pass with the null rows dropped only when the table has some.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from dpsense.data.source import TableSource, quote
from dpsense.errors import missing_values, not_numbers

if TYPE_CHECKING:
    from dpsense.tables.rows.plan import TablePlan

__all__ = [
    "FLOAT_TYPES",
    "check_exprs",
    "check_table",
    "exact_numeric",
    "is_nan",
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


def is_nan(expr: str) -> str:
    """SQL that is true where the double ``expr`` is NaN.

    ``isnan`` alone is not enough: DuckDB folds it to false on a Parquet column whose
    statistics are finite, and writers leave NaN out of the statistics (a Parquet file
    written by Polars or pyarrow with NaN in it would pass the check). ``isfinite`` is
    evaluated, and NaN is the one double that is neither finite nor infinite."""
    return f"(isnan({expr}) OR NOT (isfinite({expr}) OR isinf({expr})))"


def exact_numeric(sql_type: str) -> bool:
    """Integer and decimal types: every entry is a number, never NaN."""
    return sql_type in _INTEGERS or sql_type.startswith("DECIMAL")


def check_exprs(plan: TablePlan, types: dict[str, str]) -> tuple[list[str], str | None]:
    """The row tests of the checks, in the order :func:`raise_on_flags` reads their
    ``bool_or``: a non-numeric entry in the value column (when there is one), then a
    missing value in a used column (that test last; None when nothing can be missing).
    The column's type drops the tests that cannot hold: a number column has no
    non-numeric entries, an integer or decimal one no NaN."""
    checks: list[str] = []
    null_tests: list[str] = []
    if plan.column is not None:
        v = quote(plan.column)
        sql_type = types.get(plan.column, "")
        num = v if sql_type == "DOUBLE" else f"TRY_CAST({v} AS DOUBLE)"
        # infinities are values: clipped to the bounds below, never an error
        numeric = sql_type in FLOAT_TYPES or exact_numeric(sql_type)
        checks.append("FALSE" if numeric else f"({v} IS NOT NULL AND {num} IS NULL)")
        nan = "" if exact_numeric(sql_type) else f" OR {is_nan(num)}"
        null_tests.append(f"({v} IS NULL{nan})")
    for name in (*plan.by, *([plan.unit] if plan.unit else [])):
        # NaN in a float key is missing too, as pandas' NaN (read as null) is; Polars,
        # Parquet and CSV ("nan") keep it as NaN
        nan = f" OR {is_nan(quote(name))}" if types.get(name) in FLOAT_TYPES else ""
        null_tests.append(f"({quote(name)} IS NULL{nan})")
    return checks, (" OR ".join(null_tests) if null_tests else None)


def check_table(source: TableSource, plan: TablePlan, types: dict[str, str]) -> str:
    """Raise on bad values (a pass over the table); return the WHERE clause that drops
    nulls (or 'TRUE')."""
    checks, any_null = check_exprs(plan, types)
    if not checks and any_null is None:
        return "TRUE"
    tests = [*checks, any_null or "FALSE"]
    row = source.con.execute(
        f"SELECT {', '.join(f'bool_or({t})' for t in tests)} FROM {source.view}"
    ).fetchone()
    flags = [bool(f) for f in row] if row is not None else []
    return f"NOT ({any_null})" if raise_on_flags(plan, flags) else "TRUE"


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
