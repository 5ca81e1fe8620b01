"""The steps of a query that do not depend on the engine.

:mod:`dpsense.query.run` runs a plan (a bare statistic's is a query of one) on any engine
(``tables.engines``) in one order with the same draws: one seed per statistic (the
caller's source for a statistic alone), the private bounds steps, the engine's checks and
bounding, one partition selection from the bounded rows' unit counts, then each
statistic's grouped release on the bounded rows. The engines differ only in how they read
rows; these are the steps around them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from dpsense._exact_budget import float_up
from dpsense.mechanisms.partition_selection import SelectionRule, select_groups
from dpsense.methods import Release
from dpsense.methods.call import MethodCall
from dpsense.noise.rng import RandomSource, SeededRandom
from dpsense.query.bounds_step import BoundsPlan, bounded_statistic, find_bounds
from dpsense.query.methods import DISPATCH
from dpsense.query.plan import Entry, QueryPlan, statistic_split
from dpsense.query.result import QueryResult
from dpsense.statistics import BoundedStatistic, Count, Statistic
from dpsense.tables.grouped import GroupedRelease, opened_table, release_opened
from dpsense.tables.key_types import check_keys, key_casts
from dpsense.tables.presence import presence_names
from dpsense.tables.request import (
    Budget,
    Grouping,
    PrivacyUnit,
    StatisticRelease,
    normalise_keys,
)
from dpsense.tables.rows.unit_bounding import UnitBounding

__all__ = [
    "as_query",
    "bounds_step",
    "checked_table",
    "counted_columns",
    "opened_query",
    "reads_twice",
    "release_entries",
    "select_shared",
    "statistic_release",
    "statistic_sources",
    "unit_bounding",
    "with_key_casts",
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
        return DISPATCH[entry.chosen](call, **entry.options)

    return one


def statistic_release(
    plan: QueryPlan, entry: Entry, rng: RandomSource, *, budget: Budget, keys: Any
) -> StatisticRelease:
    """The engine's request for one statistic of ``plan`` at ``budget`` with the groups
    ``keys`` (the public keys, or a query's shared selection): among them its budget split
    over its groups, the split the charge prices (``query.plan.statistic_split``)."""
    return StatisticRelease(
        method=entry.chosen,
        column=entry.column,
        budget=budget,
        split=statistic_split(plan, entry),
        grouping=Grouping(by=plan.by, keys=keys),
        unit=PrivacyUnit(column=plan.unit, max_rows=plan.max_rows, max_groups=plan.max_groups),
        nulls=plan.nulls,
        release_one=_release_one(entry, plan, rng),
        schema=plan.casts,
        present=entry.present,
    )


def statistic_sources(source: RandomSource, count: int) -> list[RandomSource]:
    """One random source per statistic of a query of ``count``: for a seeded source and
    several statistics, a generator seeded by each of its next ``count`` words (drawn
    first, so each statistic's draws are reproducible on their own); the OS's CSPRNG is
    shared. A statistic alone draws from ``source`` itself, as a bare statistic always
    has (a query of one is its statistic's release, seed for seed)."""
    if not source.seeded or count == 1:
        return [source] * count
    return [SeededRandom(int(w)) for w in source.words(count)]


def bounds_step(
    plan: QueryPlan,
    data: Any,
    statistic: BoundedStatistic,
    step: BoundsPlan,
    column: str | None,
    source: RandomSource,
) -> tuple[BoundedStatistic, dict[str, Any]]:
    """The private bounds of ``column`` (bounded per unit and filtered as the release)."""
    return find_bounds(
        data,
        statistic,
        step,
        column=column,
        privacy_unit=plan.unit,
        max_rows_per_unit=plan.max_rows,
        nulls=plan.nulls,
        rng=source,
        schema=plan.schema,
        row_filter=plan.row_filter,
    )


def with_private_bounds(
    plan: QueryPlan, data: Any, source: RandomSource
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
        _, receipt = bounds_step(plan, data, first, step, col, source)
        receipts[str(col)] = receipt
        for e in todo:
            assert isinstance(e.statistic, BoundedStatistic)
            stats[e.name] = bounded_statistic(e.statistic, receipt["lower"], receipt["upper"])[0]
    return stats, receipts


def select_shared(
    plan: QueryPlan, groups: list[tuple[Any, ...]], counts: Any, source: RandomSource
) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    """The groups one private partition selection keeps from the bounded rows' unit
    counts (``groups`` in the order of their values), and its receipt."""
    assert plan.selection is not None
    eps_sel, dlt_sel = plan.selection
    g = plan.max_groups if plan.unit is not None else 1
    rule = SelectionRule.for_budget(eps_sel, dlt_sel, g)
    chosen = select_groups(np.asarray(counts, dtype=np.int64), rule, source)
    receipt = {
        "epsilon": eps_sel,
        "delta": dlt_sel,
        "threshold": rule.threshold,
        "scale": float_up(rule.scale),
    }
    return [groups[int(i)] for i in chosen], receipt


def release_entries(
    plan: QueryPlan,
    data: Any,
    stats: dict[str, Statistic],
    keys: Any,
    selection: dict[str, Any] | None,
    rngs: list[RandomSource],
    rows: Callable[[], AbstractContextManager[Any]],
    *,
    prebounded: bool,
) -> dict[str, Release | GroupedRelease]:
    """Each statistic's grouped release on the query's rows (``rows()`` opens them for
    one statistic) at its share, with the shared groups as its keys. ``prebounded``: the
    rows are the query's bounded rows (several statistics); else the statistic's engine
    pass checks and bounds them (a query of one, whose bounding is its statistic's)."""
    results: dict[str, Release | GroupedRelease] = {}
    flags = presence_names(counted_columns(plan))
    for entry, rng in zip(plan.entries, rngs, strict=True):
        request = statistic_release(
            plan, entry, rng, budget=Budget(epsilon=entry.epsilon, delta=entry.delta), keys=keys
        )
        # a COUNT(col) reads the 0/1 column the query derived before bounding
        request = replace(
            request, present=flags[entry.present] if entry.present is not None else None
        )
        with rows() as source:
            got = release_opened(
                data, source, stats[entry.name], request, rng, prebounded=prebounded
            )
        if isinstance(got, GroupedRelease) and selection is not None:
            got = replace(
                got, selection="private", parameters={**got.parameters, "selection": selection}
            )
        results[entry.name] = got
    return results


def as_query(
    plan: QueryPlan, results: dict[str, Release | GroupedRelease], extra: dict[str, Any]
) -> QueryResult:
    params = {
        **plan.parameters,
        "privacy_unit": plan.unit,
        "max_rows_per_unit": plan.max_rows if plan.unit is not None else 1,
        "max_groups_per_unit": plan.max_groups if plan.unit is not None else 1,
        **extra,
    }
    if plan.row_filter is not None:
        params["where"] = plan.row_filter.text
    if plan.casts:
        params["schema"] = {name: cast.text for name, cast in plan.casts.items()}
        params["schema_rule"] = "a row whose value does not fit its declared type is dropped"
    if len(results) == 1 and plan.bounds is not None:
        only = next(iter(results.values()))
        if "bounds" in only.parameters:
            params["bounds"] = {str(plan.entries[0].column): only.parameters["bounds"]}
    return QueryResult(plan.epsilon, plan.delta, plan.by, results, params)


@contextmanager
def opened_query(
    plan: QueryPlan, data: Any
) -> Iterator[tuple[QueryPlan, Any, tuple[str, ...], list[tuple[Any, ...]] | None]]:
    """The table opened in its engine for the query (its schema casts and ``where``
    applied), with the query's plan (the table's one value column given to the statistics
    that name none, found as the table opens), its value columns and its public keys (or
    None). The columns of its ``COUNT(col)`` statistics are checked to exist, not as value
    columns (a missing value in them is what the count counts around)."""
    counted = counted_columns(plan)
    # a query with a COUNT(col) resolves its value column first (with_value_column)
    resolve = bool(_missing_column(plan)) and not counted
    values = tuple(
        dict.fromkeys(
            e.column
            for e in plan.entries
            if e.column is not None and not isinstance(e.statistic, Count)
        )
    )
    public = normalise_keys(plan.keys, plan.by) if plan.keys is not None else None
    with opened_table(
        data,
        tuple(dict.fromkeys((*values, *counted))),
        plan.by,
        plan.unit,
        resolve_value=resolve,
        schema=plan.casts,
        row_filter=plan.row_filter,
    ) as (opened, columns):
        if resolve:
            plan, values = _with_column(plan, columns[0]), (columns[0],)
        yield plan, opened, values, public


def unit_bounding(
    plan: QueryPlan,
    values: tuple[str, ...],
    public: list[tuple[Any, ...]] | None,
    source: RandomSource,
) -> UnitBounding:
    """The query's one contribution bounding, with its secret keys (groups, rows) drawn
    from the query's source in the order both engines draw them."""
    assert plan.unit is not None
    salt = (int(source.words(1)[0] >> np.uint64(1)), int(source.words(1)[0] >> np.uint64(1)))
    groups = plan.max_groups if plan.by else 1
    return UnitBounding(values, plan.by, plan.unit, plan.max_rows, groups, public, salt)


def with_value_column(plan: QueryPlan, x: Any) -> QueryPlan:
    """``plan`` with the table's one value column given to the statistics that name none
    (data of one column, such as an array), for a query that also counts a named column's
    values (``COUNT(col)``); an InputError when the table has several. (Otherwise
    :func:`opened_query` finds it as it opens the table; a query whose statistics name
    columns for some and not others is refused by its plan, ``query.plan.MIXED_COLUMNS``.)
    ``x`` must be readable twice (``data.source.readable_twice``)."""
    if not (_missing_column(plan) and counted_columns(plan)):
        return plan
    with opened_table(x, (), plan.by, plan.unit, resolve_value=True) as (_, (column,)):
        pass
    return _with_column(plan, column)


def reads_twice(plan: QueryPlan) -> bool:
    """True when a query reads its data twice: the private bounds step and the release,
    or :func:`with_value_column` and the release (standard input is then copied first,
    ``data.source.readable_twice``)."""
    return plan.bounds is not None or bool(_missing_column(plan) and counted_columns(plan))


def checked_table(plan: QueryPlan, data: Any) -> QueryPlan:
    """Open ``data`` as the release opens it, read no value, and return ``plan`` with the
    table's one value column given to the statistics that name none.

    Opening checks what a release refuses from the table's columns and the request alone:
    each named column (value columns, ``by``, ``privacy_unit``, ``schema``, the ``where``
    filter's) exists, the value column is the only other one when none is named, the
    schema casts and the filter bind, the public keys read as values of the by-columns'
    (public) types. ``Accountant.release`` runs this before its
    charge (validate, then charge, then release: docs/accounting.md). ``data`` must be
    readable twice (``data.source.readable_twice``)."""
    missing = _missing_column(plan)
    named = (*(e.column for e in plan.entries), *counted_columns(plan))
    values = tuple(dict.fromkeys(c for c in named if c is not None))
    public = normalise_keys(plan.keys, plan.by) if (plan.by and plan.keys is not None) else None
    with opened_table(
        data,
        values,
        plan.by,
        plan.unit,
        resolve_value=bool(missing),
        schema=plan.casts,
        row_filter=plan.row_filter,
    ) as (source, columns):
        if public is not None:
            check_keys(source, plan.by, public)
    return _with_column(plan, columns[0]) if missing else plan


def with_key_casts(plan: QueryPlan, x: Any) -> QueryPlan:
    """``plan`` with its groups formed by a public type: each by-column whose type would be
    inferred from the values of ``x`` (a CSV file, lists, a pandas object column) read as
    text (``tables.key_types``), with public keys or without (else one person's "n/a"
    would turn a column of numbers into text, and split "2015" from "2015.0" for everyone
    else). Decided from ``x``'s kind and declared types and the plan, before anything is
    opened."""
    if not plan.by:
        return plan
    keep = [
        *(e.column for e in plan.entries if e.column is not None),
        *counted_columns(plan),
        *([plan.unit] if plan.unit is not None else []),
        *(plan.row_filter.columns if plan.row_filter is not None else ()),
    ]
    casts = key_casts(x, plan.by, plan.casts, keep=keep)
    return plan if casts == dict(plan.casts) else replace(plan, casts=casts)


def counted_columns(plan: QueryPlan) -> tuple[str, ...]:
    """The columns whose rows with a value a ``COUNT(col)`` of ``plan`` counts."""
    return tuple(dict.fromkeys(e.present for e in plan.entries if e.present is not None))


def _missing_column(plan: QueryPlan) -> list[Entry]:
    """The statistics that read a value and name no column."""
    return [e for e in plan.entries if e.column is None and not isinstance(e.statistic, Count)]


def _with_column(plan: QueryPlan, column: str) -> QueryPlan:
    """``plan`` with ``column`` for every statistic that names none, and for their
    private bounds step (its column was None too)."""
    entries = tuple(
        replace(e, column=column) if e.column is None and not isinstance(e.statistic, Count) else e
        for e in plan.entries
    )
    bounds = tuple(column if c is None else c for c in plan.bounds_columns)
    return replace(plan, entries=entries, bounds_columns=bounds)
