"""Running a query plan: one bounding, one selection, each statistic, one result.

A bare statistic (or a dict of one) runs the engine's grouped path as it always has. A
query of several statistics opens the table once, applies ``where`` and checks every
column once, bounds each unit once over all the query's columns
(:mod:`dpsense.query.bounding`), selects the groups once from the bounded table's unit
counts, then runs each statistic's release on the bounded rows at its share of the
budget, with the selected groups as its keys. docs/queries.md derives the total.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dpsense.bounds_in_release import (
    readable_twice,
    with_bounds_receipt,
)
from dpsense.methods import Release
from dpsense.noise.rng import RandomSource
from dpsense.query.bounding import BOUNDED, bound_rows, checked_rows
from dpsense.query.methods import release_column
from dpsense.query.plan import QueryPlan
from dpsense.query.result import QueryResult
from dpsense.query.steps import (
    as_query,
    bounds_step,
    counted_columns,
    engine_arguments,
    opened_query,
    release_entries,
    select_shared,
    statistic_sources,
    unit_bounding,
    with_key_casts,
    with_private_bounds,
    with_value_column,
)
from dpsense.statistics import BoundedStatistic, Statistic
from dpsense.tables.grouped import (
    GroupedRelease,
    release_table,
    table_plan,
)
from dpsense.tables.held_scan import ScanNeed, announce
from dpsense.tables.presence import add_presence
from dpsense.tables.source import TableSource, quote
from dpsense.tables.spark import is_spark_frame

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
    if is_spark_frame(x):
        from dpsense.query.spark_run import run_several_spark  # imports this module

        return run_several_spark(plan, x, source)
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
        return release_table(
            data,
            stat,
            epsilon=eps,
            delta=plan.delta,
            keys=plan.keys,
            row_filter=plan.row_filter,
            **engine_arguments(plan, entry, source),
        )

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


def _new_temp_objects(con: Any, before: set[str]) -> list[tuple[str, str]]:
    rows = con.execute(
        "SELECT table_name, 'TABLE' FROM duckdb_tables() WHERE temporary "
        "UNION ALL SELECT view_name, 'VIEW' FROM duckdb_views() WHERE temporary AND NOT internal"
    ).fetchall()
    return [(str(n), str(k)) for n, k in rows if str(n) not in before]


@contextmanager
def _scratch(con: Any) -> Iterator[None]:
    """Drop the temporary tables and views a statistic's engine pass creates, so the next
    statistic runs in the same connection on the same bounded rows."""
    before = {n for n, _ in _new_temp_objects(con, set())}
    try:
        yield
    finally:
        for name, kind in _new_temp_objects(con, before):
            con.execute(f"DROP {kind} IF EXISTS {quote(name)}")


def _run_several(plan: QueryPlan, x: Any, source: RandomSource) -> QueryResult:
    """Several statistics over one bounded table (module docstring)."""
    plan = with_value_column(plan, x)
    rngs = statistic_sources(source, len(plan.entries))
    with readable_twice(x) as data:
        stats, receipts = with_private_bounds(plan, data, source)
        with opened_query(plan, data) as (opened, values, public):
            # each COUNT(col)'s 0/1 column, hashed and carried by the bounding
            flags = tuple(add_presence(opened, counted_columns(plan)).values())
            # with every row a unit and missing values an error, each statistic's first
            # pass checks its columns (one pass shared by all, tables.held_scan): the
            # same errors, without a pass of their own
            skip = plan.unit is None and plan.nulls == "error"
            keep = "TRUE" if skip else checked_rows(opened, values, plan.by, plan.unit, plan.nulls)
            con = opened.con
            if plan.unit is not None:
                bounding = unit_bounding(plan, (*values, *flags), public, source)
                bound_rows(opened, bounding, keep=keep)
            else:
                con.execute(
                    f"CREATE TEMP VIEW {BOUNDED} AS SELECT * FROM {opened.view} WHERE {keep}"
                )
            keys, selection = _shared_groups(plan, con, public, source)
            rows = TableSource(
                con, BOUNDED, opened.columns, opened.label, declared_types=opened.declared_types
            )
            rows.columns = [c for c in opened.columns]
            _announce(plan, data, rows, stats)

            @contextmanager
            def bounded() -> Iterator[TableSource]:
                with _scratch(con):
                    yield rows

            return release_entries(plan, data, stats, receipts, keys, selection, rngs, bounded)


def _announce(plan: QueryPlan, data: Any, rows: TableSource, stats: dict[str, Statistic]) -> None:
    """Tell the engine what every statistic reads from its first pass over the bounded
    rows, so that one pass serves them all (``tables.held_scan``; speed only: each
    statistic's release is what it would be alone on these rows)."""
    m = plan.max_rows if plan.unit is not None else 1
    g = plan.max_groups if (plan.unit is not None and plan.by) else 1
    needs = []
    for entry in plan.entries:
        if entry.present is not None:
            continue  # a COUNT(col) reads its own rows (tables.presence)
        table, unit_stat, _ = table_plan(
            data,
            rows,
            stats[entry.name],
            method=entry.chosen,
            column=entry.column,
            by=plan.by,
            unit=None,
            m=m,
            g=g,
            nulls=plan.nulls,
            salt=(0, 0),
            schema=plan.casts,
        )
        if table.hold:
            needs.append(ScanNeed.of(table, getattr(unit_stat, "p", None)))
    announce(rows, needs)


def _shared_groups(
    plan: QueryPlan, con: Any, public: list[tuple[Any, ...]] | None, source: RandomSource
) -> tuple[Any, dict[str, Any] | None]:
    """The groups every statistic releases: the public keys, or those private partition
    selection keeps from the bounded table's unit counts (one selection for all)."""
    if not plan.by or plan.selection is None:
        return (plan.keys if plan.by else None), None
    by = ", ".join(quote(b) for b in plan.by)
    units = "count(DISTINCT (" + quote(plan.unit) + "))" if plan.unit is not None else "count(*)"
    got = con.execute(
        f"SELECT {by}, {units}::BIGINT FROM {BOUNDED} GROUP BY ALL ORDER BY {by}"
    ).fetchall()
    groups = [tuple(r[:-1]) for r in got]
    return select_shared(plan, groups, [int(r[-1]) for r in got], source)
