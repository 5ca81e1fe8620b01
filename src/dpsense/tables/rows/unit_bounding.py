"""Contribution bounding in DuckDB SQL (docs/tables.md §2).

A unit keeps the ``g`` groups with the smallest ``hash(key, unit, group)`` and, in each,
the ``m`` rows with the smallest ``hash(key, unit, value)``. The choice depends only on
the unit's own rows and a secret key (fresh per release, from the release's random
source), never on row order, so the bounded table is the same multiset whatever the
format or order of the input.

:func:`bound_units` writes the kept values as ``dpsense_pairs``: one row per kept (unit,
group) pair. The groups are chosen first (one arg-min per unit for one group per unit, a
top-g over the distinct (unit, group) pairs otherwise) and a semi-join keeps their rows
for the top-m aggregate, which then runs on the kept rows only. A count ranks no rows: all
of a pair's rows have the same value, and the pair keeps ``min(c, m)`` of its ``c`` rows.

One aggregation over the units instead (each unit's m rows of smallest ``hg * 2^63 + hr``
by one ``min_by``: the chosen group's rows come first) was tried and is far slower:
DuckDB's top-m aggregate over all 2e7 rows of the hard table in 1e6 groups cost tens of
seconds, against a few for the arg-min and the semi-join.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from dpsense.tables.rows.checks import FLOAT_TYPES, raise_on_flags
from dpsense.tables.rows.plan import TablePlan

__all__ = [
    "SCALAR_ROWS",
    "QueryRows",
    "UnitBounding",
    "bound_units",
    "canonical",
    "keyed_hash",
    "raise_on_query_flags",
    "text_unit_type",
]

SCALAR_ROWS: Final = 16
"""Up to this many rows per unit, a unit's kept values are stored as scalar columns."""

_STAGE: Final = "dpsense_stage"

_INTEGER_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}
)


def keyed_hash(salt: int, columns: str, *, text_unit: bool = False) -> str:
    """The bounding key of a unit's row or group, in DuckDB SQL: ``hash(key, u, columns)``
    shifted to a signed 63-bit key (same order; DuckDB's top-m aggregate is faster on
    BIGINT keys). The Spark engine computes this same expression with DuckDB on each
    Arrow batch, so both engines keep the same rows.

    ``text_unit``: the unit column ``u`` is text (a unit whose type no one declared is read
    as its text, docs/entry_points.md "Types"). Then an id whose text is an integer written
    the canonical way ("7", not "07", "+7" or "7.0") is hashed as that integer, as a
    declared integer column's 7 is: the same rows are kept from a CSV file as from its
    Parquet copy. The choice is per id, from its own text alone; who is one unit is its
    text."""
    if not text_unit:
        return f"(hash({int(salt)}, u, {columns}) >> 1)::BIGINT"
    number = "TRY_CAST(u AS BIGINT)"
    return (
        f"((CASE WHEN CAST({number} AS VARCHAR) = u THEN hash({int(salt)}, {number}, "
        f"{columns}) ELSE hash({int(salt)}, u, {columns}) END) >> 1)::BIGINT"
    )


def text_unit_type(sql_type: str) -> bool:
    """True when a unit column of DuckDB type ``sql_type`` is hashed as text
    (:func:`canonical` reads it as VARCHAR)."""
    return not (
        sql_type in _INTEGER_TYPES or sql_type in FLOAT_TYPES or sql_type.startswith("DECIMAL")
    )


def canonical(expr: str, sql_type: str) -> str:
    """The column as the same value whatever the input format: every integer width becomes
    BIGINT, floats DOUBLE, the rest text (hashes of it are then format-independent)."""
    if sql_type in _INTEGER_TYPES:
        return f"CAST({expr} AS BIGINT)"
    if sql_type in FLOAT_TYPES or sql_type.startswith("DECIMAL"):
        return f"CAST({expr} AS DOUBLE)"
    return f"CAST({expr} AS VARCHAR)"


def bound_units(
    con: Any,
    plan: TablePlan,
    stage: str,
    group_cols: list[str],
    canon: str | None,
    value: str,
    *,
    text_unit: bool = False,
) -> str:
    """Create ``dpsense_pairs``, one row per kept (unit, group) pair: the group columns,
    then the kept values as ``v1..vm`` (a list ``vs`` when m > ``SCALAR_ROWS``), or for a
    count (``plan.column`` None) the number of kept rows ``k``; return SQL of the bounded
    histogram (group columns, v, c).

    ``canon`` is the canonical SQL of the group (hashed to choose the groups), or None
    when every unit keeps every group (no by, or at least as many groups as keys)."""
    salt_r = plan.salt[1]
    keyed = ", ".join(group_cols)
    m = int(plan.max_rows)
    hr = keyed_hash(salt_r, value, text_unit=text_unit)
    rows = (
        f"({stage})"
        if canon is None
        else f"({_chosen_rows(plan, stage, group_cols, canon, text_unit)})"
    )
    if plan.column is None:
        # a count: every row of a pair has the same value (0) and so the same row hash,
        # and the pair keeps min(c, m) of its c rows: counted, not ranked
        con.execute(
            f"CREATE TEMP TABLE dpsense_pairs AS SELECT {keyed}, least(count(*), {m})::BIGINT "
            f"AS k FROM {rows} GROUP BY u, {keyed}"
        )
        return (
            f"SELECT {keyed}, 0::DOUBLE AS v, sum(k)::BIGINT AS c FROM dpsense_pairs GROUP BY ALL"
        )
    # the hash shifted to a signed 63-bit key: same order (ties only where two 64-bit
    # hashes differ in their last bit), and DuckDB's top-m aggregate is about 25% faster
    # on BIGINT keys than on UBIGINT ones
    pairs = f"SELECT u, {keyed}, min_by({value}, {hr}, {m}) AS vs FROM {rows} GROUP BY ALL"
    if m <= SCALAR_ROWS:
        # m scalar columns materialise far faster than a list column
        slots = ", ".join(f"vs[{i}] AS v{i}" for i in range(1, m + 1))
        con.execute(f"CREATE TEMP TABLE dpsense_pairs AS SELECT {keyed}, {slots} FROM ({pairs})")
        kept = " UNION ALL ".join(
            f"SELECT {keyed}, v{i} AS v FROM dpsense_pairs WHERE v{i} IS NOT NULL"
            for i in range(1, m + 1)
        )
    else:
        con.execute(f"CREATE TEMP TABLE dpsense_pairs AS {pairs}")
        kept = f"SELECT {keyed}, unnest(vs) AS v FROM dpsense_pairs"
    return f"SELECT {keyed}, v, count(*)::BIGINT AS c FROM ({kept}) GROUP BY ALL"


def _chosen_rows(
    plan: TablePlan, stage: str, group_cols: list[str], canon: str, text_unit: bool
) -> str:
    """SQL of the rows of each unit's chosen groups (a semi-join), for the top-m rows of
    each kept pair.

    Which groups a unit keeps does not depend on which rows it keeps, so the (unit,
    group) pairs a unit drops never reach a top-m aggregate (most pairs of a table whose
    people spread over the groups); the bounded table is the same."""
    keyed = ", ".join(group_cols)
    G = int(plan.max_groups)
    hg = keyed_hash(plan.salt[0], canon, text_unit=text_unit)
    if G == 1 and len(group_cols) == 1:
        # one group per unit: an arg-min per unit over its rows; ties between two
        # groups' 63-bit hashes are broken arbitrarily, as by the top-G aggregate
        chosen = f"SELECT u, arg_min({keyed}, {hg}) AS {keyed} FROM {_STAGE} GROUP BY u"
    else:
        # each unit's G (unit, group) pairs of smallest hash(key, unit, group), chosen
        # from the distinct pairs
        distinct = f"SELECT DISTINCT u, {keyed}, {hg} AS hg FROM {_STAGE}"
        if len(group_cols) == 1:
            top = f"unnest(min_by({keyed}, hg, {G})) AS {keyed}"
        else:
            struct = ", ".join(f"'{c}': {c}" for c in group_cols)
            top = f"unnest(min_by({{{struct}}}, hg, {G}), recursive := true)"
        chosen = f"SELECT u, {top} FROM ({distinct}) GROUP BY u"
    # the staged rows (a join, say) are one CTE read twice: computed once
    return (
        f"WITH {_STAGE} AS ({stage}) "
        f"SELECT s.* FROM {_STAGE} s SEMI JOIN ({chosen}) c USING (u, {keyed})"
    )


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
