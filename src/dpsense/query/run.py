"""Running a query plan: one bounding, one selection, each statistic, one result.

A bare statistic (or a dict of one) runs the engine's grouped path as it always has. A
query of several statistics opens the table once, applies ``where`` and checks every
column once, bounds each unit once over all the query's columns, selects the groups once
from the bounded table's unit counts, then runs each statistic's release on the bounded
rows at its share of the budget, with the selected groups as its keys. It is written once
against the engine interface (``tables.engines``): the engine checks and bounds the rows
(``duckdb/query_rows.py``, ``spark/query_rows.py``) and counts units per group; the draws
are the same, in the same order, whichever engine runs. docs/queries.md derives the
total.
"""

from __future__ import annotations

from typing import Any

from dpsense.methods import Release
from dpsense.noise.rng import RandomSource
from dpsense.query.bounds_step import with_bounds_receipt
from dpsense.query.methods import release_column
from dpsense.query.plan import QueryPlan
from dpsense.query.result import QueryResult
from dpsense.query.steps import (
    as_query,
    bounds_step,
    counted_columns,
    opened_query,
    release_entries,
    select_shared,
    statistic_release,
    statistic_sources,
    unit_bounding,
    with_key_casts,
    with_private_bounds,
    with_value_column,
)
from dpsense.statistics import BoundedStatistic, Statistic
from dpsense.tables.engines import KeptRows, engine_for
from dpsense.tables.grouped import (
    GroupedRelease,
    release_table,
    table_plan,
)
from dpsense.tables.presence import add_presence
from dpsense.tables.request import Budget
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.rows.source import readable_twice
from dpsense.tables.rows.unit_bounding import QueryRows

__all__ = ["run_plan", "statistic_sources"]


def run_plan(
    plan: QueryPlan, x: Any, source: RandomSource, *, tabular: bool
) -> Release | GroupedRelease | QueryResult:
    """Run ``plan`` on the data ``x`` with the random source ``source``."""
    plan = with_key_casts(plan, x)
    if len(plan.entries) == 1:
        result = _run_one(plan, x, source, tabular=tabular)
        if plan.single:
            return result
        return as_query(plan, {plan.entries[0].name: result}, {})
    return _run_several(plan, x, source)


def _run_one(
    plan: QueryPlan, x: Any, source: RandomSource, *, tabular: bool
) -> Release | GroupedRelease:
    """One statistic: the bounds step if any, then the engine's grouped path."""
    entry = plan.entries[0]

    def run(data: Any, stat: Statistic, eps: float) -> Release | GroupedRelease:
        if not tabular:
            return release_column(
                data,
                stat,
                eps,
                plan.delta,
                entry.chosen,
                dict(entry.options),
                plan.neighbours,
                plan.nulls,
                source,
            )
        request = statistic_release(
            plan, entry, source, budget=Budget(epsilon=eps, delta=plan.delta), keys=plan.keys
        )
        return release_table(data, stat, request, source, row_filter=plan.row_filter)

    if plan.bounds is None:
        return run(x, entry.statistic, plan.epsilon)
    assert isinstance(entry.statistic, BoundedStatistic)  # plan_bounds checked it
    with readable_twice(x) as data:
        bounded, receipt = bounds_step(
            plan, data, entry.statistic, plan.bounds, entry.column, source
        )
        result = run(data, bounded, plan.bounds.rest)
    return with_bounds_receipt(
        result, receipt, epsilon=plan.epsilon, delta=plan.delta, release_epsilon=plan.bounds.rest
    )


def _run_several(plan: QueryPlan, x: Any, source: RandomSource) -> QueryResult:
    """Several statistics over one bounded table, in whichever engine reads ``x``
    (module docstring)."""
    plan = with_value_column(plan, x)
    engine = engine_for(x)
    rngs = statistic_sources(source, len(plan.entries))
    with readable_twice(x) as data:
        stats, receipts = with_private_bounds(plan, data, source)
        with opened_query(plan, data) as (opened, values, public):
            # each COUNT(col)'s 0/1 column, hashed and carried by the bounding
            flags = tuple(add_presence(opened, counted_columns(plan)).values())
            rows = QueryRows(
                values=values,
                by=plan.by,
                unit=plan.unit,
                nulls=plan.nulls,
                bounding=(
                    unit_bounding(plan, (*values, *flags), public, source)
                    if plan.unit is not None
                    else None
                ),
            )
            with engine.kept(opened, rows) as kept:
                keys, selection = _shared_groups(plan, kept, source)
                if kept.shares_first_pass:
                    kept.announce(_needs(plan, data, kept.source, stats, source))
                return release_entries(
                    plan, data, stats, receipts, keys, selection, rngs, kept.opened
                )


def _needs(
    plan: QueryPlan, data: Any, rows: Any, stats: dict[str, Statistic], rng: RandomSource
) -> list[tuple[TablePlan, float | None]]:
    """What every statistic reads from its first pass over the kept rows, so that one
    pass serves them all (``tables.engines.duckdb.held_scan``; speed only: each
    statistic's release is what it would be alone on these rows)."""
    needs = []
    for entry in plan.entries:
        if entry.present is not None:
            continue  # a COUNT(col) reads its own rows (tables.presence)
        request = statistic_release(
            plan, entry, rng, budget=Budget(epsilon=entry.epsilon, delta=entry.delta), keys=None
        )
        table, unit_stat, _ = table_plan(
            data, rows, stats[entry.name], request, salt=(0, 0), bound_units=False
        )
        if table.hold:
            needs.append((table, getattr(unit_stat, "p", None)))
    return needs


def _shared_groups(
    plan: QueryPlan, kept: KeptRows, source: RandomSource
) -> tuple[Any, dict[str, Any] | None]:
    """The groups every statistic releases: the public keys, or those private partition
    selection keeps from the kept rows' unit counts (one selection for all)."""
    if not plan.by or plan.selection is None:
        return (plan.keys if plan.by else None), None
    got = kept.unit_counts(plan.by, plan.unit)
    groups = [tuple(r[:-1]) for r in got]
    return select_shared(plan, groups, [int(r[-1]) for r in got], source)
