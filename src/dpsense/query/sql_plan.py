"""SQL spec -> the arguments of one dict-of-statistics release, and the post-processing.

Pure functions of the parsed query and the public arguments (bounds, keys): nothing here
reads data. :func:`statistics` builds ``{"n": Count(), "median_wage": ("wage",
Median(-1, 4)), ...}`` in the order of the SELECT list; :func:`group_keys` turns
``keys={col: [...]}`` into the public groups; :func:`ordered_rows` applies ORDER BY,
LIMIT and OFFSET to the released rows (post-processing of a private output, so free).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dpsense.errors import Assign, Door, InputError, Keys, Message, Param, keys_columns
from dpsense.params import validate_bounds
from dpsense.statistics import Count, Statistic, make_statistic

if TYPE_CHECKING:  # sqlglot is imported by the first query, not by ``import dpsense``
    from dpsense.query.sql import SqlAggregate, SqlQuery

__all__ = [
    "StatisticSpec",
    "check_bounds_argument",
    "check_rows_clauses",
    "group_keys",
    "ordered_rows",
    "statistics",
]

StatisticSpec = Statistic | tuple[str, Statistic]
"""One entry of the dict release: ``Count()`` or ``(column, statistic)``."""

_WHERE = "ds.sql"


def _bounds_of(
    bounds: Mapping[str, Any] | str | None, agg: SqlAggregate
) -> tuple[float, float] | None:
    """The public (lower, upper) of the aggregate's column; None for bounds="private"."""
    if isinstance(bounds, str):
        return None  # "private" (check_bounds_argument refused other text)
    column = agg.column
    assert column is not None
    if bounds is None or column not in bounds:
        others = [str(k) for k in (bounds or {}) if str(k) != column]
        hint = f" (it names {', '.join(map(repr, others))}: a typo?)" if others else ""
        raise InputError(
            Param("bounds", of=_WHERE),
            f" has no bounds for the column {column!r} "
            f"(aggregated as {agg.name!r}){hint}; SQL carries none. Pass bounds={{{column!r}: "
            "(lower, upper)}, public and chosen without looking at the data, or ",
            Assign("bounds", "private", quoted=True),
            " to find them privately (",
            Door("ds.private_bounds"),
            ").",
        )
    pair = bounds[column]
    if isinstance(pair, str | bytes) or not isinstance(pair, Sequence) or len(pair) != 2:
        raise InputError(
            f"The bounds of {column!r} in ",
            Param("bounds", of=_WHERE, capital=False),
            f" must be a pair (lower, upper). Got {type(pair).__name__} instead.",
        )
    try:
        lower, upper = float(pair[0]), float(pair[1])
    except (TypeError, ValueError):
        lower = upper = math.nan
    if lower >= upper:
        raise InputError(
            f"The bounds of {column!r} in ",
            Param("bounds", of=_WHERE, capital=False),
            f" must satisfy lower < upper. Got ({pair[0]!r}, {pair[1]!r}); swap them or "
            "widen the interval.",
        )
    checked = validate_bounds(pair[0], pair[1], where=_WHERE)
    return checked.lower, checked.upper


def check_bounds_argument(bounds: object) -> Mapping[str, Any] | str | None:
    """``bounds`` is None, ``"private"`` or a mapping of column names."""
    if bounds is None or bounds == "private" or isinstance(bounds, Mapping):
        return bounds
    shown = repr(bounds) if isinstance(bounds, str) else type(bounds).__name__
    raise InputError(
        Param("bounds", of=_WHERE),
        f" must be a mapping {{column: (lower, upper)}} or 'private'. Got {shown} instead.",
    )


def statistics(
    spec: SqlQuery,
    bounds: Mapping[str, Any] | str | None,
    units: frozenset[str] = frozenset(),
) -> dict[str, StatisticSpec]:
    """The statistics of the query, keyed by released name, in SELECT order.

    Parameters
    ----------
    spec : SqlQuery
    bounds : mapping of column to (lower, upper), "private" or None
        Public bounds per aggregated column (SQL carries none), or "private" to find
        them privately in the release (``bounds="private"`` of the dict release).
    units
        The columns that hold the privacy unit: ``COUNT(DISTINCT unit)`` (people per group)
        is ``Count(distinct_units=True)``, the number of kept (unit, group) pairs of the
        query's one bounding, at any ``max_rows_per_unit`` (docs/joins.md §4).

    Raises
    ------
    InputError
        A missing or malformed bound, or a bad quantile level.
    """
    checked = check_bounds_argument(bounds)
    out: dict[str, StatisticSpec] = {}
    for agg in spec.aggregates:
        if agg.statistic == "people":
            _check_people(agg, units)
            out[agg.name] = Count(distinct_units=True)
            continue
        if agg.statistic == "count":
            out[agg.name] = Count() if agg.column is None else (agg.column, Count())
            continue
        assert agg.column is not None
        lower, upper = _bounds_of(checked, agg) or (None, None)  # None: found privately
        p = agg.levels[0] if agg.statistic == "quantile" else agg.levels
        out[agg.name] = (agg.column, make_statistic(agg.statistic, lower, upper, p=p))
    return out


def group_keys(spec: SqlQuery, keys: Any) -> Any:
    """The public groups of the release from ``keys``.

    ``{col: [values]}`` for every GROUP BY column, named as released (its SELECT alias,
    else its name), gives every combination (their product, in GROUP BY order: values for
    one column, tuples for several); None means private partition selection; a DataFrame
    has a column per released group column; any other object (a list of values or tuples)
    is passed on as the release's ``keys``.
    """
    if keys is None:
        return None
    if not spec.by:
        raise InputError(
            Param("keys", of=_WHERE),
            " lists groups, but the query has no GROUP BY; add GROUP BY col or drop keys.",
        )
    released = spec.released_by
    if not isinstance(keys, Mapping):
        if released != spec.by and hasattr(keys, "columns") and not isinstance(keys, list | tuple):
            from dpsense.tables.request import normalise_keys

            # a keys table names the groups as released: read them in GROUP BY order
            rows = normalise_keys(keys, released)
            return [r[0] for r in rows] if len(released) == 1 else rows
        return keys
    named = [str(k) for k in keys]
    if sorted(named) != sorted(released):
        renamed = [f"{b!r} as {n!r}" for b, n in zip(spec.by, released, strict=True) if b != n]
        note = f" (the query releases {', '.join(renamed)})" if renamed else ""
        raise keys_columns(
            Param("keys", of=_WHERE),
            list(released),
            named,
            Message(f"list the values of each{note}, ", Keys(tuple(released))),
        )
    columns: list[list[Any]] = []
    for col in released:
        values = keys[col]
        listed = isinstance(values, Sequence | set | frozenset) and not isinstance(
            values, str | bytes
        )
        if not listed and type(values).__module__.split(".")[0] not in (
            "numpy",
            "pandas",
            "polars",
        ):
            raise InputError(
                f"The keys of {col!r} in ",
                Param("keys", of=_WHERE, capital=False),
                f" must be a list of values. Got {type(values).__name__} instead.",
            )
        columns.append(list(values))
    if len(released) == 1:
        return columns[0]
    return [tuple(combo) for combo in itertools.product(*columns)]


def _sort_value(value: Any) -> tuple[int, Any]:
    """Null/NaN (a refused or withheld value) apart from the numbers, which sort as such."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return (1, 0)
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        value = tuple(value)
    return (0, value)


def check_rows_clauses(spec: SqlQuery) -> None:
    """Refuse, before anything is charged, a LIMIT/OFFSET that drops the one row of a
    query without GROUP BY."""
    if not spec.by and ((spec.limit is not None and spec.limit < 1) or (spec.offset or 0) > 0):
        raise InputError(
            "The SQL query has no GROUP BY, so it releases one row; LIMIT 0 or an "
            "OFFSET would drop it. Remove them."
        )


def ordered_rows(spec: SqlQuery, rows: Sequence[Mapping[str, Any]]) -> list[int]:
    """The indices of ``rows`` after ORDER BY, OFFSET and LIMIT (stable; a query without
    ORDER BY keeps the release's order).

    Nulls (refused values) go last unless the key says NULLS FIRST, as in DuckDB.
    """
    order = list(range(len(rows)))
    for key in reversed(spec.order_by):  # stable sorts, last key first
        present = [i for i in order if _sort_value(rows[i][key.column])[0] == 0]
        missing = [i for i in order if _sort_value(rows[i][key.column])[0] == 1]
        try:
            present.sort(key=lambda i: _sort_value(rows[i][key.column]), reverse=key.descending)
        except TypeError:
            raise InputError(
                f"ORDER BY {key.column!r} in the SQL query compares values of "
                "different types; order by one column of one type."
            ) from None
        order = missing + present if key.nulls_first else present + missing
    start = spec.offset or 0
    stop = None if spec.limit is None else start + spec.limit
    return order[start:stop]


def _check_people(agg: SqlAggregate, units: frozenset[str]) -> None:
    """``COUNT(DISTINCT col)`` counts people: ``col`` must be the privacy unit (the number
    of distinct values of another column is not bounded by one person's rows)."""
    if agg.column not in units:
        raise InputError(
            f"The SQL query counts distinct values of {agg.column!r}, which "
            "is not the privacy unit: the number of distinct values is not bounded by one "
            "person's rows. COUNT(DISTINCT unit) counts people (pass ",
            Assign.of("privacy_unit", agg.column),
            " if that column identifies a person).",
        )
