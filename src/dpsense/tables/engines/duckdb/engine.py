"""The DuckDB engine (``tables.engines.Engine``): files, in-memory frames and DuckDB
relations, read in an embedded DuckDB connection."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Final

from dpsense.data.source import TableSource, open_table, quote
from dpsense.errors import undeclared_filter_columns
from dpsense.tables.engines.duckdb.bound import bound_table, load_keys
from dpsense.tables.engines.duckdb.casts import apply_duckdb_schema
from dpsense.tables.engines.duckdb.held_scan import ScanNeed, announce
from dpsense.tables.engines.duckdb.joined import JoinedTables, distinct_rows, open_joined
from dpsense.tables.engines.duckdb.per_unit import duckdb_per_unit
from dpsense.tables.engines.duckdb.query_rows import BOUNDED, bound_rows, checked_rows
from dpsense.tables.engines.duckdb.rows_sql import is_nan
from dpsense.tables.rows.bounded import BoundedTable
from dpsense.tables.rows.casts import Cast
from dpsense.tables.rows.joins import JoinInputs, JoinPlan
from dpsense.tables.rows.per_unit import PerUnitRows
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.rows.unit_bounding import QueryRows

__all__ = ["DUCKDB", "DuckDBEngine"]

_FLOATS: Final = frozenset({"FLOAT", "DOUBLE", "REAL"})


def _types(source: Any) -> dict[str, str]:
    described = source.con.execute(f"DESCRIBE SELECT * FROM {source.view}").fetchall()
    return {str(r[0]): str(r[1]) for r in described}


class DuckDBEngine:
    """Every input that is not a Spark DataFrame (module docstring)."""

    name = "duckdb"
    declares_every_type = False
    """A CSV file's column types are inferred from its values."""

    def open(
        self, data: Any, needed: Sequence[str] | None, row_filter: Any
    ) -> AbstractContextManager[TableSource]:
        if isinstance(data, JoinedTables):
            return open_joined(data)
        return open_table(data, needed)

    def check_filter(self, source: Any, row_filter: Any, schema: Mapping[str, Cast]) -> None:
        """On a CSV file (types inferred from the values, so not public), every column a
        row filter reads must have a declared type: otherwise whether the filter binds
        would depend on the values. Decided from the source's kind, the filter's text and
        ``schema``."""
        if getattr(source, "declared_types", True):
            return
        inferred = getattr(source, "inferred", None)  # a join: the columns from CSV files
        undeclared = [
            c for c in row_filter.columns if c not in schema and (inferred is None or c in inferred)
        ]
        if undeclared:
            raise undeclared_filter_columns(
                undeclared, f"{source.label}, whose column types are inferred from its values"
            )

    def apply_schema(self, source: Any, casts: Mapping[str, Cast]) -> None:
        apply_duckdb_schema(source, casts)

    @contextmanager
    def filtered(self, source: Any, row_filter: Any) -> Iterator[None]:
        import duckdb

        row_filter.duckdb_view(source)
        try:
            yield
        except duckdb.Error as exc:
            # a total predicate cannot fail on a value; DuckDB's message could quote one
            raise row_filter.failed(type(exc).__name__) from None

    def bound(
        self, source: Any, plan: TablePlan, keys: list[tuple[Any, ...]] | None
    ) -> BoundedTable:
        return bound_table(source, plan, keys)

    def check_keys(self, source: Any, plan: TablePlan, keys: list[tuple[Any, ...]]) -> None:
        load_keys(source, plan, keys, _types(source))
        source.con.execute("DROP TABLE IF EXISTS dpsense_keys")

    def add_presence(self, source: Any, names: Mapping[str, str]) -> None:
        types = _types(source)
        parts = []
        for column, name in names.items():
            sql = f"{quote(column)} IS NOT NULL"
            if types.get(column) in _FLOATS:
                sql += f" AND NOT {is_nan(quote(column))}"
            parts.append(f"COALESCE(({sql}), FALSE)::BIGINT AS {quote(name)}")
        view = "dpsense_presence"
        source.con.execute(
            f"CREATE TEMP VIEW {view} AS SELECT *, {', '.join(parts)} FROM {source.view}"
        )
        source.view = view
        source.columns = [*source.columns, *names.values()]

    def present_rows(self, source: Any, name: str) -> TableSource:
        view = f"dpsense_rows_{name}"
        source.con.execute(
            f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM {source.view} "
            f"WHERE {quote(name)} = 1"
        )
        return TableSource(
            source.con, view, source.columns, source.label, declared_types=source.declared_types
        )

    def join(self, inputs: JoinInputs) -> JoinedTables:
        return JoinedTables(
            inputs.plan,
            inputs.tables,
            inputs.casts,
            undeclared=inputs.undeclared,
            read_as_text=inputs.read_as_text,
        )

    def per_unit(self, joined: Any, rows: PerUnitRows) -> JoinedTables:
        return duckdb_per_unit(joined, rows)

    def distinct_rows(
        self, plan: JoinPlan, tables: Mapping[str, Any], public: frozenset[str], sql: str
    ) -> list[tuple[Any, ...]]:
        return distinct_rows(plan, tables, sql)

    @contextmanager
    def kept(self, source: Any, rows: QueryRows) -> Iterator[_Kept]:
        # with every row a unit and missing values an error, each statistic's first pass
        # checks its columns (one pass shared by all, held_scan): the same errors, without
        # a pass of their own
        skip = rows.unit is None and rows.nulls == "error"
        keep = "TRUE" if skip else checked_rows(source, rows.values, rows.by, rows.unit, rows.nulls)
        if rows.bounding is not None:
            bound_rows(source, rows.bounding, keep=keep)
        else:
            source.con.execute(
                f"CREATE TEMP VIEW {BOUNDED} AS SELECT * FROM {source.view} WHERE {keep}"
            )
        yield _Kept(
            TableSource(
                source.con,
                BOUNDED,
                list(source.columns),
                source.label,
                declared_types=source.declared_types,
            )
        )


class _Kept:
    """A query's kept rows in DuckDB: a temporary table (or view) in the source's
    connection that every statistic reads in turn."""

    shares_first_pass = True

    def __init__(self, rows: TableSource) -> None:
        self.source = rows

    def unit_counts(self, by: tuple[str, ...], unit: str | None) -> list[tuple[Any, ...]]:
        cols = ", ".join(quote(b) for b in by)
        units = f"count(DISTINCT ({quote(unit)}))" if unit is not None else "count(*)"
        got = self.source.con.execute(
            f"SELECT {cols}, {units}::BIGINT FROM {BOUNDED} GROUP BY ALL ORDER BY {cols}"
        ).fetchall()
        return [tuple(r) for r in got]

    def announce(self, needs: Sequence[tuple[TablePlan, float | None]]) -> None:
        announce(self.source, [ScanNeed.of(plan, level) for plan, level in needs])

    @contextmanager
    def opened(self) -> Iterator[TableSource]:
        """The kept rows for one statistic; the temporary tables and views its engine pass
        creates are dropped after it, so the next statistic runs on the same rows."""
        con = self.source.con
        before = {n for n, _ in _temp_objects(con, set())}
        try:
            yield self.source
        finally:
            for name, kind in _temp_objects(con, before):
                con.execute(f"DROP {kind} IF EXISTS {quote(name)}")


def _temp_objects(con: Any, before: set[str]) -> list[tuple[str, str]]:
    rows = con.execute(
        "SELECT table_name, 'TABLE' FROM duckdb_tables() WHERE temporary "
        "UNION ALL SELECT view_name, 'VIEW' FROM duckdb_views() WHERE temporary AND NOT internal"
    ).fetchall()
    return [(str(n), str(k)) for n, k in rows if str(n) not in before]


DUCKDB: Final = DuckDBEngine()
