"""The Spark engine: the same bounding and per-group summaries on a PySpark DataFrame.

Spark does everything that touches rows, with the DataFrame API: the checks for missing
and non-numeric values, dropping nulls, keeping public keys, contribution bounding by a
keyed hash, clipping, and each group's histogram of clipped values (distinct value and
count, so tied data collapses) with its sizes and number of units. The driver receives
one row per group; small groups' histograms are streamed, one partition at a time, into a
temporary DuckDB table and rebuilt exactly as for every other input
(``engine.BoundedTable``); large groups stay in Spark, which answers for the window of
order statistics or the exact sums a release needs (``spark_groups``). With every row a
unit, public keys or no grouping, and a release that reads held groups, no histogram of
the large groups is built: their rows stay in Spark (``spark_held``). No noise is drawn
in Spark.

Contribution bounding follows the same rule as the DuckDB engine (docs/tables.md §2): a
unit keeps the ``g`` groups of smallest keyed hash of (unit, group) and, in each, the ``m``
rows of smallest keyed hash of (unit, value). The hash is DuckDB's own
(``engine.keyed_hash``), evaluated by DuckDB on Arrow batches in the executors, so both
engines keep the same rows and a release equals pandas' for the same seed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import numpy as np

from dpsense.data.source import TableSource, connection
from dpsense.errors import InputError, keys_of_another_type, keys_repeated, missing_column
from dpsense.tables.engines.spark import groups as spark_groups
from dpsense.tables.engines.spark import held as spark_held
from dpsense.tables.engines.spark import long_hash as spark_hash
from dpsense.tables.engines.spark.groups import load_histogram
from dpsense.tables.engines.spark.pass_cells import BucketCells, bucket_column, cell_bounds
from dpsense.tables.engines.spark.workers import _with_keyed_hash, worker_errors
from dpsense.tables.rows.bounded import BoundedTable
from dpsense.tables.rows.checks import raise_on_flags
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.rows.unit_bounding import keyed_hash

__all__ = ["SparkSource", "bound_spark_table", "open_spark"]


class SparkSource:
    """A PySpark DataFrame and its column names (the counterpart of ``TableSource``)."""

    def __init__(self, frame: Any, con: Any) -> None:
        self.frame = frame
        self.con = con
        """A private DuckDB cursor that receives the bounded histogram."""
        self.columns = list(frame.columns)
        self.label = "the Spark DataFrame"
        self.types = {f.name: f.dataType for f in frame.schema.fields}
        self.on_close: list[Any] = []
        """Called when the release is over (unpersisting what large groups kept)."""

    def require(self, name: str, argument: str) -> None:
        if name not in self.columns:
            raise missing_column(name, self.label, self.columns, argument)


@contextmanager
def open_spark(frame: Any) -> Iterator[SparkSource]:
    try:
        import pyspark  # noqa: F401
    except ImportError:  # pragma: no cover - a Spark DataFrame implies pyspark
        raise InputError(
            "Spark DataFrames need PySpark: pip install 'dpsense[spark]' (and Java 17+)."
        ) from None
    con = connection()
    source = SparkSource(frame, con)
    try:
        yield source
    finally:
        try:
            for close in source.on_close:
                with suppress(Exception):  # an unpersist that fails must not hide the rest
                    close()
        finally:
            con.close()


def _functions() -> Any:
    from pyspark.sql import functions as sf

    return sf


def _canonical(sf: Any, column: Any, data_type: Any) -> Any:
    """Every integer width as a long, floats and decimals as doubles, the rest as text, so
    the hash does not depend on how the input typed the column."""
    return column.cast(_kind_of(data_type))


def _kind_of(data_type: Any) -> str:
    """ "long", "double" or "string": the canonical type :func:`_canonical` gives."""
    from pyspark.sql import types as st

    if isinstance(data_type, st.ByteType | st.ShortType | st.IntegerType | st.LongType):
        return "long"
    if isinstance(data_type, st.FloatType | st.DoubleType | st.DecimalType):
        return "double"
    return "string"


def _check(source: SparkSource, plan: TablePlan) -> Any:
    """Raise on bad values; return the filter that drops nulls (a Column), or None."""
    from pyspark.sql import types as st

    sf = _functions()
    frame = source.frame
    aggs = []
    null_tests = []
    if plan.column is not None:
        raw = sf.col(plan.column)
        num = sf.expr(f"try_cast(`{_escape(plan.column)}` AS DOUBLE)")
        aggs.append(sf.max((raw.isNotNull() & num.isNull()).cast("int")))
        # infinities are values: clipped to the bounds below, never an error
        null_tests.append(raw.isNull() | sf.isnan(num))
    for name in (*plan.by, *([plan.unit] if plan.unit else [])):
        test = sf.col(name).isNull()
        if isinstance(source.types[name], st.FloatType | st.DoubleType):
            test = test | sf.isnan(sf.col(name))  # NaN in a float key is missing too
        null_tests.append(test)
    if not aggs and not null_tests:
        return None
    any_null = null_tests[0]
    for test in null_tests[1:]:
        any_null = any_null | test
    aggs.append(sf.max(any_null.cast("int")))
    row = frame.agg(*aggs).collect()[0]
    flags = [bool(v) for v in row]
    if raise_on_flags(plan, flags):
        return ~any_null
    return None


def _escape(name: str) -> str:
    return name.replace("`", "``")


def _python_typed(data_type: Any) -> bool:
    """True for the by-column types whose keys are read in Python (integers, floats, text);
    the others (dates, decimals, ...) are cast by Spark."""
    from pyspark.sql import types as st

    return isinstance(
        data_type,
        st.ByteType
        | st.ShortType
        | st.IntegerType
        | st.LongType
        | st.FloatType
        | st.DoubleType
        | st.StringType,
    )


def _as_type(value: Any, data_type: Any) -> tuple[bool, Any]:
    """(ok, value) for one key read as a value of a by-column's type (one of
    ``_python_typed``)."""
    from pyspark.sql import types as st

    if value is None or isinstance(value, bool):
        return False, None
    try:
        if isinstance(data_type, st.ByteType | st.ShortType | st.IntegerType | st.LongType):
            number = float(value) if not isinstance(value, int | np.integer) else int(value)
            if isinstance(number, float) and not number.is_integer():
                return False, None
            return True, int(number)
        if isinstance(data_type, st.FloatType | st.DoubleType):
            return True, float(value)
        return True, str(value)
    except (TypeError, ValueError, OverflowError):
        return False, None


def _keys_frame(source: SparkSource, plan: TablePlan, keys: list[tuple[Any, ...]]) -> Any:
    """The public keys as a (small, local) DataFrame typed like the by-columns, with gid."""
    from pyspark.sql import types as st

    types = [source.types[b] for b in plan.by]
    if not all(_python_typed(t) for t in types):
        return _keys_frame_in_spark(source, plan, keys)
    typed = [tuple(_as_type(v, t) for v, t in zip(key, types, strict=True)) for key in keys]
    if not all(ok for key in typed for ok, _ in key):
        raise keys_of_another_type(list(plan.by), [t.simpleString() for t in types])
    values = [tuple(v for _, v in key) for key in typed]
    if len(set(values)) != len(values):
        raise keys_repeated()
    fields = [st.StructField(f"g{i}", t) for i, t in enumerate(types)]
    fields.append(st.StructField("gid", st.LongType()))
    rows = [(*key, j) for j, key in enumerate(values)]
    return source.frame.sparkSession.createDataFrame(rows, st.StructType(fields))


def _keys_frame_in_spark(source: SparkSource, plan: TablePlan, keys: list[tuple[Any, ...]]) -> Any:
    """Keys for by-columns of other types (dates, decimals...), cast by Spark itself."""
    from pyspark.sql import types as st

    sf = _functions()
    spark = source.frame.sparkSession
    fields = [st.StructField(f"k{i}", st.StringType()) for i in range(len(plan.by))]
    fields.append(st.StructField("gid", st.LongType()))
    rows = [(*(None if v is None else str(v) for v in key), j) for j, key in enumerate(keys)]
    frame = spark.createDataFrame(rows, st.StructType(fields))
    typed = frame.select(
        *[
            sf.expr(f"try_cast(k{i} AS {source.types[b].simpleString()})").alias(f"g{i}")
            for i, b in enumerate(plan.by)
        ],
        "gid",
    )
    nulls = sf.lit(False)
    for i in range(len(plan.by)):
        nulls = nulls | sf.col(f"g{i}").isNull()
    got = typed.agg(
        sf.max(nulls.cast("int")).alias("bad"),
        sf.count_distinct(*[sf.col(f"g{i}") for i in range(len(plan.by))]).alias("distinct"),
    ).collect()[0]
    if got["bad"]:
        raise keys_of_another_type(list(plan.by), [source.types[b].simpleString() for b in plan.by])
    if got["distinct"] != len(keys):
        raise keys_repeated()
    return typed


def bound_spark_table(
    source: SparkSource, plan: TablePlan, keys: list[tuple[Any, ...]] | None
) -> BoundedTable:
    """Check, filter, bound and clip in Spark; the histogram lands in a DuckDB table."""
    from pyspark import StorageLevel

    sf = _functions()
    by = plan.by
    gs = [f"g{i}" for i in range(len(by))]
    public = keys is not None and bool(by)
    stage = _stage(source, plan, keys if public else None)
    group_cols = ["gid"] if (public or not by) else gs
    bounds = plan.column is not None and plan.lower is not None and plan.upper is not None
    if plan.unit is None and plan.hold and group_cols == ["gid"] and bounds:  # rows are units
        group_keys = list(keys) if public and keys is not None else [()]
        return spark_held.held_spark_table(source, plan, stage, group_keys)
    persisted: list[Any] = []
    if plan.unit is not None:
        kept = _kept_rows(source, plan, stage, keys if public else None, group_cols)
        kept = kept.persist(StorageLevel.MEMORY_AND_DISK)
        persisted.append(kept)
        units_frame = kept.groupBy(*group_cols).agg(sf.sum("first").alias("count"))
    else:
        kept = stage
        units_frame = None
    hist = kept.groupBy(*group_cols, "v").agg(sf.count(sf.lit(1)).alias("c"))
    try:
        with worker_errors(plan.unit is not None):
            if group_cols == ["gid"]:
                group_keys = list(keys) if public and keys is not None else [()]
                numbered = hist
                unit_rows = units_frame.collect() if units_frame is not None else None
            else:  # groups found in the data, numbered in the order of their values
                hist = hist.persist(StorageLevel.MEMORY_AND_DISK)
                persisted.append(hist)
                group_keys, numbered, unit_rows = spark_groups.numbered_groups(
                    source, plan, hist, units_frame
                )
            numbered = numbered.select("gid", "v", "c").persist(StorageLevel.MEMORY_AND_DISK)
            persisted.append(numbered)
            cell_at = cell_bounds(plan, len(group_keys))
            rows, distinct, cells = _group_sizes(numbered, len(group_keys), cell_at)
            held, large, numbered = spark_groups.held_large_groups(
                source, plan, numbered, rows, distinct, persisted
            )
            if held is not None and cells is not None:
                held.preset_counts(*cells)
            streamed = int(distinct.sum()) - sum(int(distinct[g]) for g in large)
            load_histogram(source.con, numbered, rows=streamed)
    finally:
        for frame_ in persisted:
            frame_.unpersist()
    return _bounded_table(source, plan, group_keys, (rows, distinct), unit_rows, held, large)


def _bounded_table(
    source: SparkSource,
    plan: TablePlan,
    group_keys: list[tuple[Any, ...]],
    sizes: tuple[np.ndarray, np.ndarray],
    unit_rows: list[Any] | None,
    held: spark_groups.SparkGroups | None,
    large: list[int],
) -> BoundedTable:
    """The bounded groups: their keys, unit counts (rows without a unit), rows and
    distinct values (``sizes``), with the large groups held in Spark."""
    rows, distinct = sizes
    units = None
    if unit_rows is not None:
        units = np.zeros(len(group_keys), dtype=np.int64)
        for row in unit_rows:
            units[int(row["gid"])] = int(row["count"])
    table_source = TableSource(source.con, "dpsense_hist", ["gid", "v", "c"], source.label)
    return BoundedTable(
        table_source,
        group_keys,
        rows.copy() if units is None else units,
        rows,
        distinct,
        plan.column is not None,
        held={g: held.group(g) for g in large} if held is not None else {},
    )


def _stage(source: SparkSource, plan: TablePlan, keys: list[tuple[Any, ...]] | None) -> Any:
    """The checked rows as ``v`` (the clipped value, 0 for a count), the group columns
    ``g0, g1, ...`` (or ``gid`` with public ``keys`` or no groups) and the canonical unit
    ``u``; with public keys, only the rows of a public group."""
    sf = _functions()
    keep = _check(source, plan)
    frame = source.frame if keep is None else source.frame.where(keep)
    by = plan.by
    cols = []
    if plan.column is not None:
        num = sf.expr(f"try_cast(`{_escape(plan.column)}` AS DOUBLE)")
        if plan.lower is not None and plan.upper is not None:
            num = sf.greatest(sf.least(num, sf.lit(plan.upper)), sf.lit(plan.lower))
        cols.append(num.alias("v"))
    else:
        cols.append(sf.lit(0.0).alias("v"))
    cols += [sf.col(b).alias(f"g{i}") for i, b in enumerate(by)]
    if plan.unit is not None:
        cols.append(_canonical(sf, sf.col(plan.unit), source.types[plan.unit]).alias("u"))
    stage = frame.select(*cols)
    if keys is not None:
        gs = [f"g{i}" for i in range(len(by))]
        stage = stage.join(sf.broadcast(_keys_frame(source, plan, keys)), on=gs, how="inner")
        return stage.drop(*gs)
    if not by:
        return stage.withColumn("gid", sf.lit(0).cast("long"))
    return stage


def _kept_rows(
    source: SparkSource,
    plan: TablePlan,
    stage: Any,
    keys: list[tuple[Any, ...]] | None,
    group_cols: list[str],
) -> Any:
    """The rows each unit keeps (``g`` groups, ``m`` rows in each): hashed by Spark's own
    arithmetic when it can, else by DuckDB on the executors."""
    public = keys is not None
    every_key = public and keys is not None and plan.max_groups >= len(keys)
    by = plan.by
    canon = _native_canon(source, plan, public) if by and not every_key else []
    if canon is not None and _native_unit(source, plan):
        return spark_hash.bound_natively(
            stage,
            plan.salt,
            int(plan.max_rows),
            int(plan.max_groups) if by and not every_key else None,
            group_cols,
            canon,
        )
    return _bound_in_python(source, plan, stage, public, every_key, group_cols)


def _native_unit(source: SparkSource, plan: TablePlan) -> bool:
    """True when Spark can hash the unit column itself (an integer column; text units are
    hashed by DuckDB on the executors) and the driver's DuckDB hashes as
    ``spark_hash.reference_hash``."""
    from pyspark.sql import types as st

    integer = st.ByteType | st.ShortType | st.IntegerType | st.LongType
    return isinstance(source.types[plan.unit], integer) and spark_hash.native_hash_available()


def _native_canon(
    source: SparkSource, plan: TablePlan, public: bool
) -> list[tuple[str, bool]] | None:
    """The group columns the group hash reads, as (name, is a double), when Spark can
    hash them (public keys: the key's number; by-columns of numeric types); else None."""
    from pyspark.sql import types as st

    if public:
        return [("gid", False)]
    out = []
    for i, b in enumerate(plan.by):
        data_type = source.types[b]
        if isinstance(data_type, st.ByteType | st.ShortType | st.IntegerType | st.LongType):
            out.append((f"g{i}", False))
        elif isinstance(data_type, st.FloatType | st.DoubleType | st.DecimalType):
            out.append((f"g{i}", True))
        else:
            return None
    return out


def _bound_in_python(
    source: SparkSource,
    plan: TablePlan,
    stage: Any,
    public: bool,
    every_key: bool,
    group_cols: list[str],
) -> Any:
    """Contribution bounding with DuckDB's hash evaluated by DuckDB on the executors (text
    units or by-columns): rows ranked per (unit, group) by a window, groups per unit by a
    second one. Returns the kept rows with the column ``first`` of ``bound_natively``."""
    from pyspark.sql import Window

    sf = _functions()
    by = plan.by
    salt_g, salt_r = plan.salt
    text_unit = _kind_of(source.types[plan.unit]) == "string"
    hashed = _with_keyed_hash(stage, "hr", keyed_hash(salt_r, "v", text_unit=text_unit), ["u", "v"])
    ranked = hashed.withColumn(
        "r",
        sf.row_number().over(Window.partitionBy("u", *group_cols).orderBy("hr", "v")),
    )
    kept = ranked.where(sf.col("r") <= int(plan.max_rows)).drop("r", "hr")
    if by and not every_key:
        canon = (
            [sf.col("gid").alias("k0")]
            if public
            else [
                _canonical(sf, sf.col(f"g{i}"), source.types[b]).alias(f"k{i}")
                for i, b in enumerate(by)
            ]
        )
        pairs = kept.select("u", *group_cols).distinct().select("u", *group_cols, *canon)
        ks = [f"k{i}" for i in range(len(canon))]
        pairs = _with_keyed_hash(
            pairs, "hg", keyed_hash(salt_g, ", ".join(ks), text_unit=text_unit), ["u", *ks]
        )
        chosen = (
            pairs.withColumn(
                "r",
                sf.row_number().over(Window.partitionBy("u").orderBy("hg", *group_cols)),
            )
            .where(sf.col("r") <= int(plan.max_groups))
            .select("u", *group_cols)
        )
        kept = kept.join(chosen, on=["u", *group_cols], how="left_semi")
    return kept.withColumn(
        "first",
        (sf.row_number().over(Window.partitionBy("u", *group_cols).orderBy("v")) == 1).cast("int"),
    )


def _group_sizes(
    numbered: Any, ngroups: int, bounds: tuple[float, float] | None = None
) -> tuple[np.ndarray, np.ndarray, Any]:
    """Each group's number of rows and of distinct values (a row per group collected)
    and, with ``bounds``, the interval's counts below the points: the histogram grouped
    by the bucket of ``pass_cells`` too (a row per group and bucket), with each entry's
    smallest and largest value (None when an entry straddles a point)."""
    sf = _functions()
    rows = np.zeros(ngroups, dtype=np.int64)
    distinct = np.zeros(ngroups, dtype=np.int64)
    bucket = None if bounds is None else bucket_column(sf, *bounds)
    aggs = [sf.sum("c").alias("n"), sf.count("v").alias("d")]
    if bucket is None or bounds is None:
        sizes = numbered.groupBy("gid").agg(*aggs)
        cells = None
    else:
        sizes = numbered.withColumn("b", bucket).groupBy("gid", "b")
        sizes = sizes.agg(*aggs, sf.min("v").alias("lo"), sf.max("v").alias("hi"))
        cells = BucketCells(*bounds)
    for row in sizes.collect():
        g = int(row["gid"])
        rows[g] += int(row["n"])
        distinct[g] += int(row["d"])
        if cells is not None:
            cells.add(g, int(row["n"]), row["lo"], row["hi"])
    return rows, distinct, None if cells is None else cells.counts()
