"""Contribution bounding in DuckDB SQL (docs/tables.md §2).

A unit keeps the ``g`` groups with the smallest ``hash(key, unit, group)`` and, in each,
the ``m`` rows with the smallest ``hash(key, unit, value)``. The choice depends only on
the unit's own rows and a secret key (fresh per release, from the release's random
source), never on row order, so the bounded table is the same multiset whatever the
format or order of the input.

:func:`bound_units` writes the kept values as ``dpsense_pairs``: one row per kept (unit,
group) pair. With one group per unit (the default) and a single group column, one
aggregation over the units does it all: each unit's ``m`` rows of smallest key ``hg *
2^63 + hr`` (the group hash, then the row hash, both 63-bit) are the rows of its group of
smallest ``hg`` in order of ``hr``, followed (when that group has fewer than ``m`` rows)
by rows of its other groups, which are dropped. No semi-join and no second pass over the
table: a GROUP BY over the units is the cheapest exact bounding we found (a semi-join of
the rows against each unit's chosen group costs about three such GROUP BYs).

Two groups of one unit whose 63-bit group hashes are equal would interleave in that
order; the definition breaks such a tie arbitrarily but keeps ``min(c, m)`` rows of one
group, so a release that meets one (a chance of about ``pairs^2 / 2^63`` per unit) is
bounded again the general way: the groups are chosen first (one arg-min, or a top-g over
the distinct pairs) and a semi-join keeps their rows for the top-m aggregate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from dpsense.tables.checks import FLOAT_TYPES

if TYPE_CHECKING:
    from dpsense.tables.engine import TablePlan

__all__ = ["SCALAR_ROWS", "bound_units", "canonical", "keyed_hash"]

SCALAR_ROWS: Final = 16
"""Up to this many rows per unit, a unit's kept values are stored as scalar columns."""

_INTEGER_TYPES = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}
)


def keyed_hash(salt: int, columns: str) -> str:
    """The bounding key of a unit's row or group, in DuckDB SQL: ``hash(key, u, columns)``
    shifted to a signed 63-bit key (same order; DuckDB's top-m aggregate is faster on
    BIGINT keys). The Spark engine computes this same expression with DuckDB on each
    Arrow batch, so both engines keep the same rows."""
    return f"(hash({int(salt)}, u, {columns}) >> 1)::BIGINT"


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
    one_pass: bool = True,
) -> str:
    """Create ``dpsense_pairs`` (the group columns, then the kept values as ``v1..vm``, or
    a list ``vs`` when m > ``SCALAR_ROWS``), one row per kept (unit, group) pair; return
    SQL of the kept rows as (group columns, v).

    ``canon`` is the canonical SQL of the group (hashed to choose the groups), or None
    when every unit keeps every group (no by, or at least as many groups as keys).
    ``one_pass`` False asks for the general way (a float group column: -0.0 and 0.0 are
    one group but hash apart)."""
    salt_r = plan.salt[1]
    keyed = ", ".join(group_cols)
    m = int(plan.max_rows)
    hr = keyed_hash(salt_r, value)
    single = canon is not None and plan.max_groups == 1 and len(group_cols) == 1
    if one_pass and single and m <= SCALAR_ROWS:
        assert canon is not None
        if _one_pass(con, plan, stage, keyed, canon, value):
            return _slots_kept(keyed, m)
    if canon is None:
        # the hash shifted to a signed 63-bit key: same order (ties only where two
        # 64-bit hashes differ in their last bit), and DuckDB's top-m aggregate is
        # about 25% faster on BIGINT keys than on UBIGINT ones
        pairs = f"SELECT u, {keyed}, min_by({value}, {hr}, {m}) AS vs FROM ({stage}) GROUP BY ALL"
    else:
        pairs = _chosen_first(plan, stage, group_cols, canon, value)
    if m <= SCALAR_ROWS:
        # m scalar columns materialise far faster than a list column
        slots = ", ".join(f"vs[{i}] AS v{i}" for i in range(1, m + 1))
        con.execute(f"CREATE TEMP TABLE dpsense_pairs AS SELECT {keyed}, {slots} FROM ({pairs})")
        return _slots_kept(keyed, m)
    con.execute(f"CREATE TEMP TABLE dpsense_pairs AS {pairs}")
    return f"SELECT {keyed}, unnest(vs) AS v FROM dpsense_pairs"


def _slots_kept(keyed: str, m: int) -> str:
    return " UNION ALL ".join(
        f"SELECT {keyed}, v{i} AS v FROM dpsense_pairs WHERE v{i} IS NOT NULL"
        for i in range(1, m + 1)
    )


def _one_pass(con: Any, plan: TablePlan, stage: str, keyed: str, canon: str, value: str) -> bool:
    """One group per unit in one aggregation over the units (module docstring); False
    (nothing created) when some unit has two groups of equal hash among its listed rows."""
    salt_g, salt_r = plan.salt
    m = int(plan.max_rows)
    hg = keyed_hash(salt_g, canon)
    hr = keyed_hash(salt_r, value)
    # (hg, hr) in lexicographic order as one HUGEINT: both lie in [0, 2^63)
    key = f"({hg})::HUGEINT * 9223372036854775808::HUGEINT + ({hr})"
    con.execute(
        "CREATE OR REPLACE TEMP TABLE dpsense_units AS SELECT u, min_by({'g': "
        f"{keyed}, 'c': {canon}, 'v': {value}}}, {key}, {m}) AS l FROM ({stage}) GROUP BY u"
    )
    # a listed row of another group whose group hash equals the chosen group's
    tie = keyed_hash(salt_g, "x")
    first = keyed_hash(salt_g, "l[1].c")
    clash = " OR ".join(
        f"(l[{i}].g IS DISTINCT FROM l[1].g AND l[{i}].g IS NOT NULL AND "
        f"{tie.replace('x', f'l[{i}].c')} = {first})"
        for i in range(2, m + 1)
    )
    row = con.execute(f"SELECT bool_or({clash}) FROM dpsense_units").fetchone() if clash else None
    if row is not None and row[0]:
        con.execute("DROP TABLE dpsense_units")
        return False
    # the chosen group's rows come first: the listed rows of other groups are dropped
    slots = ", ".join(
        f"CASE WHEN l[{i}].g = l[1].g THEN l[{i}].v END AS v{i}" for i in range(1, m + 1)
    )
    con.execute(
        f"CREATE TEMP TABLE dpsense_pairs AS SELECT l[1].g AS {keyed}, {slots} FROM dpsense_units"
    )
    con.execute("DROP TABLE dpsense_units")
    return True


def _chosen_first(
    plan: TablePlan, stage: str, group_cols: list[str], canon: str, value: str
) -> str:
    """SQL of (u, group columns, vs): the groups chosen first, their rows kept by a
    semi-join, then the top-m rows of each kept pair.

    Which groups a unit keeps does not depend on which rows it keeps, so the (unit,
    group) pairs a unit drops never reach a top-m aggregate (most pairs of a table whose
    people spread over the groups); the bounded table is the same."""
    salt_g, salt_r = plan.salt
    keyed = ", ".join(group_cols)
    G = int(plan.max_groups)
    hg = keyed_hash(salt_g, canon)
    if G == 1 and len(group_cols) == 1:
        # one group per unit: an arg-min per unit over its rows; ties between two
        # groups' 63-bit hashes are broken arbitrarily, as by the top-G aggregate
        chosen = f"SELECT u, arg_min({keyed}, {hg}) AS {keyed} FROM ({stage}) GROUP BY u"
    else:
        # each unit's G (unit, group) pairs of smallest hash(key, unit, group), chosen
        # from the distinct pairs
        distinct = f"SELECT DISTINCT u, {keyed}, {hg} AS hg FROM ({stage})"
        if len(group_cols) == 1:
            top = f"unnest(min_by({keyed}, hg, {G})) AS {keyed}"
        else:
            struct = ", ".join(f"'{c}': {c}" for c in group_cols)
            top = f"unnest(min_by({{{struct}}}, hg, {G}), recursive := true)"
        chosen = f"SELECT u, {top} FROM ({distinct}) GROUP BY u"
    kept = f"SELECT s.* FROM ({stage}) s SEMI JOIN ({chosen}) c USING (u, {keyed})"
    hr = keyed_hash(salt_r, value)
    return (
        f"SELECT u, {keyed}, min_by({value}, {hr}, {int(plan.max_rows)}) AS vs "
        f"FROM ({kept}) GROUP BY ALL"
    )
