"""A query's rows, released in one call: one open, one check, one bounding, one selection,
then each statistic's grouped release.

The query layer (``query.run``) plans and prices a query and hands it down whole as a
:class:`~dpsense.tables.request.TableQuery`; :func:`release_query` opens the table once
(the schema casts and ``where`` applied, every column checked, the one value column found
when the statistics name none), adds each ``COUNT(col)``'s 0/1 column
(``tables.presence``), bounds each unit once over all the query's columns in whichever
engine reads the data (``tables.engines``), selects the groups once from the bounded
rows' unit counts, then runs each statistic's grouped release
(``tables.grouped.release_opened``) on the bounded rows at its share, with the selected
groups as its keys. The draws are the same, in the same order, whichever engine runs:
the bounding's two secret keys and the selection from the query's source, then each
statistic's release from its own.

A query of one statistic shares nothing: its statistic's engine pass checks and bounds
the opened table and selects its own groups (``TableQuery.selection`` is None), as a bare
statistic always has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpsense.mechanisms.partition_selection import SelectionRule, select_groups
from dpsense.methods import Release
from dpsense.noise.rng import RandomSource
from dpsense.statistics import Count
from dpsense.statistics.units import counts_units
from dpsense.tables.engines import KeptRows
from dpsense.tables.grouped import (
    GroupedRelease,
    opened_table,
    release_opened,
    selection_receipt,
    table_plan,
    unit_salt,
)
from dpsense.tables.handle import TableHandle
from dpsense.tables.presence import add_presence, presence_names
from dpsense.tables.request import TableQuery, normalise_keys, signless_zero
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.rows.unit_bounding import QueryRows, UnitBounding

__all__ = ["QueryReleases", "release_query"]


@dataclass(frozen=True)
class QueryReleases:
    """What a query's rows released: each statistic's release by name (in the query's
    order), the shared selection's receipt (None without one), and the table's one value
    column when the statistics named none (found as the table opened; else None)."""

    results: dict[str, Release | GroupedRelease]
    selection: dict[str, Any] | None
    column: str | None


def release_query(handle: TableHandle, query: TableQuery, source: RandomSource) -> QueryReleases:
    """Each statistic of ``query`` released on the rows of the table ``handle`` (module
    docstring; its engine, casts and column types); ``source`` is the query's random
    source (its bounding and its selection)."""
    with (
        _opened(handle, query) as (query, opened, values, public, column),
        _kept(handle, query, opened, values, public, source) as (keys, selection, rows),
    ):
        results = _release_each(
            handle, query, keys, selection, rows, prebounded=_shares_rows(query)
        )
    return QueryReleases(results, selection, column)


def _shares_rows(query: TableQuery) -> bool:
    """Whether the query's statistics share one bounding and one selection: several
    statistics, or one release of several statistics' levels with their shared
    selection (``query.joint_merge``); a query of one shares nothing."""
    return len(query.statistics) > 1 or query.selection is not None


def _counted(query: TableQuery) -> tuple[str, ...]:
    """The columns whose rows with a value a ``COUNT(col)`` of ``query`` counts."""
    present = (s.request.present for s in query.statistics)
    return tuple(dict.fromkeys(c for c in present if c is not None))


@contextmanager
def _opened(
    handle: TableHandle, query: TableQuery
) -> Iterator[tuple[TableQuery, Any, tuple[str, ...], list[tuple[Any, ...]] | None, str | None]]:
    """The table opened in its engine for the query (the handle's casts and ``where``
    applied), with the query (the table's one value column given to the statistics that
    name none, found as the table opens), its value columns, its public keys (or None)
    and the value column found (or None). The columns of its ``COUNT(col)`` statistics
    are checked to exist, not as value columns (a missing value in them is what the count
    counts around)."""
    counted = _counted(query)
    # a query with a COUNT(col) had its value column found before (query.steps)
    resolve = bool(_missing_column(query)) and not counted
    values = tuple(
        dict.fromkeys(
            s.request.column
            for s in query.statistics
            if s.request.column is not None and not isinstance(s.statistic, Count)
        )
    )
    by, keys = query.grouping.by, query.grouping.keys
    public = normalise_keys(keys, by) if keys is not None else None
    with opened_table(
        handle,
        tuple(dict.fromkeys((*values, *counted))),
        by,
        query.unit.column,
        resolve_value=resolve,
        row_filter=query.row_filter,
    ) as (opened, columns):
        if resolve:
            query, values = _with_column(query, columns[0]), (columns[0],)
        yield query, opened, values, public, columns[0] if resolve else None


def _missing_column(query: TableQuery) -> list[str]:
    """The statistics that read a value and name no column."""
    return [
        s.name
        for s in query.statistics
        if s.request.column is None and not isinstance(s.statistic, Count)
    ]


def _with_column(query: TableQuery, column: str) -> TableQuery:
    """``query`` with ``column`` for every statistic that names none."""
    statistics = tuple(
        replace(s, request=replace(s.request, column=column))
        if s.request.column is None and not isinstance(s.statistic, Count)
        else s
        for s in query.statistics
    )
    return replace(query, statistics=statistics)


@contextmanager
def _kept(
    handle: TableHandle,
    query: TableQuery,
    opened: Any,
    values: tuple[str, ...],
    public: list[tuple[Any, ...]] | None,
    source: RandomSource,
) -> Iterator[tuple[Any, dict[str, Any] | None, Callable[[], AbstractContextManager[Any]]]]:
    """The query's rows, checked and bounded once for all its statistics, with the groups
    they release (the public keys or one selection's, and its receipt) and how a
    statistic opens them. A query of one shares nothing (module docstring)."""
    # each COUNT(col)'s 0/1 column, hashed and carried by the bounding
    flags = tuple(add_presence(opened, _counted(query)).values())
    if not _shares_rows(query):
        yield query.grouping.keys, None, lambda: nullcontext(opened)
        return
    rows = QueryRows(
        values=values,
        by=query.grouping.by,
        unit=query.unit.column,
        nulls=query.nulls,
        bounding=(
            _unit_bounding(query, (*values, *flags), public, source)
            if query.unit.column is not None
            else None
        ),
    )
    with handle.engine.kept(opened, rows) as kept:
        keys, selection = _shared_groups(query, kept, source)
        if kept.shares_first_pass:
            kept.announce(_needs(query, handle))
        yield keys, selection, kept.opened


def _unit_bounding(
    query: TableQuery,
    values: tuple[str, ...],
    public: list[tuple[Any, ...]] | None,
    source: RandomSource,
) -> UnitBounding:
    """The query's one contribution bounding, with its secret keys (groups, rows) drawn
    from the query's source in the order both engines draw them."""
    unit, by = query.unit, query.grouping.by
    assert unit.column is not None
    salt = unit_salt(source)
    groups = unit.max_groups if by else 1
    return UnitBounding(values, by, unit.column, unit.max_rows, groups, public, salt)


def _shared_groups(
    query: TableQuery, kept: KeptRows, source: RandomSource
) -> tuple[Any, dict[str, Any] | None]:
    """The groups every statistic releases: the public keys, or those private partition
    selection keeps from the kept rows' unit counts (one selection for all)."""
    by = query.grouping.by
    if not by or query.selection is None:
        return (query.grouping.keys if by else None), None
    got = kept.unit_counts(by, query.unit.column)
    groups = [signless_zero(tuple(r[:-1])) for r in got]
    return _select_shared(query, groups, [int(r[-1]) for r in got], source)


def _select_shared(
    query: TableQuery, groups: list[tuple[Any, ...]], counts: Any, source: RandomSource
) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    """The groups one private partition selection keeps from the bounded rows' unit
    counts (``groups`` in the order of their values), and its receipt."""
    assert query.selection is not None
    eps_sel, dlt_sel = query.selection
    g = query.unit.max_groups if query.unit.column is not None else 1
    rule = SelectionRule.for_budget(eps_sel, dlt_sel, g)
    chosen = select_groups(np.asarray(counts, dtype=np.int64), rule, source)
    return [groups[int(i)] for i in chosen], selection_receipt(rule, eps_sel, dlt_sel)


def _needs(query: TableQuery, handle: TableHandle) -> list[tuple[TablePlan, float | None]]:
    """What every statistic reads from its first pass over the kept rows, so that one
    pass serves them all (``tables.engines.duckdb.held_scan``; speed only: each
    statistic's release is what it would be alone on these rows)."""
    needs = []
    for s in query.statistics:
        if s.request.present is not None or counts_units(s.statistic):
            continue  # a COUNT(col) reads its own rows (tables.presence); a count of the
            # units bounds the kept rows by the unit (tables.grouped.table_plan)
        table, unit_stat, _ = table_plan(
            handle, s.statistic, s.request, salt=(0, 0), bound_units=False
        )
        if table.hold:
            needs.append((table, getattr(unit_stat, "p", None)))
    return needs


def _release_each(
    handle: TableHandle,
    query: TableQuery,
    keys: Any,
    selection: dict[str, Any] | None,
    rows: Callable[[], AbstractContextManager[Any]],
    *,
    prebounded: bool,
) -> dict[str, Release | GroupedRelease]:
    """Each statistic's grouped release on the query's rows (``rows()`` opens them for
    one statistic) at its share, with the shared groups as its keys. ``prebounded``: the
    rows are the query's bounded rows (several statistics); else the statistic's engine
    pass checks and bounds them (a query of one, whose bounding is its statistic's)."""
    results: dict[str, Release | GroupedRelease] = {}
    flags = presence_names(_counted(query))
    for s in query.statistics:
        present = s.request.present
        request = replace(
            s.request,
            grouping=replace(s.request.grouping, keys=keys),
            # a COUNT(col) reads the 0/1 column the query derived before bounding
            present=flags[present] if present is not None else None,
        )
        with rows() as opened:
            got = release_opened(handle, opened, s.statistic, request, s.rng, prebounded=prebounded)
        if isinstance(got, GroupedRelease) and selection is not None:
            got = replace(
                got, selection="private", parameters={**got.parameters, "selection": selection}
            )
        results[s.name] = got
    return results
