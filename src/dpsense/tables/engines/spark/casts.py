"""Casting a Spark source to the declared ``schema=`` types, as the DuckDB engine does
(``tables.engines.duckdb.casts``): a row whose non-null value does not fit is dropped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from dpsense.tables.rows.casts import Cast, CastDialect, fitting_cast

__all__ = ["apply_spark_schema", "cast_spark_frame"]

_SPARK: Final = CastDialect(
    "try_cast",
    "STRING",
    frozenset({"ByteType", "ShortType", "IntegerType", "LongType", "BooleanType"}),
    # the range test comes first, in its own CASE: Spark's floor() of a double is a BIGINT
    # and overflows (an error under ANSI) for +-inf or |x| >= 2^63
    "CASE WHEN {d} >= -{limit} AND {d} < {limit} THEN "
    "CASE WHEN {d} = floor({d}) THEN CAST({d} AS BIGINT) END END",
)


def _spark_cast(column: str, type_name: str, cast: Cast) -> str:
    """The Spark SQL counterpart of :func:`_duckdb_cast` (Spark's casts truncate or round
    too)."""
    v = "`" + column.replace("`", "``") + "`"
    return fitting_cast(_SPARK, v, v, cast, type_name)


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
