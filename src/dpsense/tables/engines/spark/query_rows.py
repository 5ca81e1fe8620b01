"""One contribution bounding for every statistic of a query, in Spark.

The same definition as the DuckDB engine's
(:mod:`dpsense.tables.engines.duckdb.query_rows`), computed with the DataFrame API: a unit
keeps the ``g`` groups of smallest ``hash(key_g, unit, group)`` and, in each, the ``m`` rows
of smallest ``hash(key_r, unit, row)``, the row being the tuple of every value column the
query reads, each column in its canonical type (integers as BIGINT, floats and decimals as
DOUBLE, the rest as text). The hash is DuckDB's: Spark's own long arithmetic
(:mod:`dpsense.tables.engines.spark.long_hash`) when every hashed column is a number and the
unit an integer, else DuckDB on the executors' Arrow batches
(:func:`dpsense.tables.engines.spark.workers._with_keyed_hash`). So for the same keys Spark
keeps exactly the rows DuckDB keeps, and a query on a Spark DataFrame releases what it
releases on the same data in DuckDB for a seed.
"""

from __future__ import annotations

from typing import Any

from dpsense.tables.engines.spark import long_hash as spark_hash
from dpsense.tables.engines.spark.frame import (
    SparkSource,
    _canonical,
    _escape,
    _keys_frame,
    _kind_of,
)
from dpsense.tables.engines.spark.workers import _with_keyed_hash
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.rows.unit_bounding import UnitBounding, keyed_hash, raise_on_query_flags

__all__ = ["spark_bound_rows", "spark_checked_rows"]


def _functions() -> Any:
    from pyspark.sql import functions as sf

    return sf


def spark_checked_rows(
    source: SparkSource, values: tuple[str, ...], by: tuple[str, ...], unit: str | None, nulls: str
) -> Any:
    """``source``'s frame with the rows every statistic uses, after one check of all the
    query's columns (as the DuckDB engine's ``checked_rows``: non-numeric entries of a
    value column, missing values in any used column: an InputError, or dropped with
    ``nulls="drop"``). One Spark job; messages name columns, never values or counts."""
    from pyspark.sql import types as st

    sf = _functions()
    frame = source.frame
    nonnumeric = []
    value_missing = []
    for v in values:
        raw = sf.col(v)
        num = sf.expr(f"try_cast(`{_escape(v)}` AS DOUBLE)")
        nonnumeric.append(sf.max((raw.isNotNull() & num.isNull()).cast("int")))
        value_missing.append(raw.isNull() | sf.isnan(num))
    key_missing = []
    for name in (*by, *([unit] if unit else [])):
        test = sf.col(name).isNull()
        if isinstance(source.types[name], st.FloatType | st.DoubleType):
            test = test | sf.isnan(sf.col(name))  # NaN in a float key is missing too
        key_missing.append(test)
    missing = [*value_missing, *key_missing]
    if not missing:
        return frame
    any_missing = missing[0]
    for test in missing[1:]:
        any_missing = any_missing | test
    any_key = sf.lit(False)
    for test in key_missing:
        any_key = any_key | test
    maxima = [sf.max(m.cast("int")) for m in value_missing]
    row = frame.agg(*nonnumeric, *maxima, sf.max(any_key.cast("int"))).collect()[0]
    flags = [bool(f) for f in row]
    k = len(values)
    drop = raise_on_query_flags(values, by, unit, nulls, flags[:k], flags[k : 2 * k], flags[-1])
    return frame.where(~any_missing) if drop else frame


def _with_hash(
    frame: Any,
    name: str,
    salt: int,
    columns: list[str],
    kinds: list[str],
    native: bool,
    text_unit: bool,
) -> Any:
    """``frame`` with the long column ``name`` = ``keyed_hash(salt, columns)`` (DuckDB's
    ``(hash(salt, u, *columns) >> 1)::BIGINT``) of its canonical columns ``u`` and
    ``columns`` (of canonical ``kinds``)."""
    if native and all(k != "string" for k in kinds):
        hashed = [("u", False), *[(c, k == "double") for c, k in zip(columns, kinds, strict=True)]]
        return spark_hash.native_hash(frame, name, salt, hashed)
    expression = keyed_hash(salt, ", ".join(columns), text_unit=text_unit)
    return _with_keyed_hash(frame, name, expression, ["u", *columns])


def spark_bound_rows(source: SparkSource, frame: Any, bounding: UnitBounding) -> Any:
    """The rows of ``frame`` (``source``'s checked rows) that a unit keeps (the module's
    docstring), as a DataFrame of the ``values``, ``by`` and ``unit`` columns under their
    own names; with public ``keys``, only rows whose group is one of them (groups are
    chosen among the public ones, as in DuckDB)."""
    values, by, unit, max_rows, max_groups, keys, salt = bounding.parts()
    from pyspark.sql import Window

    sf = _functions()
    names = list(dict.fromkeys((*values, *by, unit)))
    alias = {name: f"a{i}" for i, name in enumerate(names)}
    kinds = {name: _kind_of(source.types[name]) for name in names}
    group = [alias[b] for b in by]
    canon_v = [f"cv{i}" for i in range(len(values))]
    canon_g = [f"cg{i}" for i in range(len(by))]
    stage = frame.select(
        *[sf.col(n).alias(alias[n]) for n in names],
        _canonical(sf, sf.col(unit), source.types[unit]).alias("u"),
        *[_canonical(sf, sf.col(n), source.types[n]).alias(f"cv{i}") for i, n in enumerate(values)],
        *[_canonical(sf, sf.col(n), source.types[n]).alias(f"cg{i}") for i, n in enumerate(by)],
    )
    if keys is not None and by:
        public = TablePlan(None, by, unit, 1, 1, "error", None, None, (0, 0))
        typed = _keys_frame(source, public, keys)
        typed = typed.select(*[sf.col(f"g{i}").alias(alias[b]) for i, b in enumerate(by)])
        stage = stage.join(sf.broadcast(typed), on=group, how="left_semi")
    # Spark's arithmetic hashes integer units and numeric columns; DuckDB the rest
    native = kinds[unit] == "long" and spark_hash.native_hash_available()
    text_unit = kinds[unit] == "string"
    salt_g, salt_r = salt
    every_key = keys is not None and max_groups >= len(keys)
    if by and not every_key:
        pairs = stage.select("u", *group, *canon_g).distinct()
        pairs = _with_hash(pairs, "hg", salt_g, canon_g, [kinds[b] for b in by], native, text_unit)
        chosen = (
            pairs.withColumn(
                "r", sf.row_number().over(Window.partitionBy("u").orderBy("hg", *group))
            )
            .where(sf.col("r") <= int(max_groups))
            .select("u", *group)
        )
        stage = stage.join(chosen, on=["u", *group], how="left_semi")
    if values:
        stage = _with_hash(
            stage, "hr", salt_r, canon_v, [kinds[v] for v in values], native, text_unit
        )
        order = ["hr", *canon_v]
    else:
        # a count reads no value: a unit's rows in a group are alike, any m of them do
        order = ["u"]
    within = Window.partitionBy("u", *group).orderBy(*order)
    kept = stage.withColumn("r", sf.row_number().over(within)).where(sf.col("r") <= int(max_rows))
    return kept.select(*[sf.col(alias[n]).alias(n) for n in names])
