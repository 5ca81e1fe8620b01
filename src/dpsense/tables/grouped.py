"""The orchestration of a table release (``GroupedRelease``, its result, lives in
``grouped_result``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np

from dpsense._exact_budget import float_up
from dpsense.errors import Assign, InputError, undeclared_filter_columns
from dpsense.mechanisms.partition_selection import SelectionRule, select_groups
from dpsense.methods import Release
from dpsense.noise.rng import RandomSource
from dpsense.statistics import (
    BoundedStatistic,
    Count,
    Mean,
    Quantile,
    Statistic,
    Sum,
)
from dpsense.statistics.units import counted_rows, counts_units, per_unit
from dpsense.tables.grouped_result import GroupedRelease, rows_frame
from dpsense.tables.handle import TableHandle, table_handle
from dpsense.tables.presence import present_rows
from dpsense.tables.request import (
    BudgetSplit,
    PrivacyUnit,
    StatisticRelease,
    normalise_keys,
    signless_zero,
)
from dpsense.tables.row_filter import RowFilter
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.schema import Cast, schema_resolution

__all__ = [
    "GroupedRelease",
    "bounded_values",
    "held_or_values",
    "opened_table",
    "reads_held",
    "release_opened",
    "rows_frame",
    "selection_receipt",
    "table_plan",
    "unit_salt",
]


def release_opened(
    handle: TableHandle,
    source: Any,
    statistic: Statistic,
    request: StatisticRelease,
    rng: RandomSource,
    *,
    prebounded: bool = False,
) -> Release | GroupedRelease:
    """Bound, group and release ``statistic`` of a table already opened as ``source``
    (``handle`` is the user's table, its engine and its columns' types; the engine work
    in its engine, the noise in Python). The query layer runs several statistics over
    one bounded table through this, one at a time, with ``prebounded``: each unit of
    ``source`` already has at most ``request.unit.max_groups`` groups and
    ``request.unit.max_rows`` rows in each, so the engine skips its own bounding (which would
    keep every row) and reads the rows as they are; the group privacy still counts ``m``
    rows and ``g`` groups per unit.

    ``request.split`` is how ``request.budget`` is spent (``query.plan.statistic_split``, the
    split the zCDP charge prices): it is never recomputed here from ``keys``, which after
    a query's shared selection are the selected groups, whose number is data.

    ``request.present`` names a 0/1 column of ``source`` (``tables.presence.add_presence``): a
    count then counts only the rows where it is 1 (SQL ``COUNT(col)``)."""
    if request.present is not None:
        source = present_rows(source, request.present)
    by, unit = request.grouping.by, request.unit
    g = unit.groups_bound(bool(by))
    keys = request.grouping.keys
    public = normalise_keys(keys, by) if (by and keys is not None) else None
    salt = unit_salt(rng)
    plan, unit_stat, resolution = table_plan(
        handle, statistic, request, salt=salt, bound_units=not prebounded
    )
    table = handle.engine.bound(source, plan, public)
    params: dict[str, Any] = {**unit.receipt(bool(by)), **resolution}
    chosen = _selected_groups(table, request.split, g, rng, params)
    eps_g, dlt_g = request.split.per_group
    params["per_group"] = {"epsilon": eps_g, "delta": dlt_g}
    out: dict[Any, Release] = {}
    for gid, values in table.values([int(i) for i in chosen], histograms=True):
        key = signless_zero(table.keys[gid]) if public is None else table.keys[gid]
        records = held_or_values(values, unit_stat, request.method)
        rel = request.release_one(records, unit_stat, eps_g, dlt_g)
        out[key if len(by) > 1 else (key[0] if by else None)] = _noted(rel, unit, resolution)
    if not by:
        return out[None]
    # public keys keep the caller's order; privately selected groups are sorted
    ordered = (
        out if public is not None else dict(sorted(out.items(), key=lambda kv: _sort_key(kv[0])))
    )
    return GroupedRelease(
        request.budget.epsilon,
        request.budget.delta,
        by,
        "public keys" if public is not None else "private",
        ordered,
        params,
    )


def _selected_groups(
    table: Any, split: BudgetSplit, g: int, rng: RandomSource, params: dict[str, Any]
) -> np.ndarray:
    """The groups released: every group of ``table`` (public keys, or no groups), or those
    private partition selection keeps from the unit counts at ``split.selection``, whose
    receipt goes into ``params``."""
    if split.selection is None:
        return np.arange(len(table.keys))
    eps_sel, dlt_sel = split.selection
    rule = SelectionRule.for_budget(eps_sel, dlt_sel, g)
    chosen = select_groups(table.units, rule, rng)
    params["selection"] = selection_receipt(rule, eps_sel, dlt_sel)
    return chosen


def unit_salt(rng: RandomSource) -> tuple[int, int]:
    """The secret keys of a contribution bounding's keyed hashes (the unit's groups, then
    its rows), drawn in this order by every engine and path."""
    return (int(rng.words(1)[0] >> np.uint64(1)), int(rng.words(1)[0] >> np.uint64(1)))


def selection_receipt(rule: SelectionRule, epsilon: float, delta: float) -> dict[str, Any]:
    """What a private partition selection's receipt states (public: its budget, its
    threshold and its noise scale, rounded up)."""
    return {
        "epsilon": epsilon,
        "delta": delta,
        "threshold": rule.threshold,
        "scale": float_up(rule.scale),
    }


def _noted(rel: Release, unit: PrivacyUnit, resolution: dict[str, Any]) -> Release:
    """A group's release with the unit's contribution bound (when a unit has several
    rows) and where the resolution came from, on its receipt."""
    if unit.rows_bound > 1:
        rel = _with_unit_note(rel, unit.column, unit.rows_bound)
    if "resolution_source" in resolution:
        rel = _with_resolution_source(rel, resolution["resolution_source"])
    return rel


def table_plan(
    handle: TableHandle,
    statistic: Statistic,
    request: StatisticRelease,
    *,
    salt: tuple[int, int],
    bound_units: bool = True,
) -> tuple[TablePlan, Statistic, dict[str, Any]]:
    """The engine's plan of a release of ``statistic`` (with the resolution the column's
    declared type gives a quantile), the statistic per unit that the method releases, and
    the resolution's receipt. Without ``bound_units`` (rows a query bounded already) the
    engine keeps every row of a unit.

    A count of the units (``Count(distinct_units=True)``) is bounded at one row per unit
    and group, always by the unit (also on rows a query bounded: a unit has at most g
    groups there, so the engine keeps them all), so that each group's count is its number
    of kept (unit, group) pairs, its distinct units (docs/joins.md §4)."""
    column, by, unit = request.column, request.grouping.by, request.unit
    m = counted_rows(statistic, unit.rows_bound)
    bound_units = bound_units or counts_units(statistic)
    declared = handle.declared(column) if column else None
    statistic, resolution = schema_resolution(statistic, declared)
    lower = statistic.lower if isinstance(statistic, BoundedStatistic) else None
    upper = statistic.upper if isinstance(statistic, BoundedStatistic) else None
    unit_stat = per_unit(statistic, m)
    plan = TablePlan(
        column if not isinstance(statistic, Count) else None,
        by,
        unit.column if bound_units else None,
        m,
        unit.groups_bound(bool(by)),
        request.nulls,
        lower,
        upper,
        salt,
        hold=_hold(unit_stat, request.method),
    )
    return plan, unit_stat, resolution


@contextmanager
def opened_table(
    handle: TableHandle,
    columns: Sequence[str],
    by: tuple[str, ...],
    unit: str | None,
    *,
    resolve_value: bool,
    row_filter: RowFilter | None = None,
) -> Iterator[tuple[Any, tuple[str, ...]]]:
    """The table of ``handle`` opened in its engine with its value ``columns`` (with
    ``resolve_value`` and no column named: the one column that is not a by-column or
    the unit), every named column checked (an InputError naming the argument otherwise),
    the handle's casts applied, then ``row_filter``'s rows kept."""
    filter_cols = row_filter.columns if row_filter is not None else ()
    # computed columns (tables.row_map) exist once the filter step has added them
    made = {c.name for c in row_filter.computed} if row_filter is not None else set()
    needed = [c for c in (*columns, *by, unit, *filter_cols) if c is not None and c not in made]
    engine, schema = handle.engine, handle.casts
    needed_or_all = needed if columns or not resolve_value else None
    with engine.open(handle.data, needed_or_all, row_filter) as source:
        if not columns and resolve_value:
            candidates = [c for c in source.columns if c not in (*by, unit)]
            if len(candidates) != 1:
                raise InputError(
                    f"{source.label[:1].upper()}{source.label[1:]} has "
                    f"{len(source.columns)} columns; name the one to use: pass one of "
                    f"{', '.join(map(repr, source.columns[:40]))} as ",
                    Assign("column"),
                )
            columns = (candidates[0],)
        for c in columns:
            if c not in made:
                source.require(c, "column")
        for b in by:
            if b not in made:
                source.require(b, "by")
        if unit is not None:
            source.require(unit, "privacy_unit")
        if row_filter is not None:
            for c in row_filter.columns:
                source.require(c, "where")  # a typo: the missing column, not its type
            engine.check_filter(source, row_filter, schema)
            _check_inferred(handle, source, row_filter, columns)
        engine.apply_schema(source, schema)
        if row_filter is None:
            yield source, tuple(columns)
            return
        with engine.filtered(source, row_filter):
            yield source, tuple(columns)


def _check_inferred(
    handle: TableHandle, source: Any, row_filter: RowFilter, values: Sequence[str]
) -> None:
    """Every column a row filter or a computed column reads must have a public type: a
    pandas ``object`` column or Python lists are typed by DuckDB from their values (numbers
    until one person's "n/a" makes them text, and ``o + 1`` no longer binds), as a CSV
    file's columns are (``engine.check_filter``). A value column of the release (``values``)
    is left to the data owner's precondition: text in it is an error whatever reads it
    (docs/tables.md). Decided from the container's declared types and ``schema=``."""
    undeclared = [c for c in row_filter.columns if c not in values and handle.undeclared(c)]
    if undeclared:
        raise undeclared_filter_columns(
            undeclared,
            f"{source.label}, whose types are inferred from the values (Python objects: a "
            "pandas object column, lists)",
        )


def bounded_values(
    data: Any,
    *,
    column: str | None,
    privacy_unit: str | None,
    max_rows_per_unit: int,
    nulls: str,
    rng: RandomSource,
    schema: Mapping[str, Cast] | None = None,
    row_filter: RowFilter | None = None,
) -> np.ndarray:
    """One column of a table, bounded to ``max_rows_per_unit`` rows per unit and not
    clipped (for releases that need the raw values, such as private bounds); ``schema``
    and ``row_filter`` as in :func:`release_opened`'s callers (``tables.query_release``).
    ``data`` is a release's :class:`~dpsense.tables.handle.TableHandle` (its casts are
    then the release's, ``schema`` is not read), or the caller's table, whose handle is
    built here (the unit column read as text when its type is not declared)."""
    m = max_rows_per_unit if privacy_unit is not None else 1
    salt = (int(rng.words(1)[0] >> np.uint64(1)), int(rng.words(1)[0] >> np.uint64(1)))
    keep = (column, *(row_filter.columns if row_filter is not None else ()))
    handle = table_handle(
        data,
        schema,
        keyed=(privacy_unit,) if privacy_unit is not None else (),
        keep=[c for c in keep if c is not None],
        unit=privacy_unit,
    )
    with opened_table(
        handle,
        (column,) if column is not None else (),
        (),
        privacy_unit,
        resolve_value=True,
        row_filter=row_filter,
    ) as (source, (column,)):
        plan = TablePlan(column, (), privacy_unit, m, 1, nulls, None, None, salt)
        table = handle.engine.bound(source, plan, None)
        values = next(values for _, values in table.values([0]))
        return values if isinstance(values, np.ndarray) else values.sorted_values()


def reads_held(statistic: Statistic, method: str) -> bool:
    """True when ``method`` releases ``statistic`` from a group an engine keeps (its size,
    exact sums, or the order statistics of the exponential mechanism's window) without
    reading every record; other releases materialise the group first."""
    if method == "global":
        return isinstance(statistic, Count | Sum | Mean)
    if method == "ksw":
        return isinstance(statistic, Mean)
    return method == "exponential" and isinstance(statistic, Quantile)


def _hold(statistic: Statistic, method: str) -> str:
    """What a held group must answer (``TablePlan.hold``)."""
    if not reads_held(statistic, method):
        return ""
    if isinstance(statistic, Quantile):
        return "window"
    return "quanta" if method == "ksw" else "grid"


def held_or_values(values: Any, statistic: Statistic, method: str) -> Any:
    """``values`` itself when it is an array or ``method`` can read a kept group; else the
    group's records, read from its engine."""
    if isinstance(values, np.ndarray) or reads_held(statistic, method):
        return values
    return values.sorted_values()


def _sort_key(key: Any) -> tuple[Any, ...]:
    parts = key if isinstance(key, tuple) else (key,)
    return tuple((p is None, type(p).__name__, p) for p in parts)


def _with_resolution_source(rel: Release, source: str | None) -> Release:

    return replace(rel, parameters={**rel.parameters, "resolution_source": source})


def _with_unit_note(rel: Release, unit: str | None, m: int) -> Release:

    return replace(rel, parameters={**rel.parameters, "privacy_unit": unit, "max_rows_per_unit": m})
