"""The per-unit aggregation on Spark: the derived table as a lazy DataFrame (the rows
filtered by the total row predicate, then ``groupBy(unit, *groups)``), every value a
DOUBLE as on DuckDB."""

from __future__ import annotations

from typing import Any

from dpsense.tables.rows.per_unit import FINITE, SUMMED, PerUnitRows, check_numeric

__all__ = ["spark_per_unit"]


def spark_per_unit(frame: Any, rows: PerUnitRows) -> Any:
    """The derived table of ``frame`` (the one-table join, a lazy Spark DataFrame), its
    values checked to be numbers from the frame's types; nothing runs until the release."""
    from pyspark.sql import functions as sf

    check_numeric(dict(frame.dtypes), rows.values, rows.label)
    if rows.row_filter is not None:
        frame = rows.row_filter.spark_frame(frame)
    columns = []
    for value in rows.values:
        if value.column is None:
            column = sf.count(sf.lit(1))
        elif value.function == "count":
            column = sf.count(sf.col(value.column))
        else:
            raw = sf.col(value.column).cast("double")
            read = sf.when(sf.isnan(raw), sf.lit(None).cast("double"))  # skipped, as a null
            if value.function in SUMMED:  # held to +-FINITE (as on DuckDB)
                read = read.when(raw > FINITE, sf.lit(FINITE))
                read = read.when(raw < -FINITE, sf.lit(-FINITE))
            read = read.otherwise(raw)
            aggregate = {"sum": sf.sum, "avg": sf.avg, "min": sf.min, "max": sf.max}
            column = aggregate[value.function](read)
        columns.append(column.cast("double").alias(value.name))
    return frame.groupBy(rows.unit, *rows.by).agg(*columns)
