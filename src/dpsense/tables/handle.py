"""The typed table handle: a release's table with every column's type decided once.

The pipeline builds one :class:`TableHandle` from the caller's data and the request's
declarations (``pipeline.execute``, through ``query.steps.table_handle_of``) before any
row is read, and hands it down: the plan's casts, the private bounds step, the query's
release and the engine read a column's type here, and nowhere else decides one.

A column's type is

* the ``schema=`` argument's, when it names the column;
* else the container's own: a numpy or pandas dtype, a Polars or Arrow schema, a DuckDB
  relation's types, a Parquet file's schema (DuckDB's ``DESCRIBE``, which reads no row),
  a Spark DataFrame's schema, and for a join each column's own table's;
* else none (``None``): a CSV file or standard input, a Python list, a pandas ``object``
  column, whose type would be inferred from the values. Such a column is never typed by
  its values: a by-column or a privacy unit column among them is read as **text** (a
  ``Cast("text")`` added to the casts, ``tables.key_types``), other columns carry no
  resolution.

Nothing here reads a value: types come from the objects' schemas only (docs/tables.md §7,
docs/entry_points.md "Types"). Otherwise one person's value would decide how everyone
else's is read: ids "1" and "1.0" one person until someone's id "abc" made them two.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dpsense.data.in_memory import as_text
from dpsense.data.source import PARQUET_SUFFIXES, is_csv_path, open_table
from dpsense.data.sql_build import describe, star
from dpsense.data.sql_build import table as sql_table
from dpsense.tables.engines import Engine, engine_for, is_spark_frame
from dpsense.tables.rows.casts import Cast, ColumnType
from dpsense.tables.schema import container_type, spark_type, sql_type

__all__ = [
    "TableHandle",
    "container_types",
    "parquet_column_type",
    "table_handle",
    "undeclared_columns",
]


@dataclass(frozen=True)
class TableHandle:
    """A release's table: the data its engine opens, the engine, the casts it applies and
    each column's type (decided once, module docstring), its privacy unit and the
    public tables of a join."""

    data: Any
    """What the engine opens (a join already resolved to its engine's input; the
    columns read as text already the text of each value, ``data.in_memory.as_text``)."""
    engine: Engine
    casts: Mapping[str, Cast]
    """The ``schema=`` argument's casts and the text casts of the undeclared by-columns
    and unit column (module docstring): what the engine applies as it opens the table."""
    types: Mapping[str, ColumnType | None] = field(default_factory=dict)
    """Each column's type as its container declares it (None: inferred from the values,
    so not public)."""
    unit: str | None = None
    public_tables: frozenset[str] = frozenset()

    def declared(self, column: str) -> ColumnType | None:
        """The type of ``column`` a release may use: the ``schema=`` argument's when it
        names the column, else the container's (None when it would be inferred)."""
        if column in self.casts:
            return self.casts[column].declared
        return self.types.get(column)

    def undeclared(self, column: str) -> bool:
        """True when ``column``'s type would be inferred from the values (and no cast
        names it)."""
        return (
            column not in self.casts
            and not self.engine.declares_every_type
            and self.types.get(column) is None
        )

    def reading(self, data: Any) -> TableHandle:
        """The same table read from ``data`` (a copy of standard input)."""
        return replace(self, data=data)


def table_handle(
    data: Any,
    casts: Mapping[str, Cast] | None = None,
    *,
    keyed: Iterable[str] = (),
    keep: Iterable[str] = (),
    unit: str | None = None,
) -> TableHandle:
    """The handle of ``data`` (returned as it is when it is one): the engine that reads
    it, each column's type from the container, and the casts: ``casts`` (the ``schema=``
    argument) and a text cast of each ``keyed`` column (the by-columns and the privacy
    unit) whose type would be inferred from the values, except those in ``keep`` (the
    value columns and the ``where`` filter's: ``tables.key_types``)."""
    if isinstance(data, TableHandle):
        return data
    engine = engine_for(data)
    types = container_types(data)
    given = dict(casts or {})
    handle = TableHandle(data, engine, given, types, unit, _public_tables(data))
    kept = set(keep)
    implied = {c: Cast("text") for c in keyed if c not in kept and handle.undeclared(c)}
    casts = {**given, **implied}
    texts = [c for c, k in casts.items() if k.kind == "text"]
    # undeclared columns read as text: the text of each value alone, once for every opening
    return replace(handle, data=as_text(data, texts), casts=casts)


def container_types(data: Any) -> dict[str, ColumnType | None]:
    """Each column's type as the container ``data`` declares it (module docstring); a
    column missing from the result, or None, has a type inferred from the values."""
    if is_spark_frame(data):
        return {f.name: spark_type(f.dataType) for f in data.schema.fields}
    if isinstance(data, str | os.PathLike):
        return {} if is_csv_path(os.fspath(data)) else _described(data)
    if type(data).__module__.split(".")[0] == "duckdb":
        return {str(c): sql_type(str(t)) for c, t in zip(data.columns, data.types, strict=True)}
    if type(data).__name__ == "JoinedTables":
        return _joined_types(data)
    out: dict[str, ColumnType | None] = {}
    for column in _names(data):
        found = container_type(data, column)
        out[column] = None if found is None or found.name == "object" else found
    return out


def undeclared_columns(data: Any, columns: Iterable[str]) -> frozenset[str]:
    """The ``columns`` whose type the container ``data`` does not declare (a CSV file's,
    a pandas object column, a column of Python lists): the rule of :func:`table_handle`,
    for each table of a join (``query.join_form``)."""
    if engine_for(data).declares_every_type:
        return frozenset()
    if isinstance(data, str | os.PathLike) and not is_csv_path(os.fspath(data)):
        return frozenset()  # Parquet declares every column (no need to read its metadata)
    types = container_types(data)
    return frozenset(c for c in columns if types.get(c) is None)


def _described(path: Any) -> dict[str, ColumnType | None]:
    """A Parquet file's column types as DuckDB reads them (its metadata; no row read)."""
    with open_table(path) as source:
        rows = source.con.execute(describe(star(sql_table(source.view)))).fetchall()
    return {str(r[0]): sql_type(str(r[1])) for r in rows}


def _names(data: Any) -> list[str]:
    """The column names of an in-memory table as its engine reads them (one column of
    numbers is ``value`` unless its container names it)."""
    module = type(data).__module__.split(".")[0]
    kind = type(data).__name__
    if module == "pandas" and kind == "DataFrame":
        return [str(c) for c in data.columns]
    if module in ("pandas", "polars") and kind == "Series":
        return [str(data.name) if data.name not in (None, "") else "value"]
    if module == "polars":
        schema = data.collect_schema() if kind == "LazyFrame" else data.schema
        return [str(c) for c in schema]
    if module == "pyarrow" and hasattr(data, "schema"):
        return [str(c) for c in data.schema.names]
    if isinstance(data, Mapping):
        return [str(k) for k in data]
    return ["value"]


def _joined_types(joined: Any) -> dict[str, ColumnType | None]:
    """The types of a DuckDB join's columns: each its own table's (its cast, else its
    container's), none for a column read from a CSV file without a cast."""
    plan = joined.plan
    origin = {
        plan.unit: (plan.unit_table, plan.relation.unit[1]),
        **{c: (plan.alias_table[a], c) for c, a in plan.column_alias.items()},
    }
    inferred = joined.inferred_columns
    tables: dict[str, dict[str, ColumnType | None]] = {}
    out: dict[str, ColumnType | None] = {}
    for name, (table, column) in origin.items():
        cast = joined.casts.get(table, {}).get(column)
        if name in inferred:
            out[name] = None
        elif cast is not None:
            out[name] = cast.declared
        else:
            if table not in tables:
                tables[table] = container_types(joined.tables[table])
            out[name] = tables[table].get(column)
    for name in joined.derived:  # made by the view's SQL (a per-unit value): DOUBLE
        out[name] = sql_type("DOUBLE")
    return out


def _public_tables(data: Any) -> frozenset[str]:
    """The public tables of a join (none for one table)."""
    plan = getattr(data, "plan", None)
    if type(data).__name__ != "JoinedTables" or plan is None:
        return frozenset()
    return frozenset(plan.alias_table[a] for a in plan.public_aliases)


def parquet_column_type(path: Any, column: str | None) -> ColumnType | None:
    """The declared type of a Parquet file's column (the file's metadata; no row read), or
    None for other files, a missing column or several columns without ``column`` (the
    caller's reader reports those)."""
    if not isinstance(path, str | os.PathLike):
        return None
    if not os.fspath(path).lower().endswith(PARQUET_SUFFIXES) or not os.path.isfile(path):
        return None
    types = _described(path)
    if column is None and len(types) == 1:
        column = next(iter(types))
    return types.get(column) if column is not None else None
