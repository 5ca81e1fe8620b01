"""Contribution bounding (docs/tables.md §2): the rows a query bounds, and the keys both
engines choose them by.

A unit keeps the ``g`` groups with the smallest ``hash(key, unit, group)`` and, in each,
the ``m`` rows with the smallest ``hash(key, unit, value)``. The choice depends only on
the unit's own rows and a secret key (fresh per release, from the release's random
source), never on row order, so the bounded table is the same multiset whatever the
format or order of the input. The keys (:func:`keyed_hash`, :func:`canonical`) are DuckDB
SQL built with sqlglot; the DuckDB engine's bounding itself is
:mod:`dpsense.tables.engines.duckdb.rows_sql`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from dpsense.data.sql_build import duckdb_sql, parse_list
from dpsense.tables.rows.checks import FLOAT_TYPES, raise_on_flags
from dpsense.tables.rows.plan import TablePlan

__all__ = [
    "SCALAR_ROWS",
    "QueryRows",
    "UnitBounding",
    "canonical",
    "keyed_hash",
    "raise_on_query_flags",
    "text_unit_type",
]

SCALAR_ROWS: Final = 16
"""Up to this many rows per unit, a unit's kept values are stored as scalar columns."""

_INTEGER_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}
)


def keyed_hash(salt: int, columns: str, *, text_unit: bool = False) -> str:
    """The bounding key of a unit's row or group, in DuckDB SQL: ``hash(key, u, columns)``
    shifted to a signed 63-bit key (same order; DuckDB's top-m aggregate is faster on
    BIGINT keys). ``columns`` is DuckDB SQL of one or more expressions (``a, b``). The
    Spark engine computes this same expression with DuckDB on each Arrow batch, so both
    engines keep the same rows.

    ``text_unit``: the unit column ``u`` is text (a unit whose type no one declared is read
    as its text, docs/entry_points.md "Types"). Then an id whose text is an integer written
    the canonical way ("7", not "07", "+7" or "7.0") is hashed as that integer, as a
    declared integer column's 7 is: the same rows are kept from a CSV file as from its
    Parquet copy. The choice is per id, from its own text alone; who is one unit is its
    text."""
    from sqlglot import expressions as exp

    hashed = parse_list(columns)
    unit = exp.column("u")

    def hash_of(first: Any) -> Any:
        args = [exp.Literal.number(int(salt)), first, *(c.copy() for c in hashed)]
        return exp.Anonymous(this="hash", expressions=args)

    key = hash_of(unit)
    if text_unit:  # (the CASE parenthesised before the shift)
        number = exp.TryCast(this=unit.copy(), to=exp.DataType.build("BIGINT"))
        canonical_text = exp.EQ(
            this=exp.cast(number, "VARCHAR", dialect="duckdb"), expression=unit.copy()
        )
        key = exp.Case(ifs=[exp.If(this=canonical_text, true=hash_of(number.copy()))])
        key = exp.Paren(this=key.else_(hash_of(unit.copy()), copy=False))
    shifted = exp.BitwiseRightShift(this=key, expression=exp.Literal.number(1))
    return duckdb_sql(exp.cast(exp.Paren(this=shifted), "BIGINT"))


def text_unit_type(sql_type: str) -> bool:
    """True when a unit column of DuckDB type ``sql_type`` is hashed as text
    (:func:`canonical` reads it as VARCHAR)."""
    return not (
        sql_type in _INTEGER_TYPES or sql_type in FLOAT_TYPES or sql_type.startswith("DECIMAL")
    )


def canonical(expr: str, sql_type: str) -> str:
    """The column (DuckDB SQL ``expr``) as the same value whatever the input format: every
    integer width becomes BIGINT, floats DOUBLE, the rest text (hashes of it are then
    format-independent)."""
    from sqlglot import expressions as exp

    if sql_type in _INTEGER_TYPES:
        to = "BIGINT"
    elif sql_type in FLOAT_TYPES or sql_type.startswith("DECIMAL"):
        to = "DOUBLE"
    else:
        to = "VARCHAR"
    (value,) = parse_list(expr)
    return duckdb_sql(exp.Cast(this=value, to=exp.DataType.build(to, dialect="duckdb")))


@dataclass(frozen=True)
class UnitBounding:
    """The one contribution bounding of a query: its value, group and unit columns, the
    limits, the public keys (or None) and the secret keys of the two hashes."""

    values: tuple[str, ...]
    by: tuple[str, ...]
    unit: str
    max_rows: int
    max_groups: int
    keys: list[tuple[Any, ...]] | None
    salt: tuple[int, int]

    def parts(self) -> tuple[Any, ...]:
        return (
            self.values,
            self.by,
            self.unit,
            self.max_rows,
            self.max_groups,
            self.keys,
            self.salt,
        )


@dataclass(frozen=True, kw_only=True)
class QueryRows:
    """The rows a query reads, as an engine keeps them (``Engine.kept``): the value
    columns, the by-columns, the privacy unit, the rule for missing values and, with a
    privacy unit, the query's one contribution bounding."""

    values: tuple[str, ...]
    by: tuple[str, ...]
    unit: str | None
    nulls: str
    bounding: UnitBounding | None = None


def raise_on_query_flags(
    values: tuple[str, ...],
    by: tuple[str, ...],
    unit: str | None,
    nulls: str,
    nonnumeric: list[bool],
    value_missing: list[bool],
    key_missing: bool,
) -> bool:
    """The InputError of a query's checks, naming the column that has non-numeric entries
    (first) or missing values, with the by and unit columns; True when rows with missing
    values are to be dropped (``nulls="drop"``)."""
    for i, v in enumerate(values):
        raise_on_flags(
            TablePlan(v, by, unit, 1, 1, nulls, None, None, (0, 0)), [nonnumeric[i], False]
        )
    drop = False
    for i, v in enumerate(values):
        plan = TablePlan(v, by, unit, 1, 1, nulls, None, None, (0, 0))
        drop = raise_on_flags(plan, [False, value_missing[i] or key_missing]) or drop
    if not values:
        drop = raise_on_flags(
            TablePlan(None, by, unit, 1, 1, nulls, None, None, (0, 0)), [key_missing]
        )
    return drop
