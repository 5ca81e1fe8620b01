"""The statistics of a query's plan (:mod:`.plan`): each with its name, its column (all
named, or none) and its checked weight."""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from dpsense.errors import InputError, Param
from dpsense.statistics import Count, Statistic
from dpsense.statistics.units import counts_units

__all__ = ["MIXED_COLUMNS", "statistic_items"]

MIXED_COLUMNS = (
    "Each statistic of a query reads a column: write it as a (column, statistic) "
    'pair, e.g. ("wage", ds.Median(-1, 4)), or pass column=... for all of them '
    "(ds.Count() needs none)."
)


def _entries(
    statistics: Any, column: str | None, where: str
) -> list[tuple[str, Any, Any, str | None]]:
    """(name, statistic, column, present) for each statistic of ``statistics`` (one, or a
    dict): ``present`` is the column of a dict's ``(column, ds.Count())`` pair, whose rows
    with a value the count counts (None: every row)."""
    if isinstance(statistics, Statistic):
        return [("value", statistics, column, None)]
    if not isinstance(statistics, Mapping):
        raise InputError(
            Param("statistic", of=where),
            f" must be a dpsense statistic such as "
            "ds.Median(lower, upper), or a dict of them by name. Got an object of type "
            f"{type(statistics).__name__} instead.",
        )
    if not statistics:
        raise InputError(f"The dict of statistics passed to {where} is empty: name at least one.")
    out = []
    for name, entry in statistics.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"The names of a dict of statistics must be strings; got {name!r}.")
        paired = isinstance(entry, tuple) and len(entry) == 2
        col, stat = entry if paired else (column, entry)
        if not isinstance(stat, Statistic):
            raise InputError(
                f"The dict entry {name!r} must be a statistic, e.g. ds.Count(), or a "
                '(column, statistic) pair, e.g. ("wage", ds.Median(-1, 4)). Got an object '
                f"of type {type(stat).__name__} instead."
            )
        if col is not None and not isinstance(col, str):
            raise InputError(f"The column of the dict entry {name!r} must be a column name.")
        count = isinstance(stat, Count)
        if paired and counts_units(stat):
            raise InputError(
                f"The dict entry {name!r} pairs a column with ds.Count(distinct_units=True), "
                "which counts the privacy units and reads no column: write it alone, "
                f"{name!r}: ds.Count(distinct_units=True)."
            )
        out.append((name, stat, None if count else col, col if count and paired else None))
    return out


def _weights(weights: object, names: list[str], where: str) -> dict[str, Fraction]:
    """Each statistic's weight (1 unless ``weights`` says otherwise), checked."""
    if weights is None:
        return dict.fromkeys(names, Fraction(1))
    if not isinstance(weights, Mapping):
        raise InputError(
            Param("weights", of=where),
            f" must be a dict of statistic names to "
            f"positive numbers, e.g. {{{names[0]!r}: 2}}. Got {type(weights).__name__} instead.",
        )
    unknown = [k for k in weights if k not in names]
    if unknown:
        raise InputError(
            Param("weights", of=where),
            f" names {unknown[0]!r}, which is not a "
            f"statistic of the query ({', '.join(repr(n) for n in names)}).",
        )
    out = {}
    for name in names:
        w = weights.get(name, 1)
        if isinstance(w, bool) or not isinstance(w, int | float) or not (0 < w < math.inf):
            raise InputError(
                f"The weight of {name!r} in the 'weights' parameter of {where} must be a "
                f"number in (0, inf). Got {w!r} instead."
            )
        out[name] = Fraction(w)
    return out


def statistic_items(
    statistics: Any, column: Any, weights: object, where: str
) -> tuple[list[tuple[str, Any, Any, str | None]], dict[str, Fraction]]:
    """The statistics of a release or query with their columns (all named, or none) and
    their checked weights."""
    if isinstance(statistics, Statistic) and weights is not None:
        raise InputError(
            Param("weights", of=where),
            " splits epsilon between the statistics of a "
            "dict: pass a dict of statistics, or drop weights.",
        )
    if column is not None and not isinstance(column, str):
        raise InputError(Param("column"), " must be a column name (str).")
    items = _entries(statistics, column, where)
    named = [col for _, stat, col, _ in items if not isinstance(stat, Count)]
    if None in named and any(col is not None for col in named):
        raise InputError(MIXED_COLUMNS)
    return items, _weights(weights, [name for name, _, _, _ in items], where)
