"""Casting a Spark source to the declared ``schema=`` types, as the DuckDB engine does
(``tables.engines.duckdb.casts``): a row whose non-null value does not fit is dropped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from dpsense.tables.rows.casts import Cast, CastDialect, fitting_cast

__all__ = ["apply_spark_schema", "cast_spark_frame"]


def _whole_number(d: Any, limit: Any) -> Any:
    """``CASE WHEN d >= -limit AND d < limit THEN CASE WHEN d = floor(d) THEN
    CAST(d AS BIGINT) END END``: the range test comes first, in its own CASE (Spark's
    floor() of a double is a BIGINT and overflows, an error under ANSI, for +-inf or
    |x| >= 2^63)."""
    from sqlglot import expressions as exp

    in_range = exp.and_(
        exp.GTE(this=d.copy(), expression=exp.Neg(this=limit.copy())),
        exp.LT(this=d.copy(), expression=limit.copy()),
    )
    floor = exp.Anonymous(this="floor", expressions=[d.copy()])
    as_bigint = exp.Cast(this=d.copy(), to=exp.DataType.build("BIGINT"))
    whole = exp.Case(ifs=[exp.If(this=exp.EQ(this=d.copy(), expression=floor), true=as_bigint)])
    return exp.Case(ifs=[exp.If(this=in_range, true=whole)])


_SPARK: Final = CastDialect(
    "spark",
    frozenset({"ByteType", "ShortType", "IntegerType", "LongType", "BooleanType"}),
    _whole_number,
)


def _spark_cast(column: str, type_name: str, cast: Cast) -> str:
    """The Spark SQL counterpart of :func:`_duckdb_cast` (Spark's casts truncate or round
    too)."""
    return fitting_cast(_SPARK, column, cast, type_name)


def apply_spark_schema(source: Any, casts: Mapping[str, Cast]) -> None:
    """Cast the columns of a ``SparkSource`` as ``casts`` says; a row with a value that is
    not null but does not fit its declared type is dropped."""
    if not casts:
        return
    for name in casts:
        source.require(name, "schema")
    source.frame = cast_spark_frame(source.frame, casts)
    source.types = {f.name: f.dataType for f in source.frame.schema.fields}


def cast_spark_frame(frame: Any, casts: Mapping[str, Cast]) -> Any:
    """``frame`` with the columns of ``casts`` cast (each must exist), without the rows
    whose non-null value does not fit its declared type."""
    if not casts:
        return frame
    from pyspark.sql import functions as sf

    types = {f.name: f.dataType for f in frame.schema.fields}
    exprs = {
        name: _spark_cast(name, type(types[name]).__name__, cast) for name, cast in casts.items()
    }
    fits = " AND ".join(
        f"(`{n.replace('`', '``')}` IS NULL OR ({e}) IS NOT NULL)" for n, e in exprs.items()
    )
    return frame.filter(sf.expr(fits)).withColumns({n: sf.expr(e) for n, e in exprs.items()})
