"""The engine's share of a table release, in DuckDB SQL.

Everything that touches rows runs in DuckDB: the checks for missing and non-numeric
values, dropping nulls, keeping public keys, contribution bounding by a keyed hash,
clipping, per-group unit counts, and ordering each group's values. Python receives the
distinct groups with their unit counts (for private partition selection) and then each
group's clipped values in batches of bounded size, never the whole table.

Contribution bounding (docs/tables.md §2): a unit keeps the ``g`` groups with the smallest
``hash(key, group)`` and, in each, the ``m`` rows with the smallest ``hash(key, unit,
value)``. The choice depends only on the unit's own rows and a secret key (fresh per
release, from the release's random source), never on row order, so the bounded table is
the same multiset whatever the format or order of the input.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from dpsense.errors import InputError
from dpsense.tables.source import TableSource, quote

__all__ = ["BoundedTable", "TablePlan", "bound_table"]

_BATCH_ROWS: Final = 4_000_000
"""Largest number of values fetched into Python at once (32 MB of doubles)."""


@dataclass(frozen=True)
class TablePlan:
    """What to read from the table and how to bound it (all public)."""

    column: str | None
    by: tuple[str, ...]
    unit: str | None
    max_rows: int
    max_groups: int
    nulls: str
    lower: float | None
    upper: float | None
    salt: tuple[int, int]


def _text(expr: str) -> str:
    return f"CAST({expr} AS VARCHAR)"


def _check(source: TableSource, plan: TablePlan) -> str:
    """Raise on bad values; return the WHERE clause that drops nulls (or 'TRUE')."""
    con = source.con
    checks: list[str] = []
    null_tests: list[str] = []
    if plan.column is not None:
        v = quote(plan.column)
        num = f"TRY_CAST({v} AS DOUBLE)"
        checks += [
            f"bool_or({v} IS NOT NULL AND {num} IS NULL)",
            f"bool_or(isinf({num}))",
        ]
        null_tests.append(f"({v} IS NULL OR isnan({num}))")
    for name in (*plan.by, *([plan.unit] if plan.unit else [])):
        null_tests.append(f"{quote(name)} IS NULL")
    if not checks and not null_tests:
        return "TRUE"
    any_null = " OR ".join(null_tests) if null_tests else "FALSE"
    row = con.execute(
        f"SELECT {', '.join([*checks, f'bool_or({any_null})'])} FROM {source.view}"
    ).fetchone()
    flags = [bool(f) for f in row] if row is not None else []
    if plan.column is not None:
        if flags[0]:
            raise InputError(
                f"The column {plan.column!r} must be numeric, but some entries are not "
                "numbers. Clean those entries or choose a numeric column."
            )
        if flags[1]:
            raise InputError(
                f"The column {plan.column!r} contains infinite entries. Drop or clip them "
                "before releasing."
            )
    if flags and flags[-1]:
        if plan.nulls != "drop":
            used = ", ".join(repr(c) for c in (plan.column, *plan.by, plan.unit) if c is not None)
            raise InputError(
                f"The columns this release uses ({used}) contain missing values (null or "
                "NaN). Pass nulls='drop' (--nulls drop) to drop those rows, or clean them."
            )
        return f"NOT ({any_null})"
    return "TRUE"


@dataclass
class BoundedTable:
    """The bounded table inside DuckDB, with its groups."""

    source: TableSource
    keys: list[tuple[Any, ...]]
    """Each group's by-values (native types), in group-id order."""
    units: np.ndarray
    """Each group's number of distinct units after bounding (non-private: never publish)."""
    rows: np.ndarray
    """Each group's number of rows after bounding (non-private)."""
    has_values: bool

    def values(self, gids: Sequence[int]) -> Iterator[tuple[int, np.ndarray]]:
        """(gid, sorted clipped values) for each gid in increasing order, in batches."""
        order = sorted(gids)
        i = 0
        con = self.source.con
        while i < len(order):
            j, total = i, 0
            while j < len(order) and (j == i or total + self.rows[order[j]] <= _BATCH_ROWS):
                total += int(self.rows[order[j]])
                j += 1
            chunk = order[i:j]
            if not self.has_values:
                for gid in chunk:
                    yield gid, np.zeros(int(self.rows[gid]))
            else:
                lo, hi = chunk[0], chunk[-1]
                got = con.execute(
                    "SELECT gid, v FROM dpsense_bounded WHERE gid BETWEEN ? AND ? ORDER BY gid, v",
                    [lo, hi],
                ).fetchnumpy()
                gid_col = np.asarray(got["gid"], dtype=np.int64)
                vals = np.asarray(got["v"], dtype=np.float64)
                for gid in chunk:
                    a = int(np.searchsorted(gid_col, gid, side="left"))
                    b = int(np.searchsorted(gid_col, gid, side="right"))
                    yield gid, vals[a:b].copy()
            i = j


def bound_table(
    source: TableSource,
    plan: TablePlan,
    keys: list[tuple[Any, ...]] | None,
) -> BoundedTable:
    """Check, filter, bound and clip the table in DuckDB; return its groups.

    ``keys`` are public keys (each a tuple of by-values), or None for every group present
    after bounding (private selection happens in Python on the unit counts).
    """
    con = source.con
    where = _check(source, plan)
    by = plan.by
    gtext = [_text(quote(b)) for b in by]
    cols = []
    if plan.column is not None:
        num = f"TRY_CAST({quote(plan.column)} AS DOUBLE)"
        if plan.lower is not None and plan.upper is not None:
            num = f"greatest(least({num}, {plan.upper!r}::DOUBLE), {plan.lower!r}::DOUBLE)"
        cols.append(f"{num} AS v")
    for i, b in enumerate(by):
        cols.append(f"{quote(b)} AS g{i}")
        cols.append(f"{gtext[i]} AS k{i}")
    if plan.unit is not None:
        cols.append(f"{_text(quote(plan.unit))} AS u")
    if not cols:
        cols.append("1 AS one")
    gk = [f"k{i}" for i in range(len(by))]
    stage = f"SELECT {', '.join(cols)} FROM {source.view} WHERE {where}"
    if keys is not None and by:
        con.execute(
            "CREATE TEMP TABLE dpsense_keys ("
            + ", ".join([f"k{i} VARCHAR" for i in range(len(by))] + ["gid BIGINT"])
            + ")"
        )
        con.executemany(
            f"INSERT INTO dpsense_keys VALUES ({', '.join(['?'] * (len(by) + 1))})",
            [[*(_key_text(v) for v in key), gid] for gid, key in enumerate(keys)],
        )
        stage = f"SELECT s.*, kt.gid FROM ({stage}) s JOIN dpsense_keys kt USING ({', '.join(gk)})"
    salt_g, salt_r = plan.salt
    if plan.unit is not None:
        if by and plan.max_groups >= 1:
            stage = (
                f"SELECT * FROM (SELECT *, dense_rank() OVER (PARTITION BY u ORDER BY "
                f"hash({salt_g}, {', '.join(gk)}), {', '.join(gk)}) AS grank FROM ({stage})) "
                f"WHERE grank <= {int(plan.max_groups)}"
            )
        value_key = "v" if plan.column is not None else "0"
        part = ", ".join(["u", *gk])
        stage = (
            f"SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY {part} ORDER BY "
            f"hash({salt_r}, u, {value_key}), {value_key}) AS rrank FROM ({stage})) "
            f"WHERE rrank <= {int(plan.max_rows)}"
        )
    con.execute(f"CREATE TEMP TABLE dpsense_rows AS {stage}")
    unit_count = "count(DISTINCT u)" if plan.unit is not None else "count(*)"
    if keys is not None and by:
        found = con.execute(
            f"SELECT gid, {unit_count}, count(*) FROM dpsense_rows GROUP BY gid"
        ).fetchnumpy()
        units = np.zeros(len(keys), dtype=np.int64)
        rows = np.zeros(len(keys), dtype=np.int64)
        gids = np.asarray(found["gid"], dtype=np.int64)
        units[gids] = np.asarray(found[list(found)[1]], dtype=np.int64)
        rows[gids] = np.asarray(found[list(found)[2]], dtype=np.int64)
        group_keys = list(keys)
        gid_expr = "gid"
    elif by:
        native = ", ".join(f"any_value(g{i})" for i in range(len(by)))
        found_rows = con.execute(
            f"SELECT {', '.join(gk)}, {native}, {unit_count}, count(*) FROM dpsense_rows "
            f"GROUP BY {', '.join(gk)} ORDER BY {', '.join(gk)}"
        ).fetchall()
        con.execute(
            "CREATE TEMP TABLE dpsense_groups ("
            + ", ".join([f"k{i} VARCHAR" for i in range(len(by))] + ["gid BIGINT"])
            + ")"
        )
        con.executemany(
            f"INSERT INTO dpsense_groups VALUES ({', '.join(['?'] * (len(by) + 1))})",
            [[*r[: len(by)], gid] for gid, r in enumerate(found_rows)],
        )
        group_keys = [tuple(r[len(by) : 2 * len(by)]) for r in found_rows]
        units = np.array([r[2 * len(by)] for r in found_rows], dtype=np.int64)
        rows = np.array([r[2 * len(by) + 1] for r in found_rows], dtype=np.int64)
        gid_expr = "dpsense_groups.gid"
    else:
        row = con.execute(f"SELECT {unit_count}, count(*) FROM dpsense_rows").fetchone()
        assert row is not None
        group_keys = [()]
        units = np.array([row[0]], dtype=np.int64)
        rows = np.array([row[1]], dtype=np.int64)
        gid_expr = "0"
    if plan.column is not None:
        join = f" JOIN dpsense_groups USING ({', '.join(gk)})" if by and (keys is None) else ""
        con.execute(
            f"CREATE TEMP TABLE dpsense_bounded AS SELECT {gid_expr} AS gid, v "
            f"FROM dpsense_rows{join} ORDER BY gid, v"
        )
    con.execute("DROP TABLE dpsense_rows")
    return BoundedTable(source, group_keys, units, rows, plan.column is not None)


def _key_text(value: Any) -> str | None:
    """A key value as DuckDB's CAST(... AS VARCHAR) spells it, for matching."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        f = float(value)
        return repr(f) if not f.is_integer() else f"{f:.1f}"
    if isinstance(value, np.integer):
        return str(int(value))
    return str(value)
