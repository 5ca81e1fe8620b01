"""The engines that touch rows: one interface, one implementation per engine.

Everything that reads a table's rows goes through an :class:`Engine`: DuckDB
(:mod:`dpsense.tables.engines.duckdb`; files, in-memory frames, DuckDB relations) and
Spark (:mod:`dpsense.tables.engines.spark`; PySpark DataFrames). The query layer
(``tables.grouped``, ``query.run``) is written once against this interface; which engine
runs is decided here, from the type of the input, and nowhere else.

An engine opens a source with its declared schema, filters rows with a total predicate,
checks and bounds each unit's contributions, counts units per group (for private partition
selection) and answers the summaries the methods read (``tables.rows.bounded``). It never
draws noise: every draw happens in Python, on what the engine hands over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from dpsense.tables.rows.bounded import BoundedTable
    from dpsense.tables.rows.casts import Cast
    from dpsense.tables.rows.joins import JoinInputs, JoinPlan
    from dpsense.tables.rows.per_unit import PerUnitRows
    from dpsense.tables.rows.plan import TablePlan
    from dpsense.tables.rows.unit_bounding import QueryRows

__all__ = ["Engine", "KeptRows", "engine_for", "engine_for_tables", "is_spark_frame"]


def is_spark_frame(data: Any) -> bool:
    """True for a PySpark DataFrame (classic or Spark Connect), without importing pyspark."""
    module = type(data).__module__
    return module.startswith("pyspark.sql") and type(data).__name__ == "DataFrame"


class KeptRows(Protocol):
    """A query's rows after its one check and its one contribution bounding, kept by the
    engine for every statistic of the query (``Engine.kept``)."""

    def unit_counts(self, by: tuple[str, ...], unit: str | None) -> list[tuple[Any, ...]]:
        """Each group present with its number of distinct units (rows without a unit), as
        ``(*group values, units)`` in the order of the group values."""
        ...

    def announce(self, needs: Sequence[tuple[TablePlan, float | None]]) -> None:
        """What every statistic reads from its first pass, as each statistic's plan and
        quantile level (speed only: one pass may serve them all; may do nothing)."""
        ...

    @property
    def shares_first_pass(self) -> bool:
        """True when :meth:`announce` is used (the needs are then worth computing)."""
        ...

    @property
    def source(self) -> Any:
        """The kept rows as a source the statistics' releases open."""
        ...

    def opened(self) -> AbstractContextManager[Any]:
        """A fresh source of the kept rows for one statistic's release."""
        ...


class Engine(Protocol):
    """What the query layer asks of an engine (module docstring)."""

    name: str
    declares_every_type: bool
    """True when every column's type is declared by the input (never inferred from values)."""

    def open(
        self, data: Any, needed: Sequence[str] | None, row_filter: Any
    ) -> AbstractContextManager[Any]:
        """The input opened as a source, reading at least ``needed`` (None: every column)."""
        ...

    def check_filter(self, source: Any, row_filter: Any, schema: Mapping[str, Cast]) -> None:
        """Refuse a filter whose binding could depend on the values (from public things)."""
        ...

    def apply_schema(self, source: Any, casts: Mapping[str, Cast]) -> None:
        """Cast the declared columns; a row whose value does not fit is dropped."""
        ...

    def filtered(self, source: Any, row_filter: Any) -> AbstractContextManager[None]:
        """Keep only the rows ``row_filter`` passes while the block runs."""
        ...

    def bound(
        self, source: Any, plan: TablePlan, keys: list[tuple[Any, ...]] | None
    ) -> BoundedTable:
        """Check, bound and clip one statistic's rows; its groups and their summaries."""
        ...

    def check_keys(self, source: Any, plan: TablePlan, keys: list[tuple[Any, ...]]) -> None:
        """Read public keys as the by-columns' types (an InputError when one does not fit)."""
        ...

    def add_presence(self, source: Any, names: Mapping[str, str]) -> None:
        """Add each ``names[column]``: 1 where the row holds a value in ``column``, else 0."""
        ...

    def present_rows(self, source: Any, name: str) -> Any:
        """The rows whose 0/1 column ``name`` is 1."""
        ...

    def kept(self, source: Any, rows: QueryRows) -> AbstractContextManager[KeptRows]:
        """A query's ``rows``: one check of every column it reads (missing and non-numeric
        values: an InputError naming the column, or dropped with ``nulls="drop"``), then
        with a privacy unit its one contribution bounding; kept while the block runs."""
        ...

    def join(self, inputs: JoinInputs) -> Any:
        """The input of a release that reads the join of ``inputs.tables`` as one table
        (opened by :meth:`open`): the join runs in the engine (docs/joins.md)."""
        ...

    def distinct_rows(
        self, plan: JoinPlan, tables: Mapping[str, Any], public: frozenset[str], sql: str
    ) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` (the plan's dialect) over the public ``tables``."""
        ...

    def per_unit(self, joined: Any, rows: PerUnitRows) -> Any:
        """The input of a release that reads one row per unit (per group) of ``joined``
        (what :meth:`join` gave for one table), aggregated as ``rows`` says, in the engine
        (docs/queries.md §7)."""
        ...


def engine_for_tables(tables: Any) -> Engine:
    """The engine of a join: Spark when a table is a Spark DataFrame, else DuckDB."""
    spark = [d for d in tables if is_spark_frame(d)]
    return engine_for(spark[0] if spark else None)


def engine_for(data: Any) -> Engine:
    """The engine that reads ``data`` (an input or an opened source)."""
    if is_spark_frame(data) or getattr(data, "frame", None) is not None:
        from dpsense.tables.engines.spark.engine import SPARK

        return SPARK
    from dpsense.tables.engines.duckdb.engine import DUCKDB

    return DUCKDB
