"""A query of several statistics on a Spark DataFrame.

The same steps, in the same order and with the same draws, as the DuckDB path
(:func:`dpsense.query.run._run_several`): one seed per statistic, the private bounds
steps, ``where`` and one check of every column, one contribution bounding over all the
query's columns (:mod:`dpsense.query.spark_bounding`, the definition of
:mod:`dpsense.query.bounding`), one private partition selection from the bounded frame's
unit counts, then each statistic's grouped release on the bounded frame with the selected
groups as its keys (``prebounded``: the engine keeps the bounded rows whole). Spark does
everything that touches rows; the noise is drawn in Python. docs/queries.md derives the
total.
"""

from __future__ import annotations

from typing import Any

from dpsense.bounds_in_release import readable_twice
from dpsense.noise.rng import RandomSource
from dpsense.query.plan import QueryPlan
from dpsense.query.result import QueryResult
from dpsense.query.spark_bounding import spark_bound_rows, spark_checked_rows
from dpsense.query.steps import (
    counted_columns,
    opened_query,
    release_entries,
    select_shared,
    statistic_sources,
    unit_bounding,
    with_private_bounds,
    with_value_column,
)
from dpsense.tables.presence import add_presence
from dpsense.tables.spark import open_spark
from dpsense.tables.spark_workers import worker_errors

__all__ = ["run_several_spark"]


def run_several_spark(plan: QueryPlan, x: Any, source: RandomSource) -> QueryResult:
    """Several statistics over one bounded Spark frame (module docstring)."""
    from pyspark import StorageLevel

    plan = with_value_column(plan, x)
    rngs = statistic_sources(source, len(plan.entries))
    with readable_twice(x) as data:
        stats, receipts = with_private_bounds(plan, data, source)
        with opened_query(plan, data) as (opened, values, public):
            # each COUNT(col)'s 0/1 column, hashed and carried by the bounding
            flags = tuple(add_presence(opened, counted_columns(plan)).values())
            checked = spark_checked_rows(opened, values, plan.by, plan.unit, plan.nulls)
            if plan.unit is not None:
                bounding = unit_bounding(plan, (*values, *flags), public, source)
                bounded = spark_bound_rows(opened, checked, bounding)
            else:
                bounded = checked
            # every statistic reads the bounded rows: hashed and ranked once
            bounded = bounded.persist(StorageLevel.MEMORY_AND_DISK)
            try:
                with worker_errors(plan.unit is not None):
                    keys, selection = _shared_groups(plan, bounded, source)
                    return release_entries(
                        plan,
                        data,
                        stats,
                        receipts,
                        keys,
                        selection,
                        rngs,
                        lambda: open_spark(bounded),
                    )
            finally:
                bounded.unpersist()


def _shared_groups(
    plan: QueryPlan, bounded: Any, source: RandomSource
) -> tuple[Any, dict[str, Any] | None]:
    """The groups every statistic releases: the public keys, or those one private
    partition selection keeps from the bounded frame's unit counts (the groups in the
    order of their values, as DuckDB's ORDER BY gives them to the same draws)."""
    if not plan.by or plan.selection is None:
        return (plan.keys if plan.by else None), None
    from pyspark.sql import functions as sf

    by = list(plan.by)
    units = sf.count_distinct(sf.col(plan.unit)) if plan.unit is not None else sf.count(sf.lit(1))
    got = bounded.groupBy(*by).agg(units.alias("dpsense_units")).orderBy(*by).collect()
    groups = [tuple(r[:-1]) for r in got]
    return select_shared(plan, groups, [int(r[-1]) for r in got], source)
