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

from dataclasses import replace
from typing import Any

import numpy as np

from dpsense._exact_budget import float_up
from dpsense.bounds_in_release import BoundsPlan, _bounded, readable_twice
from dpsense.mechanisms.partition_selection import SelectionRule, select_groups
from dpsense.methods import Release
from dpsense.noise.rng import RandomSource
from dpsense.query.plan import QueryPlan
from dpsense.query.result import QueryResult
from dpsense.query.spark_bounding import spark_bound_rows, spark_checked_rows
from dpsense.statistics import BoundedStatistic, Statistic
from dpsense.tables.grouped import GroupedRelease, _normalise_keys, opened_table, release_opened
from dpsense.tables.spark import open_spark
from dpsense.tables.spark_workers import _worker_error

__all__ = ["run_several_spark"]


def run_several_spark(plan: QueryPlan, x: Any, source: RandomSource) -> QueryResult:
    """Several statistics over one bounded Spark frame (module docstring)."""
    from pyspark import StorageLevel

    from dpsense.query import run  # its helpers; run imports this module lazily

    plan = run._with_value_column(plan, x)
    rngs = run.statistic_sources(source, len(plan.entries))
    with readable_twice(x) as data:
        stats, receipts = _with_private_bounds(plan, data, source)
        values = tuple(dict.fromkeys(e.column for e in plan.entries if e.column is not None))
        public = _normalise_keys(plan.keys, plan.by) if plan.keys is not None else None
        with opened_table(
            data,
            values,
            plan.by,
            plan.unit,
            resolve_value=False,
            schema=plan.casts,
            row_filter=plan.row_filter,
        ) as (opened, _):
            checked = spark_checked_rows(opened, values, plan.by, plan.unit, plan.nulls)
            if plan.unit is not None:
                salt = (
                    int(source.words(1)[0] >> np.uint64(1)),
                    int(source.words(1)[0] >> np.uint64(1)),
                )
                bounded = spark_bound_rows(
                    opened,
                    checked,
                    values=values,
                    by=plan.by,
                    unit=plan.unit,
                    max_rows=plan.max_rows,
                    max_groups=plan.max_groups if plan.by else 1,
                    keys=public,
                    salt=salt,
                )
            else:
                bounded = checked
            # every statistic reads the bounded rows: hashed and ranked once
            bounded = bounded.persist(StorageLevel.MEMORY_AND_DISK)
            try:
                keys, selection = _shared_groups(plan, bounded, source)
                results: dict[str, Release | GroupedRelease] = {}
                for entry, rng in zip(plan.entries, rngs, strict=True):
                    with open_spark(bounded) as rows:
                        got = release_opened(
                            data,
                            rows,
                            stats[entry.name],
                            epsilon=entry.epsilon,
                            delta=entry.delta,
                            keys=keys,
                            prebounded=True,
                            **run._engine_arguments(plan, entry, rng),
                        )
                    if isinstance(got, GroupedRelease) and selection is not None:
                        got = replace(
                            got,
                            selection="private",
                            parameters={**got.parameters, "selection": selection},
                        )
                    if entry.column in receipts:
                        got = run._with_bounds(got, receipts[str(entry.column)], entry)
                    results[entry.name] = got
            except Exception as exc:
                friendly = _worker_error(exc) if plan.unit is not None else None
                if friendly is not None:
                    raise friendly from None
                raise
            finally:
                bounded.unpersist()
    extra: dict[str, Any] = {}
    if selection is not None:
        extra["selection"] = selection
    if receipts:
        extra["bounds"] = receipts
    return run._as_query(plan, results, extra)


def _with_private_bounds(
    plan: QueryPlan, data: Any, source: RandomSource
) -> tuple[dict[str, Statistic], dict[str, dict[str, Any]]]:
    """Each statistic with the bounds it releases with: for ``bounds="private"``, one
    private bounds step per column that needs them (shared by that column's statistics),
    as the DuckDB path draws them; and each column's bounds receipt."""
    from dpsense.query import run

    stats = {e.name: e.statistic for e in plan.entries}
    receipts: dict[str, dict[str, Any]] = {}
    if plan.bounds is None:
        return stats, receipts
    step = BoundsPlan(plan.bounds.share, plan.bounds_epsilon, plan.bounds.rest)
    for col in plan.bounds_columns:
        todo = [
            e
            for e in plan.entries
            if e.column == col
            and isinstance(e.statistic, BoundedStatistic)
            and not e.statistic.has_bounds
        ]
        first = todo[0].statistic
        assert isinstance(first, BoundedStatistic)
        _, receipt = run._bounds_step(plan, data, first, step, col, source)
        receipts[str(col)] = receipt
        for e in todo:
            assert isinstance(e.statistic, BoundedStatistic)
            stats[e.name] = _bounded(e.statistic, receipt["lower"], receipt["upper"])[0]
    return stats, receipts


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
    counts = np.asarray([int(r[-1]) for r in got], dtype=np.int64)
    eps_sel, dlt_sel = plan.selection
    g = plan.max_groups if plan.unit is not None else 1
    rule = SelectionRule.for_budget(eps_sel, dlt_sel, g)
    chosen = select_groups(counts, rule, source)
    receipt = {
        "epsilon": eps_sel,
        "delta": dlt_sel,
        "threshold": rule.threshold,
        "scale": float_up(rule.scale),
    }
    return [groups[int(i)] for i in chosen], receipt
