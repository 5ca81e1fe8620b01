"""One contribution bounding for every statistic of a query, in DuckDB.

A query reads several value columns. Bounding each statistic's column on its own would
keep different rows of a unit for different statistics (each engine pass keeps the rows
of smallest ``hash(key, unit, value)`` of *its* column), and cost one bounding pass per
statistic. Here a unit keeps the ``g`` groups of smallest ``hash(key_g, unit, group)``
and, in each, the ``m`` rows of smallest ``hash(key_r, unit, row)`` where the row is the
tuple of every column the query reads (canonical types, as the engine hashes them): the
kept rows depend only on the unit's own rows and the secret keys, never on row order or
format, and are the same rows for every statistic. The result is a temporary table with
the query's columns under their own names; every statistic then runs the engine on it,
whose own bounding keeps it whole (a unit already has at most g groups and m rows in
each), so a statistic's release equals a one-statistic release on the bounded rows.
"""

from __future__ import annotations

from typing import Any

from dpsense.data.source import quote
from dpsense.tables.engines.duckdb.bound import TablePlan, load_keys
from dpsense.tables.engines.duckdb.rows_sql import is_nan
from dpsense.tables.rows.unit_bounding import (
    UnitBounding,
    canonical,
    keyed_hash,
    raise_on_query_flags,
    text_unit_type,
)

__all__ = ["BOUNDED", "bound_rows", "checked_rows"]

BOUNDED = "dpsense_query_rows"
"""The temporary table (or view, without a privacy unit) of the query's kept rows."""

_FLOATS = frozenset({"FLOAT", "DOUBLE"})
_UNIT_BACK = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}
    | {"FLOAT", "DOUBLE", "VARCHAR"}
)
"""Unit types whose canonical value (``unit_bounding.canonical``) casts back exactly."""
_STAGE = "dpsense_stage"


def _types(source: Any) -> dict[str, str]:
    rows = source.con.execute(f"DESCRIBE SELECT * FROM {source.view}").fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def checked_rows(
    source: Any, values: tuple[str, ...], by: tuple[str, ...], unit: str | None, nulls: str
) -> str:
    """The SQL condition that keeps the rows every statistic uses, after one check of
    all the query's columns (non-numeric entries of a value column, missing values in any
    used column: an InputError, or dropped with ``nulls="drop"``, the same rows for every
    statistic). Messages name columns, never values or counts."""
    types = _types(source)
    nonnumeric = [
        f"bool_or({quote(v)} IS NOT NULL AND TRY_CAST({quote(v)} AS DOUBLE) IS NULL)"
        for v in values
    ]
    value_missing = [
        f"({quote(v)} IS NULL OR {is_nan(f'TRY_CAST({quote(v)} AS DOUBLE)')})" for v in values
    ]
    key_missing = []
    for name in (*by, *([unit] if unit else [])):
        nan = f" OR {is_nan(quote(name))}" if types.get(name) in _FLOATS else ""
        key_missing.append(f"({quote(name)} IS NULL{nan})")
    missing = [*value_missing, *key_missing]
    if not missing:
        return "TRUE"
    tests = [*nonnumeric, *(f"bool_or({m})" for m in value_missing)]
    tests.append(f"bool_or({' OR '.join(key_missing) or 'FALSE'})")
    row = source.con.execute(f"SELECT {', '.join(tests)} FROM {source.view}").fetchone()
    flags = [bool(f) for f in row] if row is not None else [False] * len(tests)
    k = len(values)
    drop = raise_on_query_flags(values, by, unit, nulls, flags[:k], flags[k : 2 * k], flags[-1])
    return f"NOT ({' OR '.join(missing)})" if drop else "TRUE"


def bound_rows(source: Any, bounding: UnitBounding, *, keep: str) -> None:
    """Create the temporary table :data:`BOUNDED` of the rows a unit keeps (see the
    module's docstring) in ``source``'s connection: the ``values``, ``by`` and ``unit``
    columns of the rows that pass ``keep`` (and, with public ``keys``, whose group is one
    of them: groups are chosen among the public ones, as in the engine)."""
    values, by, unit, max_rows, max_groups, keys, salt = bounding.parts()
    con = source.con
    types = _types(source)
    # the unit column is carried as its canonical ``u`` alone when ``u`` gives it back
    # exactly: the rows' payload in the top-m aggregate is then the values only
    # (DuckDB's top-m is several times faster on one double than on a struct)
    own_unit = unit not in (*values, *by) and types[unit] in _UNIT_BACK
    names = list(dict.fromkeys((*values, *by, *([] if own_unit else [unit]))))
    alias = {name: f"a{i}" for i, name in enumerate(names)}
    canon_u = canonical(quote(unit), types[unit])
    # no column besides the unit (a query of counts only, no by): u alone
    cols = ", ".join([*(f"{quote(n)} AS {alias[n]}" for n in names), f"{canon_u} AS u"])
    stage = f"SELECT {cols} FROM {source.view} WHERE {keep}"
    group = [alias[b] for b in by]
    if keys is not None and by:
        load_keys(source, TablePlan(None, by, unit, 1, 1, "error", None, None, (0, 0)), keys, types)
        on = " AND ".join(f"s.{alias[b]} = k.g{i}" for i, b in enumerate(by))
        stage = f"SELECT s.* FROM ({stage}) s SEMI JOIN dpsense_keys k ON {on}"
    salt_g, salt_r = salt
    row_cols = [canonical(alias[v], types[v]) for v in values] or ["0"]
    text_unit = text_unit_type(types[unit])
    hr = keyed_hash(salt_r, ", ".join(row_cols), text_unit=text_unit)
    every_key = keys is not None and max_groups >= len(keys)
    if by and not every_key:
        hg = keyed_hash(
            salt_g, ", ".join(canonical(alias[b], types[b]) for b in by), text_unit=text_unit
        )
        kept = _kept_groups(group, hg, int(max_groups))
    else:
        kept = f"SELECT * FROM {_STAGE}"
    part = ", ".join(["u", *group])
    rows = (
        f"SELECT * FROM ({kept}) "
        f"QUALIFY row_number() OVER (PARTITION BY {part} ORDER BY {hr}) <= {int(max_rows)}"
    )
    back = [f"{alias[n]} AS {quote(n)}" for n in names]
    if own_unit:
        back.append(f"CAST(u AS {types[unit]}) AS {quote(unit)}")
    # the staged rows (a join, say) are one CTE read twice: DuckDB computes them once
    # for the groups' choice and the rows' (the same rows either way)
    con.execute(
        f"CREATE TEMP TABLE {BOUNDED} AS WITH {_STAGE} AS ({stage}) "
        f"SELECT {', '.join(back)} FROM ({rows})"
    )
    con.execute("DROP TABLE IF EXISTS dpsense_keys")


def _kept_groups(group: list[str], hg: str, max_groups: int) -> str:
    """The staged rows of the groups each unit keeps: its ``max_groups`` groups of least
    keyed hash ``hg`` (an arg-min for one group)."""
    keyed = ", ".join(group)
    if len(group) == 1:
        one, top = group[0], f"unnest(min_by({group[0]}, hg, {max_groups})) AS {group[0]}"
    else:
        struct = "{" + ", ".join(f"'{c}': {c}" for c in group) + "}"
        one = struct
        top = f"unnest(min_by({struct}, hg, {max_groups}), recursive := true)"
    if max_groups == 1:
        # one group per unit: an arg-min over the unit's rows (no distinct pairs)
        best = f"arg_min({one}, {hg})"
        pick = f"{best} AS {group[0]}" if len(group) == 1 else f"unnest({best})"
        chosen = f"SELECT u, {pick} FROM {_STAGE} GROUP BY u"
    else:
        pairs = f"SELECT DISTINCT u, {keyed}, {hg} AS hg FROM {_STAGE}"
        chosen = f"SELECT u, {top} FROM ({pairs}) GROUP BY u"
    return f"SELECT s.* FROM {_STAGE} s SEMI JOIN ({chosen}) c USING (u, {keyed})"
