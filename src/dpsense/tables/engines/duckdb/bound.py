"""The engine's share of a table release, in DuckDB SQL.

Everything that touches rows runs in DuckDB: the checks for missing and non-numeric
values, dropping nulls, keeping public keys, contribution bounding by a keyed hash,
clipping, per-group unit counts, and ordering each group's values. Python receives the
distinct groups with their unit counts (for private partition selection) and then each
group's clipped values in batches of bounded size, never the whole table.

Contribution bounding (docs/tables.md §2): a unit keeps the ``g`` groups with the smallest
``hash(key, unit, group)`` and, in each, the ``m`` rows with the smallest ``hash(key, unit,
value)``. The choice depends only on the unit's own rows and a secret key (fresh per
release, from the release's random source), never on row order, so the bounded table is
the same multiset whatever the format or order of the input (``unit_bounding``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpsense.data.source import TableSource
from dpsense.errors import keys_of_another_type, keys_repeated
from dpsense.tables.engines.duckdb.held_scan import held_table
from dpsense.tables.engines.duckdb.rows_sql import bound_units, check_table, stage_sql
from dpsense.tables.rows.bounded import BoundedTable, TablePlan, summarise
from dpsense.tables.rows.checks import raise_on_flags
from dpsense.tables.rows.unit_bounding import canonical, keyed_hash, text_unit_type

__all__ = [
    "BoundedTable",
    "TablePlan",
    "bound_table",
    "keyed_hash",
    "raise_on_flags",
    "summarise",
]


def bound_table(
    source: TableSource,
    plan: TablePlan,
    keys: list[tuple[Any, ...]] | None,
) -> BoundedTable:
    """Check, filter, bound and clip the table in DuckDB; return its groups.

    ``keys`` are public keys (each a tuple of by-values), or None for every group present
    after bounding (private selection happens in Python on the unit counts).

    With a privacy unit, ``rows_sql.bound_units`` keeps each unit's ``g`` groups of
    smallest ``hash(key, unit, group)`` (exactly g: ties are broken, never all kept) and,
    in each, the ``m`` values of smallest ``hash(key, unit, value)``. Each kept (unit,
    group) pair is one distinct unit of its group.
    """
    con = source.con
    types = {
        str(row[0]): str(row[1])
        for row in con.execute(f"DESCRIBE SELECT * FROM {source.view}").fetchall()
    }
    by = plan.by
    gs = [f"g{i}" for i in range(len(by))]
    public = keys is not None and bool(by)
    if public:
        assert keys is not None
        load_keys(source, plan, keys, types)
    if (
        plan.unit is None
        and plan.hold
        and (public or not by)
        and (plan.column is None or (plan.lower is not None and plan.upper is not None))
    ):
        return held_table(source, plan, keys if public else None, types)
    row_test = check_table(source, plan, types)
    stage = stage_sql(source, plan, types, row_test, public)
    group_cols = ["gid"] if (public or not by) else gs
    hist_src, unit_src = _histogram_sources(source, plan, stage, types, group_cols, keys)
    if group_cols == ["gid"]:
        con.execute(f"CREATE TEMP TABLE dpsense_hist AS {hist_src}")
        group_keys = list(keys) if public and keys is not None else [()]
    else:  # groups found in the data, numbered in the order of their values
        group_keys = _number_groups(con, gs, hist_src)
        if unit_src is not None:
            order = ", ".join(gs)
            unit_src = (
                f"SELECT dg.gid, u.units FROM ({unit_src}) u JOIN dpsense_groups dg USING ({order})"
            )
    units: np.ndarray | None = None
    if unit_src is not None:
        got = con.execute(unit_src).fetchnumpy()
        units = np.zeros(len(group_keys), dtype=np.int64)
        units[np.asarray(got["gid"], dtype=np.int64)] = np.asarray(got["units"], dtype=np.int64)
        con.execute("DROP TABLE dpsense_pairs")
    return summarise(source, group_keys, units, plan.column is not None)


def _histogram_sources(
    source: TableSource,
    plan: TablePlan,
    stage: str,
    types: dict[str, str],
    group_cols: list[str],
    keys: list[tuple[Any, ...]] | None,
) -> tuple[str, str | None]:
    """SQL for the bounded histogram, (group columns or gid, v, c), and with a privacy
    unit for each group's number of units, (group columns or gid, units)."""
    value = "v" if plan.column is not None else "0::DOUBLE"
    keyed = ", ".join(group_cols)
    if plan.unit is None:
        hist = f"SELECT {keyed}, {value} AS v, count(*)::BIGINT AS c FROM ({stage}) GROUP BY ALL"
        return hist, None
    by = plan.by
    public = group_cols == ["gid"] and bool(by)
    every_key = public and keys is not None and plan.max_groups >= len(keys)
    canon = None
    if by and not every_key:
        canon = (
            "gid" if public else ", ".join(canonical(f"g{i}", types[b]) for i, b in enumerate(by))
        )
    text_unit = text_unit_type(types[plan.unit])
    hist = bound_units(source.con, plan, stage, group_cols, canon, value, text_unit=text_unit)
    return hist, f"SELECT {keyed}, count(*)::BIGINT AS units FROM dpsense_pairs GROUP BY ALL"


def _number_groups(con: Any, gs: list[str], hist_src: str) -> list[tuple[Any, ...]]:
    """Number the groups ``hist_src`` finds in the order of their values (the table
    ``dpsense_groups``), write its histogram by group number (``dpsense_hist``) and
    return the groups' values in that order."""
    order = ", ".join(gs)
    con.execute(f"CREATE TEMP TABLE dpsense_pre AS {hist_src}")
    con.execute(
        f"CREATE TEMP TABLE dpsense_groups AS SELECT {order}, "
        f"(row_number() OVER (ORDER BY {order}) - 1)::BIGINT AS gid "
        f"FROM (SELECT DISTINCT {order} FROM dpsense_pre)"
    )
    con.execute(
        "CREATE TEMP TABLE dpsense_hist AS SELECT dg.gid, p.v, p.c FROM dpsense_pre p "
        f"JOIN dpsense_groups dg USING ({order})"
    )
    con.execute("DROP TABLE dpsense_pre")
    found = con.execute(f"SELECT {order} FROM dpsense_groups ORDER BY gid").fetchall()
    return [tuple(r) for r in found]


def load_keys(
    source: TableSource, plan: TablePlan, keys: list[tuple[Any, ...]], types: dict[str, str]
) -> None:
    """The public keys as a table typed like the by-columns (matched by value, not text;
    on a text column, a key is its text ``str(key)``: ``tables.key_types``)."""
    con = source.con
    columns: dict[str, np.ndarray] = {}
    for i, b in enumerate(plan.by):
        raw = [key[i] for key in keys]
        numbers = all(
            isinstance(v, int | float | np.number) and not isinstance(v, bool) for v in raw
        )
        if numbers and types[b] != "VARCHAR":
            columns[f"k{i}"] = np.asarray(
                raw,
                dtype=np.float64
                if any(isinstance(v, float | np.floating) for v in raw)
                else np.int64,
            )
        else:
            columns[f"k{i}"] = np.array([None if v is None else str(v) for v in raw], dtype=object)
    columns["gid"] = np.arange(len(keys), dtype=np.int64)
    con.register("dpsense_keys_obj", columns)
    casts = ", ".join(f"TRY_CAST(k{i} AS {types[b]}) AS g{i}" for i, b in enumerate(plan.by))
    con.execute(f"CREATE TEMP TABLE dpsense_keys AS SELECT {casts}, gid FROM dpsense_keys_obj")
    con.unregister("dpsense_keys_obj")
    gs = ", ".join(f"g{i}" for i in range(len(plan.by)))
    nulls = " OR ".join(f"g{i} IS NULL" for i in range(len(plan.by)))
    bad, distinct = con.execute(
        f"SELECT bool_or({nulls}), count(DISTINCT ({gs})) FROM dpsense_keys"
    ).fetchone() or (False, 0)
    if bad:
        raise keys_of_another_type(list(plan.by), [str(types[b]) for b in plan.by])
    if distinct != len(keys):
        raise keys_repeated()
