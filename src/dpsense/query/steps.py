"""The steps of a query on the query's side of the tables.

:mod:`dpsense.query.run` runs a plan (a bare statistic's is a query of one) in one order
with the same draws: one seed per statistic (``run.statistic_sources``), the private
bounds steps, then the whole query handed to the tables as one request
(:func:`table_query`, released by ``tables.query_release``: the checks and bounding, one
partition selection, each statistic's grouped release). These are the steps around that
call: the table's handle (its engine, casts and column types, decided once:
:func:`typed_table`), the value column, the bounds, the requests.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dpsense.methods import Release
from dpsense.methods._release import with_covers
from dpsense.methods.call import MethodCall
from dpsense.noise.rng import RandomSource
from dpsense.query.bounds_step import BoundsPlan, bounded_statistic, find_bounds, served
from dpsense.query.joint_merge import merge_of, merged_entry, merged_statistic
from dpsense.query.methods import run_method
from dpsense.query.plan import Entry, QueryPlan, statistic_split
from dpsense.statistics import BoundedStatistic, Count, Statistic
from dpsense.tables.grouped import opened_table
from dpsense.tables.handle import TableHandle, table_handle
from dpsense.tables.key_types import check_keys
from dpsense.tables.request import (
    Budget,
    Grouping,
    PrivacyUnit,
    QueryStatistic,
    StatisticRelease,
    TableQuery,
    normalise_keys,
)

__all__ = [
    "checked_table",
    "counted_columns",
    "reads_twice",
    "statistic_release",
    "table_query",
    "typed_table",
    "with_column",
    "with_private_bounds",
    "with_value_column",
]


def _release_one(entry: Entry, plan: QueryPlan, rng: RandomSource) -> Any:
    """The engine's per-group callback for ``entry``: its method, with its own draws."""

    def one(values: Any, stat: Statistic, eps: float, dlt: float) -> Release:
        call = MethodCall(
            records=values,
            statistic=stat,
            epsilon=eps,
            delta=dlt,
            neighbours=plan.neighbours,
            rng=rng,
        )
        got = run_method(entry.chosen, call, dict(entry.options), entry.interval)
        return with_covers(got, stat, plan.max_rows if plan.unit is not None else None)

    return one


def statistic_release(plan: QueryPlan, entry: Entry, rng: RandomSource) -> StatisticRelease:
    """The engine's request for one statistic of ``plan`` at its share, with the query's
    public keys (the tables replace them by a shared selection's groups): among them its
    budget split over its groups, the split the charge prices
    (``query.plan.statistic_split``), and its method's release of a group."""
    return StatisticRelease(
        method=entry.chosen,
        column=entry.column,
        budget=Budget(epsilon=entry.epsilon, delta=entry.delta),
        split=statistic_split(plan, entry),
        grouping=Grouping(by=plan.by, keys=plan.keys),
        unit=_unit(plan),
        nulls=plan.nulls,
        release_one=_release_one(entry, plan, rng),
        present=entry.present,
    )


def table_query(
    plan: QueryPlan, stats: dict[str, Statistic], rngs: list[RandomSource]
) -> TableQuery:
    """The whole query as the tables release it (``tables.query_release``): each
    statistic with the bounds it releases with (``stats``), its request and its random
    source (``rngs``, in the query's order), and what its statistics share."""
    return TableQuery(
        statistics=tuple(
            QueryStatistic(
                name=e.name,
                statistic=stat,
                request=statistic_release(plan, e, rng),
                rng=rng,
            )
            for e, stat, rng in _released(plan, stats, rngs)
        ),
        grouping=Grouping(by=plan.by, keys=plan.keys),
        unit=_unit(plan),
        nulls=plan.nulls,
        row_filter=plan.row_filter,
        selection=plan.selection,
    )


def _released(
    plan: QueryPlan, stats: dict[str, Statistic], rngs: list[RandomSource]
) -> list[tuple[Entry, Statistic, RandomSource]]:
    """What the tables release, in the query's order: each statistic with its bounds and
    random source, a joint release of several (``plan.merges``) in its first member's
    place, with that member's source (``query.joint_merge``)."""
    out = []
    for e, rng in zip(plan.entries, rngs, strict=True):
        merge = merge_of(plan.merges, e.name)
        if merge is None:
            out.append((e, stats[e.name], rng))
        elif merge.names[0] == e.name:
            out.append((merged_entry(merge, plan.entries), merged_statistic(merge, stats), rng))
    return out


def _unit(plan: QueryPlan) -> PrivacyUnit:
    """The query's privacy unit and its contribution bounds."""
    return PrivacyUnit(column=plan.unit, max_rows=plan.max_rows, max_groups=plan.max_groups)


def with_private_bounds(
    plan: QueryPlan, handle: TableHandle, source: RandomSource
) -> tuple[dict[str, Statistic], dict[str, dict[str, Any]]]:
    """Each statistic with the bounds it releases with: for ``bounds="private"``, one
    private bounds step per column that needs them (shared by that column's statistics);
    and each column's bounds receipt."""
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
        serve = served([e.statistic for e in todo])
        _, receipt = find_bounds(plan, handle, first, step, col, source, serve)
        receipts[str(col)] = receipt
        for e in todo:
            assert isinstance(e.statistic, BoundedStatistic)
            stats[e.name] = bounded_statistic(e.statistic, receipt["lower"], receipt["upper"])[0]
    return stats, receipts


def with_value_column(plan: QueryPlan, handle: TableHandle) -> QueryPlan:
    """``plan`` with the table's one value column given to the statistics that name none
    (data of one column, such as an array), for a query that also counts a named column's
    values (``COUNT(col)``); an InputError when the table has several. (Otherwise the
    tables find it as they open it, ``tables.query_release``; a query whose statistics
    name columns for some and not others is refused by its plan,
    ``query._plan_items.MIXED_COLUMNS``.)
    ``handle``'s data must be readable twice (``data.source.readable_twice``)."""
    if not (_missing_column(plan) and counted_columns(plan)):
        return plan
    with opened_table(handle, (), plan.by, plan.unit, resolve_value=True) as (_, (column,)):
        pass
    return with_column(plan, column)


def reads_twice(plan: QueryPlan) -> bool:
    """True when a query reads its data twice: the private bounds step and the release,
    or :func:`with_value_column` and the release (standard input is then copied first,
    ``data.source.readable_twice``)."""
    return plan.bounds is not None or bool(_missing_column(plan) and counted_columns(plan))


def checked_table(plan: QueryPlan, handle: TableHandle) -> QueryPlan:
    """Open the table ``handle`` as the release opens it, read no value, and return
    ``plan`` with the table's one value column given to the statistics that name none.

    Opening checks what a release refuses from the table's columns and the request alone:
    each named column (value columns, ``by``, ``privacy_unit``, ``schema``, the ``where``
    filter's) exists, the value column is the only other one when none is named, the
    schema casts and the filter bind, the public keys read as values of the by-columns'
    (public) types. ``Accountant.release`` runs this before its
    charge (validate, then charge, then release: docs/accounting.md). ``handle``'s data
    must be readable twice (``data.source.readable_twice``)."""
    missing = _missing_column(plan)
    named = (*(e.column for e in plan.entries), *counted_columns(plan))
    values = tuple(dict.fromkeys(c for c in named if c is not None))
    public = normalise_keys(plan.keys, plan.by) if (plan.by and plan.keys is not None) else None
    with opened_table(
        handle,
        values,
        plan.by,
        plan.unit,
        resolve_value=bool(missing),
        row_filter=plan.row_filter,
    ) as (source, columns):
        if public is not None:
            check_keys(handle, source, plan.by, public)
    return with_column(plan, columns[0]) if missing else plan


def typed_table(plan: QueryPlan, x: Any) -> tuple[QueryPlan, TableHandle]:
    """The table ``x`` typed once for ``plan`` (``tables.handle``), and ``plan`` with the
    handle's casts (its receipt states them): its groups and its units told apart by a
    public type, each by-column and the privacy unit column whose type would be inferred
    from the values of ``x`` (a CSV file, lists, a pandas object column) read as text
    (``tables.key_types``), with public keys or without. Otherwise one person's "n/a"
    would turn a column of numbers into text, and split "2015" from "2015.0" for everyone
    else; for the unit, ids "1" and "1.0" would be one person until someone's id "abc"
    made them two (docs/entry_points.md, "Types"). Decided from ``x``'s kind and declared
    types and the plan, before any row is read."""
    keyed = (*plan.by, *([plan.unit] if plan.unit is not None else []))
    keep = [
        *(e.column for e in plan.entries if e.column is not None),
        *counted_columns(plan),
        *(plan.row_filter.columns if plan.row_filter is not None else ()),
        # a computed column is typed by binding its expression (tables.row_map)
        *(c.name for c in (plan.row_filter.computed if plan.row_filter is not None else ())),
    ]
    handle = table_handle(x, plan.casts, keyed=keyed, keep=keep, unit=plan.unit)
    casts = dict(handle.casts)
    return (plan if casts == dict(plan.casts) else replace(plan, casts=casts)), handle


def counted_columns(plan: QueryPlan) -> tuple[str, ...]:
    """The columns whose rows with a value a ``COUNT(col)`` of ``plan`` counts."""
    return tuple(dict.fromkeys(e.present for e in plan.entries if e.present is not None))


def _missing_column(plan: QueryPlan) -> list[Entry]:
    """The statistics that read a value and name no column."""
    return [e for e in plan.entries if e.column is None and not isinstance(e.statistic, Count)]


def with_column(plan: QueryPlan, column: str) -> QueryPlan:
    """``plan`` with ``column`` for every statistic that names none, and for their
    private bounds step (its column was None too)."""
    entries = tuple(
        replace(e, column=column) if e.column is None and not isinstance(e.statistic, Count) else e
        for e in plan.entries
    )
    bounds = tuple(column if c is None else c for c in plan.bounds_columns)
    return replace(plan, entries=entries, bounds_columns=bounds)
