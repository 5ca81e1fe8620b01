"""The orchestration of a table release (``GroupedRelease``, its result, lives in
``grouped_result``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsense._exact_budget import difference_down, float_up, product_down, quotient_down
from dpsense.errors import InputError
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
from dpsense.statistics.units import per_unit
from dpsense.tables.engines import engine_for
from dpsense.tables.grouped_result import GroupedRelease, rows_frame
from dpsense.tables.presence import add_presence, present_rows
from dpsense.tables.row_filter import RowFilter
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.schema import Cast, declared_type, schema_resolution

__all__ = [
    "BudgetSplit",
    "GroupedRelease",
    "bounded_values",
    "budget_split",
    "held_or_values",
    "opened_table",
    "reads_held",
    "release_opened",
    "release_table",
    "rows_frame",
    "table_plan",
]

SELECTION_SHARE = 0.5
"""Share of epsilon (and of delta) spent on private partition selection."""


def _normalise_keys(keys: Any, by: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """Public keys as a list of tuples of by-values (a DataFrame, values or tuples)."""
    if hasattr(keys, "columns") and not isinstance(keys, list | tuple):
        columns = [str(c) for c in keys.columns]
        missing = [b for b in by if b not in columns]
        if missing:
            raise InputError(
                f"The keys table must have the by-columns {list(by)}; it lacks {missing}."
            )
        native = keys.to_dict("list") if hasattr(keys, "to_dict") else keys.to_dict(as_series=False)
        return list(zip(*(native[b] for b in by), strict=True))
    if isinstance(keys, str | bytes) or not isinstance(keys, Sequence | np.ndarray | set):
        raise InputError(
            "The 'keys' parameter must be a list of group values (tuples for several "
            "by-columns) or a DataFrame of the by-columns."
        )
    out: list[tuple[Any, ...]] = []
    for key in keys:
        tup = tuple(key) if isinstance(key, tuple | list) else (key,)
        if len(tup) != len(by):
            raise InputError(
                f"Each key must have one value per by-column ({len(by)}); got {key!r}."
            )
        out.append(tuple(v.item() if isinstance(v, np.generic) else v for v in tup))
    if len(set(out)) != len(out):
        raise InputError("The 'keys' parameter lists a group more than once.")
    return out


@dataclass(frozen=True)
class BudgetSplit:
    """How a table release spends its (epsilon, delta) (docs/tables.md §4), from public
    parameters only: the accountant prices a release with it before anything is drawn."""

    selection: tuple[float, float] | None
    """(epsilon, delta) of private partition selection; None with public keys or no groups."""
    per_group: tuple[float, float]
    """(epsilon, delta) of each group's release."""
    touched: int
    """The number of released groups one unit can change."""


def budget_split(
    epsilon: float, delta: float, *, by: tuple[str, ...], public_keys: int | None, groups: int
) -> BudgetSplit:
    """The split of a release by ``by`` with ``public_keys`` keys (None: private selection)
    when a unit is in at most ``groups`` groups."""
    selection = None
    eps_rest, dlt_rest = epsilon, delta
    if by and public_keys is None:
        if delta == 0.0:
            raise InputError(
                "Releasing groups without public keys needs private partition selection, "
                "which needs delta > 0: pass keys=[...] (--keys FILE) or delta=... (e.g. 1e-6)."
            )
        # shares rounded down, the rests exact differences rounded down (docs/noise.md §8)
        selection = (product_down(SELECTION_SHARE, epsilon), product_down(SELECTION_SHARE, delta))
        eps_rest = difference_down(epsilon, selection[0])
        dlt_rest = difference_down(delta, selection[1])
    # a unit touches at most g groups, and never more than the public keys
    touched = min(groups, public_keys) if public_keys else groups
    eps_g = quotient_down(eps_rest, touched)
    dlt_g = quotient_down(dlt_rest, touched)
    return BudgetSplit(selection, (eps_g, dlt_g), touched)


def release_table(
    data: Any,
    statistic: Statistic,
    *,
    column: str | None,
    by: tuple[str, ...],
    privacy_unit: str | None,
    schema: Mapping[str, Cast] | None = None,
    row_filter: RowFilter | None = None,
    present: str | None = None,
    **release: Any,
) -> Release | GroupedRelease:
    """Bound, group and release (the engine work in DuckDB, the noise in Python).

    ``schema`` (parsed by :func:`~dpsense.tables.schema.parse_schema`) casts columns in the
    engine; a quantile without a resolution takes one from the value column's declared
    type (docs/tables.md §7). ``row_filter`` keeps the rows that pass it, in the engine,
    before anything else (contribution bounding included). A count with ``present``
    counts the rows that hold a value in that column (``tables.presence``: SQL
    ``COUNT(col)``), kept after ``row_filter``. ``release`` holds the other arguments of
    :func:`release_opened`."""
    needs_value = not isinstance(statistic, Count)
    named = tuple(c for c in (column, present) if c is not None)
    with opened_table(
        data,
        named,
        by,
        privacy_unit,
        resolve_value=needs_value,
        schema=schema,
        row_filter=row_filter,
    ) as (source, columns):
        flag = add_presence(source, (present,))[present] if present is not None else None
        return release_opened(
            data,
            source,
            statistic,
            column=columns[0] if columns and needs_value else None,
            by=by,
            privacy_unit=privacy_unit,
            schema=schema,
            present=flag,
            **release,
        )


def release_opened(
    data: Any,
    source: Any,
    statistic: Statistic,
    *,
    epsilon: float,
    delta: float,
    method: str,
    column: str | None,
    by: tuple[str, ...],
    keys: Any,
    privacy_unit: str | None,
    max_rows_per_unit: int,
    max_groups_per_unit: int,
    nulls: str,
    rng: RandomSource,
    release_one: Callable[[np.ndarray, Statistic, float, float], Release],
    split: BudgetSplit,
    schema: Mapping[str, Cast] | None = None,
    prebounded: bool = False,
    present: str | None = None,
) -> Release | GroupedRelease:
    """:func:`release_table` on a table already opened as ``source`` (``data`` is the
    user's object, for its declared types). The query layer runs several statistics over
    one bounded table through this, one at a time, with ``prebounded``: each unit of
    ``source`` already has at most ``max_groups_per_unit`` groups and
    ``max_rows_per_unit`` rows in each, so the engine skips its own bounding (which would
    keep every row) and reads the rows as they are; the group privacy still counts ``m``
    rows and ``g`` groups per unit.

    ``split`` is how ``(epsilon, delta)`` is spent (``query.plan.statistic_split``, the
    split the zCDP charge prices): it is never recomputed here from ``keys``, which after
    a query's shared selection are the selected groups, whose number is data.

    ``present`` names a 0/1 column of ``source`` (``tables.presence.add_presence``): a
    count then counts only the rows where it is 1 (SQL ``COUNT(col)``)."""
    if present is not None:
        source = present_rows(source, present)
    m = max_rows_per_unit if privacy_unit is not None else 1
    g = max_groups_per_unit if (privacy_unit is not None and by) else 1
    public = _normalise_keys(keys, by) if (by and keys is not None) else None
    salt = (int(rng.words(1)[0] >> np.uint64(1)), int(rng.words(1)[0] >> np.uint64(1)))
    plan, unit_stat, resolution = table_plan(
        data,
        source,
        statistic,
        method=method,
        column=column,
        by=by,
        unit=None if prebounded else privacy_unit,
        m=m,
        g=g,
        nulls=nulls,
        salt=salt,
        schema=schema,
    )
    table = engine_for(source).bound(source, plan, public)
    params: dict[str, Any] = {
        "privacy_unit": privacy_unit,
        "max_rows_per_unit": m,
        "max_groups_per_unit": g,
        **resolution,
    }
    if split.selection is not None:
        eps_sel, dlt_sel = split.selection
        rule = SelectionRule.for_budget(eps_sel, dlt_sel, g)
        chosen = select_groups(table.units, rule, rng)
        params["selection"] = {
            "epsilon": eps_sel,
            "delta": dlt_sel,
            "threshold": rule.threshold,
            "scale": float_up(rule.scale),
        }
    else:
        chosen = np.arange(len(table.keys))
    eps_g, dlt_g = split.per_group
    params["per_group"] = {"epsilon": eps_g, "delta": dlt_g}
    out: dict[Any, Release] = {}
    for gid, values in table.values([int(i) for i in chosen], histograms=True):
        key = table.keys[gid]
        rel = release_one(held_or_values(values, unit_stat, method), unit_stat, eps_g, dlt_g)
        if m > 1:
            rel = _with_unit_note(rel, privacy_unit, m)
        if "resolution_source" in resolution:
            rel = _with_resolution_source(rel, resolution["resolution_source"])
        out[key if len(by) > 1 else (key[0] if by else None)] = rel
    if not by:
        return out[None]
    # public keys keep the caller's order; privately selected groups are sorted
    ordered = (
        out if public is not None else dict(sorted(out.items(), key=lambda kv: _sort_key(kv[0])))
    )
    return GroupedRelease(
        epsilon,
        delta,
        by,
        "public keys" if public is not None else "private",
        ordered,
        params,
    )


def table_plan(
    data: Any,
    source: Any,
    statistic: Statistic,
    *,
    method: str,
    column: str | None,
    by: tuple[str, ...],
    unit: str | None,
    m: int,
    g: int,
    nulls: str,
    salt: tuple[int, int],
    schema: Mapping[str, Cast] | None,
) -> tuple[TablePlan, Statistic, dict[str, Any]]:
    """The engine's plan of a release of ``statistic`` (with the resolution the column's
    declared type gives a quantile), the statistic per unit that the method releases, and
    the resolution's receipt."""
    declared = declared_type(data, source, column, schema or {}) if column else None
    statistic, resolution = schema_resolution(statistic, declared)
    lower = statistic.lower if isinstance(statistic, BoundedStatistic) else None
    upper = statistic.upper if isinstance(statistic, BoundedStatistic) else None
    unit_stat = per_unit(statistic, m)
    plan = TablePlan(
        column if not isinstance(statistic, Count) else None,
        by,
        unit,
        m,
        g,
        nulls,
        lower,
        upper,
        salt,
        hold=_hold(unit_stat, method),
    )
    return plan, unit_stat, resolution


@contextmanager
def opened_table(
    data: Any,
    columns: Sequence[str],
    by: tuple[str, ...],
    unit: str | None,
    *,
    resolve_value: bool,
    schema: Mapping[str, Cast] | None = None,
    row_filter: RowFilter | None = None,
) -> Iterator[tuple[Any, tuple[str, ...]]]:
    """The table opened in its engine with its value ``columns`` (with
    ``resolve_value`` and no column named: the one column that is not a by-column or
    the unit), every named column checked (an InputError naming the argument otherwise),
    the ``schema`` casts applied, then ``row_filter``'s rows kept."""
    filter_cols = row_filter.columns if row_filter is not None else ()
    needed = [c for c in (*columns, *by, unit, *filter_cols) if c is not None]
    engine = engine_for(data)
    needed_or_all = needed if columns or not resolve_value else None
    with engine.open(data, needed_or_all, row_filter) as source:
        if not columns and resolve_value:
            candidates = [c for c in source.columns if c not in (*by, unit)]
            if len(candidates) != 1:
                raise InputError(
                    f"{source.label} has several columns: name the value column with "
                    "column=... (--column)."
                )
            columns = (candidates[0],)
        for c in columns:
            source.require(c, "column")
        for b in by:
            source.require(b, "by")
        if unit is not None:
            source.require(unit, "privacy_unit")
        if row_filter is not None:
            engine.check_filter(source, row_filter, schema or {})
        engine.apply_schema(source, schema or {})
        if row_filter is None:
            yield source, tuple(columns)
            return
        with engine.filtered(source, row_filter):
            yield source, tuple(columns)


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
    and ``row_filter`` as in :func:`release_table`."""
    m = max_rows_per_unit if privacy_unit is not None else 1
    salt = (int(rng.words(1)[0] >> np.uint64(1)), int(rng.words(1)[0] >> np.uint64(1)))
    with opened_table(
        data,
        (column,) if column is not None else (),
        (),
        privacy_unit,
        resolve_value=True,
        schema=schema,
        row_filter=row_filter,
    ) as (source, (column,)):
        plan = TablePlan(column, (), privacy_unit, m, 1, nulls, None, None, salt)
        table = engine_for(source).bound(source, plan, None)
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
    from dataclasses import replace

    return replace(rel, parameters={**rel.parameters, "resolution_source": source})


def _with_unit_note(rel: Release, unit: str | None, m: int) -> Release:
    from dataclasses import replace

    return replace(rel, parameters={**rel.parameters, "privacy_unit": unit, "max_rows_per_unit": m})
