"""The Spark engine (``tables.engines.Engine``): PySpark DataFrames. Spark does everything
that touches rows; held groups' summaries reach an embedded DuckDB connection and the
noise is drawn in Python. PySpark is imported on first use, never at import."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Final

from dpsense.tables.engines.spark.casts import apply_spark_schema
from dpsense.tables.engines.spark.frame import (
    SparkSource,
    _keys_frame,
    bound_spark_table,
    open_spark,
)
from dpsense.tables.engines.spark.joined import spark_distinct_rows, spark_join
from dpsense.tables.engines.spark.per_unit import spark_per_unit
from dpsense.tables.engines.spark.query_rows import spark_bound_rows, spark_checked_rows
from dpsense.tables.engines.spark.workers import worker_errors
from dpsense.tables.rows.bounded import BoundedTable
from dpsense.tables.rows.casts import Cast
from dpsense.tables.rows.joins import JoinInputs, JoinPlan
from dpsense.tables.rows.per_unit import PerUnitRows
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.rows.unit_bounding import QueryRows

__all__ = ["SPARK", "SparkEngine"]


class SparkEngine:
    """PySpark DataFrames (module docstring)."""

    name = "spark"
    declares_every_type = True
    """A DataFrame's schema declares every column's type."""

    @contextmanager
    def open(
        self, data: Any, needed: Sequence[str] | None, row_filter: Any
    ) -> Iterator[SparkSource]:
        # the filter is analysed on the input frame (ANSI off: no value can make it raise)
        frame = row_filter.spark_frame(data) if row_filter is not None else data
        with open_spark(frame) as source:
            yield source

    def check_filter(self, source: Any, row_filter: Any, schema: Mapping[str, Cast]) -> None:
        """A DataFrame's column types are declared: a filter binds from them alone."""

    def apply_schema(self, source: Any, casts: Mapping[str, Cast]) -> None:
        apply_spark_schema(source, casts)

    def filtered(self, source: Any, row_filter: Any) -> AbstractContextManager[None]:
        # the predicate was applied when the frame was opened; computed columns read the
        # cast columns, so they are added here
        row_filter.spark_computed(source)
        return nullcontext()

    def bound(
        self, source: Any, plan: TablePlan, keys: list[tuple[Any, ...]] | None
    ) -> BoundedTable:
        return bound_spark_table(source, plan, keys)

    def check_keys(self, source: Any, plan: TablePlan, keys: list[tuple[Any, ...]]) -> None:
        _keys_frame(source, plan, keys)

    def add_presence(self, source: Any, names: Mapping[str, str]) -> None:
        from pyspark.sql import functions as sf
        from pyspark.sql import types as st

        exprs = {}
        for column, name in names.items():
            test = sf.col(column).isNotNull()
            if isinstance(source.types[column], st.FloatType | st.DoubleType):
                test = test & ~sf.isnan(sf.col(column))
            exprs[name] = sf.when(test, sf.lit(1)).otherwise(sf.lit(0)).cast("long")
        source.frame = source.frame.withColumns(exprs)
        source.columns = list(source.frame.columns)
        source.types = {f.name: f.dataType for f in source.frame.schema.fields}

    def present_rows(self, source: Any, name: str) -> Any:
        from pyspark.sql import functions as sf

        source.frame = source.frame.where(sf.col(name) == 1)  # each statistic opens its own
        return source

    def join(self, inputs: JoinInputs) -> Any:
        # each table's declared columns are cast in its own frame, before the join (and
        # again on the joined table, as on DuckDB)
        return spark_join(inputs)

    def per_unit(self, joined: Any, rows: PerUnitRows) -> Any:
        return spark_per_unit(joined, rows)

    def distinct_rows(
        self, plan: JoinPlan, tables: Mapping[str, Any], public: frozenset[str], sql: str
    ) -> list[tuple[Any, ...]]:
        return spark_distinct_rows(plan, tables, public, sql)

    @contextmanager
    def kept(self, source: Any, rows: QueryRows) -> Iterator[_Kept]:
        from pyspark import StorageLevel

        frame = spark_checked_rows(source, rows.values, rows.by, rows.unit, rows.nulls)
        if rows.bounding is not None:
            frame = spark_bound_rows(source, frame, rows.bounding)
        # every statistic reads the bounded rows: hashed and ranked once
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            with worker_errors(rows.unit is not None):
                yield _Kept(frame)
        finally:
            frame.unpersist()


class _Kept:
    """A query's kept rows in Spark: one persisted DataFrame every statistic opens."""

    shares_first_pass = False

    def __init__(self, frame: Any) -> None:
        self.frame = frame

    @property
    def source(self) -> Any:
        return self.frame

    def unit_counts(self, by: tuple[str, ...], unit: str | None) -> list[tuple[Any, ...]]:
        """In the order of the group values, as DuckDB's ORDER BY gives them to the same
        draws."""
        from pyspark.sql import functions as sf

        units = sf.count_distinct(sf.col(unit)) if unit is not None else sf.count(sf.lit(1))
        got = self.frame.groupBy(*by).agg(units.alias("dpsense_units")).orderBy(*by).collect()
        return [tuple(r) for r in got]

    def announce(self, needs: Sequence[tuple[TablePlan, float | None]]) -> None:
        """Spark's first pass is per statistic (nothing to share)."""

    def opened(self) -> AbstractContextManager[SparkSource]:
        return open_spark(self.frame)


SPARK: Final = SparkEngine()
