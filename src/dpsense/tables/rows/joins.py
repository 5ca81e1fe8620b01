"""A query of several tables as one joined table, in relational form: what ``ds.sql``'s
JOIN and ``ds.join`` both ask (:class:`JoinForm`: the scanned tables, the join steps, the
columns read), and the plan engines run (engine-neutral values; built by
:mod:`dpsense.tables.joined`, run by each engine's ``join``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from dpsense.errors import InputError

__all__ = [
    "JoinForm",
    "JoinPlan",
    "JoinStep",
    "Scan",
    "comparable",
    "group_keys_from_public",
    "public_key_sql",
    "shared_key",
]

Column = tuple[str, str]
"""(alias, column name)."""


@dataclass(frozen=True)
class Scan:
    """One table a join reads.

    Attributes
    ----------
    table : str
        A name (looked up in ``tables``) or a file path.
    is_path : bool
        True when given as a quoted string or ``read_parquet``/``read_csv`` of one.
    alias : str
        The name columns are qualified with: the alias, else the table's name.
    """

    table: str
    is_path: bool
    alias: str


@dataclass(frozen=True)
class JoinStep:
    """One join: the table it adds, INNER or LEFT, and the column equalities of its
    condition, each as ((alias, column), (alias, column)) with the added table second
    where the equality names it."""

    scan: Scan
    left: bool
    pairs: tuple[tuple[Column, Column], ...]


@dataclass(frozen=True)
class JoinForm:
    """What a release of several tables asks, from ``ds.sql``'s FROM ... JOIN or from
    ``ds.join``: the tables (the first, then one per join), the joins in order, each column
    read (values, groups, the filter's) with the alias that qualifies it (None: found by
    name), the GROUP BY columns and the SELECT aliases GROUP BY names."""

    scans: tuple[Scan, ...]
    joins: tuple[JoinStep, ...]
    column_tables: tuple[tuple[str, str | None], ...]
    by: tuple[str, ...] = ()
    group_aliases: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class JoinPlan:
    """A query of several tables as one joined table (the DuckDB SQL over one view per
    table), with its unit column and where each released column comes from."""

    tables: tuple[tuple[str, str], ...]
    """(view name, table name) for every table the joined SQL reads."""
    sql: str
    """SELECT unit, columns FROM view JOIN view ON ... (DuckDB dialect)."""
    unit: str
    """The name of the joined table's unit column (the privacy_unit of the release)."""
    column_alias: Mapping[str, str]
    """Each released or filtered column -> the alias of the table it comes from."""
    public_aliases: frozenset[str]
    """The aliases of the public tables."""
    alias_table: Mapping[str, str]
    """Each alias -> its table name."""
    label: str
    compared: tuple[tuple[tuple[str, str], tuple[str, str]], ...] = ()
    """Every pair of (table, column) a condition compares: the query's and the paths'."""
    unit_table: str = ""
    """The table whose column the joined unit column is (the end of the first private
    table's path)."""
    key_checks: tuple[tuple[str, str, str], ...] = ()
    """Per foreign-key path step: (SQL returning a row when a key value belongs to more
    than one unit, table, key). A path's keys must be keys: the data owner's precondition
    (docs/joins.md §1)."""


_NUMBERS: Final = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT",
                   "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE",
                   "DECIMAL", "INT", "LONG", "SHORT", "BYTE")  # fmt: skip


def _family(sql_type: str) -> str:
    """The family a join may compare within: numbers, text, or the type itself."""
    base = sql_type.split("(")[0].upper()
    if base in _NUMBERS:
        return "number"
    if base in ("VARCHAR", "STRING", "TEXT"):
        return "text"
    return base


def comparable(
    types: Mapping[tuple[str, str], str],
    compared: tuple[tuple[tuple[str, str], tuple[str, str]], ...],
) -> None:
    """An InputError for a join condition that compares columns of different kinds (a
    number with text, say): the engine would convert one side and fail, or compare as
    text, on values (the message names the columns and their declared types only)."""
    for a, b in compared:
        ta, tb = types[a], types[b]
        if _family(ta) != _family(tb):
            # one entry per name: a key named alike in both tables is declared once (the
            # entry casts it in every table that holds it)
            example = ", ".join(f"{c!r}: 'text'" for c in dict.fromkeys((a[1], b[1])))
            raise InputError(
                f"The join compares {a[0]}.{a[1]} ({ta}) with {b[0]}.{b[1]} ({tb}): a join "
                "compares columns of one kind (numbers with numbers, text with text). "
                f"Declare both with one type, e.g. schema={{{example}}} "
                "(types 'int', 'float', 'decimal(p,s)' or 'text'), or store the keys with one "
                "type."
            )


def shared_key(table: str, key: str) -> InputError:
    """A key of a privacy-unit path that belongs to more than one unit (the data owner's
    precondition: a row must belong to one unit)."""
    return InputError(
        f"The privacy_unit path goes through {table}.{key}, and some value of it belongs to "
        "more than one unit, so a row reached through it would belong to two people. The "
        "keys of a path must be keys (each value of one unit): clean the table (a data "
        "owner's precondition, like missing values), or declare another path."
    )


def group_keys_from_public(plan: JoinPlan, by: Sequence[str]) -> list[str] | None:
    """The aliases whose distinct values are the groups, when every GROUP BY column comes
    from a public table (None otherwise: the groups are selected privately or given)."""
    if not by:
        return None
    aliases = [plan.column_alias.get(c) for c in by]
    if any(a is None or a not in plan.public_aliases for a in aliases):
        return None
    return [a for a in aliases if a is not None]


def public_key_sql(plan: JoinPlan, by: Sequence[str]) -> str:
    """DuckDB SQL for every combination of the GROUP BY columns' distinct (non-null) values
    in their public tables: the distinct rows within a table, the product across tables."""
    views = {t: v for v, t in plan.tables}
    parts: dict[str, list[str]] = {}
    for column in by:
        parts.setdefault(plan.column_alias[column], []).append(column)
    selects = []
    for i, (alias, cols) in enumerate(parts.items()):
        picked = ", ".join(_quote(c) for c in cols)
        present = " AND ".join(f"{_quote(c)} IS NOT NULL" for c in cols)
        selects.append(
            f"(SELECT DISTINCT {picked} FROM {views[plan.alias_table[alias]]} WHERE {present}) "
            f"AS k{i}"
        )
    ordered = ", ".join(_quote(c) for c in by)
    return f"SELECT {ordered} FROM {' CROSS JOIN '.join(selects)} ORDER BY {ordered}"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
