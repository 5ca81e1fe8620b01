"""Several tables read as one in DuckDB: a view per table and ``src`` as their join.

:class:`JoinedTables` is what the DuckDB engine's ``join`` gives the one-table release
when a query joins tables: each table becomes a view of the release's own connection (a
file is read where it lies, a frame is scanned in place) and ``src`` is the join, so
DuckDB plans the join, the filter and the contribution bounding as one query
(docs/joins.md). Each table's declared columns (``schema=``) are cast in its own view,
before the join, as a one-table release casts them; the columns a join compares must have
comparable types, checked from the declared types before any row is read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from dpsense.data.source import (
    TableSource,
    as_text,
    connection,
    is_csv_path,
    path_view,
    scannable,
)
from dpsense.errors import Assign, InputError
from dpsense.tables.engines.duckdb.casts import cast_view_sql
from dpsense.tables.rows.casts import Cast
from dpsense.tables.rows.joins import (
    JoinPlan,
    comparable,
    join_sql,
    key_check_sql,
    shared_key,
)

__all__ = ["JoinedTables", "distinct_rows", "open_joined"]

Column = tuple[str, str]
"""(table name, column name)."""


@dataclass(frozen=True)
class JoinedTables:
    """The tables of a join, its plan and each table's declared column types."""

    plan: JoinPlan
    tables: Mapping[str, Any]
    """Table name -> its data (a path, a frame, an Arrow table, a DuckDB relation)."""
    casts: Mapping[str, Mapping[str, Cast]] = field(default_factory=dict)
    """Per table: its declared columns (``schema=``), cast in its own view before the join
    (a CSV file's read as its text first)."""
    sql: str = ""
    """The SQL of ``src`` (the plan's join unless given: the public keys' query)."""
    undeclared: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per table: its columns whose type the input does not declare (a CSV file's, a
    pandas object column's): their types are read from the values, so they are not
    public."""
    read_as_text: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Per table: its undeclared columns the join reads as text (``JoinInputs``)."""
    derived: frozenset[str] = frozenset()
    """Columns the view's own SQL makes (a per-unit aggregation's values, DOUBLE by that
    SQL's casts): their type is the SQL's, public whatever the values."""

    @property
    def label(self) -> str:
        return self.plan.label

    @property
    def inferred_columns(self) -> frozenset[str]:
        """The joined table's columns that come from a CSV file and are not declared in
        ``schema=``: their types are inferred from the values (not public)."""
        origin = {
            self.plan.unit: self.plan.unit_table,
            **{c: self.plan.alias_table[a] for c, a in self.plan.column_alias.items()},
        }
        return frozenset(
            c
            for c, t in origin.items()
            if c in self.undeclared.get(t, frozenset()) and c not in self.casts.get(t, {})
        )

    @property
    def text_columns(self) -> frozenset[str]:
        """The joined table's columns read as text because their table does not declare
        them (a compared or unit column of a CSV file): their type is not the data's."""
        origin = {
            self.plan.unit: self.plan.unit_table,
            **{c: self.plan.alias_table[a] for c, a in self.plan.column_alias.items()},
        }
        return frozenset(c for c, t in origin.items() if c in self.read_as_text.get(t, frozenset()))

    @property
    def declared(self) -> bool:
        """False when a column of the joined table has a type inferred from its values."""
        return not self.inferred_columns


def _is_csv(data: Any) -> bool:
    return isinstance(data, str | os.PathLike) and is_csv_path(os.fspath(data))


def _register(con: Any, view: str, data: Any, casts: Mapping[str, Cast]) -> None:
    """View ``view`` over one table of the join, its declared columns cast."""
    if isinstance(data, str | os.PathLike):
        reader = path_view(con, os.fspath(data), f"{view}_raw")
        if casts and reader is not None:
            # a CSV file's declared columns read as its own text, then cast (rows whose
            # value does not fit are dropped), as in a release of one CSV file
            text = dict.fromkeys(casts, "VARCHAR")
            con.execute(f"CREATE OR REPLACE TEMP VIEW {view}_raw AS SELECT * FROM {reader(text)}")
    else:
        texts = [c for c, k in casts.items() if k.kind == "text"]
        con.register(f"{view}_raw", scannable(as_text(data, texts)))
    if casts:
        con.execute(f"CREATE TEMP VIEW {view} AS {cast_view_sql(con, f'{view}_raw', casts)}")
    else:
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT * FROM {view}_raw")


@contextmanager
def open_joined(joined: JoinedTables) -> Iterator[TableSource]:
    """A private DuckDB connection with the join as view ``src`` (closed on exit)."""
    import duckdb

    con = connection()
    try:
        views = {}
        for view, table in joined.plan.tables:
            if table in joined.tables:
                _register(con, view, joined.tables[table], joined.casts.get(table, {}))
                views[table] = view
        compared = tuple(pair for pair in joined.plan.compared if all(t in views for t, _ in pair))
        types: dict[Column, str] = {}
        for pair in compared:
            for table, column in pair:
                row = con.execute(f'DESCRIBE SELECT "{column}" FROM {views[table]}').fetchone()
                types[(table, column)] = str(row[1])
        comparable(types, compared)
        if not joined.sql:
            check_keys(con, joined.plan)
        con.execute(f"CREATE TEMP VIEW src AS {joined.sql or join_sql(joined.plan.relation)}")
        columns = [d[0] for d in con.execute("SELECT * FROM src LIMIT 0").description]
        # a row filter may read neither a column typed by its values nor one read as text
        # for want of a type (engine.check_filter asks for its type)
        untyped = joined.inferred_columns | joined.text_columns
        source = TableSource(con, "src", columns, joined.label, declared_types=not untyped)
        source.inferred = untyped  # type: ignore[attr-defined]
        try:
            yield source
        except (duckdb.ConversionException, duckdb.InvalidInputException, duckdb.IOException):
            # a CSV file DuckDB could not read while the release reads it: its message
            # would quote the line
            raise InputError(
                f"Cannot read {joined.label}: a file holds a value that does not read as "
                "its column's type, or a malformed line; declare the column's type with ",
                Assign("schema"),
                " or clean the file.",
            ) from None
    finally:
        con.close()


def check_keys(con: Any, plan: JoinPlan) -> None:
    """The keys a path goes through must each belong to one unit (docs/joins.md §1)."""
    for check in plan.key_checks:
        if con.execute(key_check_sql(check)).fetchone() is not None:
            raise shared_key(check.table, check.key)


def distinct_rows(plan: JoinPlan, tables: Mapping[str, Any], sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` over some of the plan's tables (the public keys' query)."""
    with open_joined(JoinedTables(plan, tables, sql=sql)) as source:
        return [tuple(r) for r in source.con.execute("SELECT * FROM src").fetchall()]
