"""Running a query plan: one bounding, one selection, each statistic, one result.

Every release runs here, a bare statistic as a query of one. The query's seeds are drawn
and its private bounds found here; then the whole query goes down to the tables in one
request (``steps.table_query``), which open the table once, apply ``where`` and check
every column once, bound each unit once over all the query's columns, select the groups
once from the bounded table's unit counts, then run each statistic's release on the
bounded rows at its share of the budget, with the selected groups as its keys
(``tables.query_release``, written once against the engine interface: the draws are the
same, in the same order, whichever engine runs). The receipts and the result are made
here. docs/queries.md derives the total.

A query of one statistic is the same steps with nothing to share, and draws exactly as
its statistic alone: the statistic's random source is the query's own
(:func:`statistic_sources`), its one check and contribution bounding are its engine
pass's (nothing is bounded twice), its groups are its own partition selection's
(``plan.selection`` is None), and its receipt is the query's (the bounds step included).
One column of numbers that is not a table (:func:`reads_column`) is released without an
engine: the method on its clipped values (``query.methods.release_column``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from dpsense.data.source import is_table, readable_twice
from dpsense.methods import Release
from dpsense.noise.rng import RandomSource, SeededRandom
from dpsense.query.bounds_step import mark_private_bounds, with_bounds_receipt
from dpsense.query.joint_merge import split_result
from dpsense.query.methods import release_column
from dpsense.query.plan import QueryPlan, statistic_split
from dpsense.query.result import QueryResult
from dpsense.query.steps import (
    reads_twice,
    table_query,
    typed_table,
    with_private_bounds,
    with_value_column,
)
from dpsense.statistics import Count, Statistic
from dpsense.tables.grouped import GroupedRelease
from dpsense.tables.handle import TableHandle
from dpsense.tables.query_release import release_query

__all__ = ["readable_input", "reads_column", "run_plan", "statistic_sources", "typed_input"]


def reads_column(plan: QueryPlan, x: Any) -> bool:
    """True when ``x`` is released as one column of numbers, without an engine: a bare
    statistic of data that is not a table, whose arguments ask nothing of a table
    (``query.plan.asks_for_table``). Only such a release may use substitute neighbours
    (``release.prepare_release``). The one place this is decided."""
    if isinstance(x, TableHandle):
        return False
    return plan.single and not plan.table_arguments and not is_table(x)


def typed_input(plan: QueryPlan, x: Any) -> tuple[QueryPlan, Any]:
    """What ``plan`` reads: one column of numbers as it is (:func:`reads_column`), a
    table as its handle, every column's type decided once (``steps.typed_table``), with
    ``plan`` carrying the handle's casts. Built once, at the pipeline's door."""
    if reads_column(plan, x):
        return plan, x
    return typed_table(plan, x)


def run_plan(
    plan: QueryPlan, x: Any, source: RandomSource
) -> Release | GroupedRelease | QueryResult:
    """Run ``plan`` on ``x`` (its table's handle, or one column of numbers:
    :func:`typed_input`) with the random source ``source``: the bare statistic's release
    for a bare statistic, else the query's result."""
    column = reads_column(plan, x)
    rngs = statistic_sources(source, len(plan.entries))
    with _readable(plan, x) as data:
        if not column:
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
                entry.interval,
            )
            results, extra = _with_receipts(plan, {entry.name: got}, receipts)
        else:
            results, extra = _on_engine(plan, data, stats, receipts, rngs, source)
    if plan.single:
        return results[plan.entries[0].name]
    return _as_query(plan, results, extra)


def statistic_sources(source: RandomSource, count: int) -> list[RandomSource]:
    """One random source per statistic of a query of ``count``: for a seeded source and
    several statistics, a generator seeded by each of its next ``count`` words (drawn
    first, so each statistic's draws are reproducible on their own); the OS's CSPRNG is
    shared. A statistic alone draws from ``source`` itself, as a bare statistic always
    has (a query of one is its statistic's release, seed for seed)."""
    if not source.seeded or count == 1:
        return [source] * count
    return [SeededRandom(int(w)) for w in source.words(count)]


@contextmanager
def readable_input(x: Any) -> Iterator[Any]:
    """``x`` (a table's handle, or a column: :func:`typed_input`) readable twice
    (``data.source.readable_twice``: standard input copied first)."""
    data = x.data if isinstance(x, TableHandle) else x
    with readable_twice(data) as copy:
        yield x.reading(copy) if isinstance(x, TableHandle) else copy


def _readable(plan: QueryPlan, x: Any) -> AbstractContextManager[Any]:
    """``x``, readable twice when the query reads it twice (``steps.reads_twice``)."""
    return readable_input(x) if reads_twice(plan) else nullcontext(x)


def _on_engine(
    plan: QueryPlan,
    data: Any,
    stats: dict[str, Statistic],
    receipts: dict[str, dict[str, Any]],
    rngs: list[RandomSource],
    source: RandomSource,
) -> tuple[dict[str, Release | GroupedRelease], dict[str, Any]]:
    """Each statistic's release on the query's rows, in one call to the tables
    (``tables.query_release``, whichever engine reads ``data``), and the query's
    receipts."""
    got = release_query(data, table_query(plan, stats, rngs), source)
    results = dict(got.results)
    for merge in plan.merges:  # each statistic of a joint release gets its levels back
        shares = {
            e.name: ((e.epsilon, e.delta), statistic_split(plan, e).per_group)
            for e in plan.entries
            if e.name in merge.names
        }
        joint = split_result(merge, results[merge.names[0]], stats, shares)
        names = [e.name for e in plan.entries if e.name in joint or e.name in results]
        results = {n: joint[n] if n in joint else results[n] for n in names}
    return _with_receipts(plan, results, receipts, got.selection, got.column)


def _with_receipts(
    plan: QueryPlan,
    results: dict[str, Release | GroupedRelease],
    receipts: dict[str, dict[str, Any]],
    selection: dict[str, Any] | None = None,
    found: str | None = None,
) -> tuple[dict[str, Release | GroupedRelease], dict[str, Any]]:
    """The statistics' releases with the bounds they used, and the query's receipts (its
    shared selection, each column's bounds; ``found``: the table's one value column, for
    the statistics that name none). A statistic alone carries the whole guarantee: its
    receipt states the total, the bounds step included (the query's lifts its bounds
    from it, :func:`_as_query`)."""
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
        column = entry.column if entry.column is not None else found
        if column in receipts and not isinstance(entry.statistic, Count):
            # the statistic's receipt names the bounds it used (the bounds step's cost is
            # the query's, in QueryResult.parameters["bounds"])
            out[entry.name] = mark_private_bounds(out[entry.name], receipts[column])
    extra: dict[str, Any] = {} if selection is None else {"selection": selection}
    return out, {**extra, "bounds": receipts}


def _as_query(
    plan: QueryPlan, results: dict[str, Release | GroupedRelease], extra: dict[str, Any]
) -> QueryResult:
    """The query's result: its statistics' releases and the query's receipt."""
    params = {
        **plan.parameters,
        "privacy_unit": plan.unit,
        "max_rows_per_unit": plan.max_rows if plan.unit is not None else 1,
        "max_groups_per_unit": plan.max_groups if plan.unit is not None else 1,
        **extra,
    }
    if plan.row_filter is not None and plan.row_filter.text:
        params["where"] = plan.row_filter.text
    if plan.row_filter is not None and plan.row_filter.computed:
        params["computed"] = {c.name: c.text for c in plan.row_filter.computed}
        params["computed_rule"] = (
            "a row whose grouped or aggregated computed value is missing is dropped"
        )
    if plan.casts:
        params["schema"] = {name: cast.text for name, cast in plan.casts.items()}
        params["schema_rule"] = "a row whose value does not fit its declared type is dropped"
    if len(results) == 1 and plan.bounds is not None:
        only = next(iter(results.values()))
        if "bounds" in only.parameters:
            params["bounds"] = {str(plan.entries[0].column): only.parameters["bounds"]}
    return QueryResult(plan.epsilon, plan.delta, plan.by, results, params)
