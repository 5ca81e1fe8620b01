"""Running a query plan: one bounding, one selection, each statistic, one result.

Every release runs here, a bare statistic as a query of one. A query opens the table
once, applies ``where`` and checks every column once, bounds each unit once over all the
query's columns, selects the groups once from the bounded table's unit counts, then runs
each statistic's release on the bounded rows at its share of the budget, with the
selected groups as its keys. It is written once against the engine interface
(``tables.engines``): the engine checks and bounds the rows (``duckdb/query_rows.py``,
``spark/query_rows.py``) and counts units per group; the draws are the same, in the same
order, whichever engine runs. docs/queries.md derives the total.

A query of one statistic is the same steps with nothing to share, and draws exactly as
its statistic alone: the statistic's random source is the query's own
(``steps.statistic_sources``), its one check and contribution bounding are its engine
pass's (nothing is bounded twice), its groups are its own partition selection's
(``plan.selection`` is None), and its receipt is the query's (the bounds step included).
One column of numbers that is not a table (:func:`reads_column`) is released without an
engine: the method on its clipped values (``query.methods.release_column``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from typing import Any

from dpsense.data.source import is_table, readable_twice
from dpsense.methods import Release
from dpsense.noise.rng import RandomSource
from dpsense.query.bounds_step import with_bounds_receipt
from dpsense.query.methods import release_column
from dpsense.query.plan import QueryPlan
from dpsense.query.result import QueryResult
from dpsense.query.steps import (
    as_query,
    counted_columns,
    opened_query,
    reads_twice,
    release_entries,
    select_shared,
    statistic_release,
    statistic_sources,
    unit_bounding,
    with_key_casts,
    with_private_bounds,
    with_value_column,
)
from dpsense.statistics import Count, Statistic
from dpsense.tables.engines import KeptRows, engine_for
from dpsense.tables.grouped import GroupedRelease, table_plan
from dpsense.tables.presence import add_presence
from dpsense.tables.request import Budget
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.rows.unit_bounding import QueryRows

__all__ = ["reads_column", "run_plan", "statistic_sources"]


def reads_column(plan: QueryPlan, x: Any) -> bool:
    """True when ``x`` is released as one column of numbers, without an engine: a bare
    statistic of data that is not a table, whose arguments ask nothing of a table
    (``query.plan.asks_for_table``). Only such a release may use substitute neighbours
    (``release.prepare_release``). The one place this is decided."""
    return plan.single and not plan.table_arguments and not is_table(x)


def run_plan(
    plan: QueryPlan, x: Any, source: RandomSource
) -> Release | GroupedRelease | QueryResult:
    """Run ``plan`` on the data ``x`` with the random source ``source``: the bare
    statistic's release for a bare statistic, else the query's result."""
    column = reads_column(plan, x)
    plan = with_key_casts(plan, x)
    rngs = statistic_sources(source, len(plan.entries))
    with _readable(plan, x) as data:
        plan = with_value_column(plan, data)
        stats, receipts = with_private_bounds(plan, data, source)
        if column:
            (entry,) = plan.entries
            got = release_column(
                data,
                stats[entry.name],
                entry.epsilon,
                entry.delta,
                entry.chosen,
                dict(entry.options),
                plan.neighbours,
                plan.nulls,
                source,
            )
            results, extra = _with_receipts(plan, {entry.name: got}, receipts)
        else:
            results, extra = _on_engine(plan, data, stats, receipts, rngs, source)
    if plan.single:
        return results[plan.entries[0].name]
    return as_query(plan, results, extra)


def _readable(plan: QueryPlan, x: Any) -> AbstractContextManager[Any]:
    """``x``, readable twice when the query reads it twice (``steps.reads_twice``)."""
    return readable_twice(x) if reads_twice(plan) else nullcontext(x)


def _on_engine(
    plan: QueryPlan,
    data: Any,
    stats: dict[str, Statistic],
    receipts: dict[str, dict[str, Any]],
    rngs: list[RandomSource],
    source: RandomSource,
) -> tuple[dict[str, Release | GroupedRelease], dict[str, Any]]:
    """Each statistic's release on the query's rows, in whichever engine reads ``data``
    (module docstring), and the query's receipts."""
    with (
        opened_query(plan, data) as (plan, opened, values, public),
        _kept(plan, data, opened, values, public, stats, source) as (keys, selection, rows),
    ):
        results = release_entries(
            plan, data, stats, keys, selection, rngs, rows, prebounded=len(plan.entries) > 1
        )
    return _with_receipts(plan, results, receipts, selection)


@contextmanager
def _kept(
    plan: QueryPlan,
    data: Any,
    opened: Any,
    values: tuple[str, ...],
    public: list[tuple[Any, ...]] | None,
    stats: dict[str, Statistic],
    source: RandomSource,
) -> Iterator[tuple[Any, dict[str, Any] | None, Callable[[], AbstractContextManager[Any]]]]:
    """The query's rows, checked and bounded once for all its statistics, with the groups
    they release (the public keys or one selection's, and its receipt) and how a
    statistic opens them. A query of one shares nothing: its statistic's engine pass
    checks and bounds the opened table, and selects its own groups (``plan.selection`` is
    None), as a bare statistic always has."""
    # each COUNT(col)'s 0/1 column, hashed and carried by the bounding
    flags = tuple(add_presence(opened, counted_columns(plan)).values())
    if len(plan.entries) == 1:
        yield plan.keys, None, lambda: nullcontext(opened)
        return
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
    with engine_for(data).kept(opened, rows) as kept:
        keys, selection = _shared_groups(plan, kept, source)
        if kept.shares_first_pass:
            kept.announce(_needs(plan, data, kept.source, stats, source))
        yield keys, selection, kept.opened


def _with_receipts(
    plan: QueryPlan,
    results: dict[str, Release | GroupedRelease],
    receipts: dict[str, dict[str, Any]],
    selection: dict[str, Any] | None = None,
) -> tuple[dict[str, Release | GroupedRelease], dict[str, Any]]:
    """The statistics' releases with the bounds they used, and the query's receipts (its
    shared selection, each column's bounds). A statistic alone carries the whole
    guarantee: its receipt states the total, the bounds step included (the query's
    lifts its bounds from it, ``steps.as_query``)."""
    if not receipts:
        return results, {} if selection is None else {"selection": selection}
    if len(results) == 1:
        assert plan.bounds is not None
        (name, got), (receipt,) = next(iter(results.items())), receipts.values()
        whole = with_bounds_receipt(
            got, receipt, epsilon=plan.epsilon, delta=plan.delta, release_epsilon=plan.bounds.rest
        )
        return {name: whole}, {}
    out = dict(results)
    for entry in plan.entries:
        if entry.column in receipts and not isinstance(entry.statistic, Count):
            # the statistic's receipt names the bounds it used (the bounds step's cost is
            # the query's, in QueryResult.parameters["bounds"])
            got = out[entry.name]
            out[entry.name] = replace(
                got, parameters={**got.parameters, "bounds": receipts[entry.column]}
            )
    extra: dict[str, Any] = {} if selection is None else {"selection": selection}
    return out, {**extra, "bounds": receipts}


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
