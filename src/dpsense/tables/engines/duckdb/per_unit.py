"""The per-unit aggregation on DuckDB: the derived table as the release's view ``src``
(the SQL of :func:`dpsense.tables.rows.per_unit.per_unit_sql` over the one-table join),
bound on no rows before the release reads it."""

from __future__ import annotations

from dataclasses import replace

from dpsense.errors import InputError, Schema
from dpsense.tables.engines.duckdb.joined import JoinedTables, open_joined
from dpsense.tables.rows.joins import join_sql
from dpsense.tables.rows.per_unit import PerUnitRows, check_numeric, per_unit_sql

__all__ = ["duckdb_per_unit"]


def duckdb_per_unit(joined: JoinedTables, rows: PerUnitRows) -> JoinedTables:
    """The derived table of the one-table join ``joined`` as the release's view ``src``:
    the columns it reads must have declared types (a CSV file's are inferred from the
    values), its values must be numbers (from the types), and its SQL is bound on no rows
    here, before anything is charged."""
    import duckdb

    read = [v.column for v in rows.values if v.column is not None]
    read += list(rows.filter_columns)
    inferred = sorted({c for c in read if c in joined.inferred_columns})
    if inferred:
        raise InputError(
            f"The per-person aggregation reads {', '.join(map(repr, inferred))} from a CSV "
            "file that does not declare its type; declare it, e.g. ",
            Schema(tuple((c, "TYPE") for c in inferred[:2])),
            " with TYPE 'int', 'float' or 'decimal(p,s)'.",
        )
    with open_joined(joined) as source:
        found = source.con.execute("DESCRIBE SELECT * FROM src").fetchall()
    check_numeric({str(r[0]): str(r[1]) for r in found}, rows.values, rows.label)
    sql = per_unit_sql(join_sql(joined.plan.relation), rows)
    made = frozenset(v.name for v in rows.values)
    derived = replace(joined, sql=sql, plan=replace(joined.plan, label=rows.label), derived=made)
    try:
        with open_joined(derived) as source:
            source.con.execute("SELECT * FROM src LIMIT 0").fetchall()
    except duckdb.Error as exc:
        raise InputError(
            f"The per-person aggregation could not be evaluated on {rows.label} "
            f"({type(exc).__name__}): check that WHERE compares columns with values of "
            "their declared types."
        ) from None
    return derived
