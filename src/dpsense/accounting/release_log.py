"""The release log: the public outputs a ledger keeps with each charge (docs/report.md).

A charge is committed before its release is computed; when the answer (or the refusal) is
known, :meth:`~dpsense.accounting.ledger.Ledger.record_outcome` marks the charge answered
or refused and stores, in the same transaction, the dictionary :func:`outputs_of` builds:

.. code-block:: text

    {"format": 1,
     "where": "age > 30" | None,            (a query's row filter, as written)
     "guarantee": {"kind": "pure" | "approximate" | "zcdp", "neighbours": "add-remove",
                   "privacy_unit": "person" | None, "max_rows_per_unit": 1,
                   "max_groups_per_unit": 1},
     "statistics": [
        {"name": "median", "statistic": "median", "column": "income" | None,
         "bounds": [lower, upper] | None, "p": 0.5 | [..] | None,
         "bounds_source": {"source": "private" | "public", "share": 0.3 | None,
                           "epsilon": e | None} | None,
         "interval": {"kind": "noise" | "ratio" | "fraction" | "released" | "smooth",
                      "share": 0.2 | None} | None,
         "covers": "the median of the values clipped to [0, 100]" | "",
         "share": 0.2 | None,               (of the query's epsilon; None alone)
         "by": ["region"], "selection": "public keys" | "private" | None,
         "method": "exponential", "noise": ..., "scale": ... | None,
         "epsilon": e, "delta": d, "rho": r | None, "seeded": False,
         "parameters": {<public parameters named in PUBLIC_PARAMETERS>},
         "rows": [{"group": {"region": "north"}, "value": 41.0 | [..] | None,
                   "refused": False, "low": 39.0 | None, "high": 43.0 | None,
                   "unreliable": False, "accuracy": 2.5 | None, "rank_accuracy": 3 | None,
                   "method": ..., "noise": ..., "scale": ... | None}]}]}

One charge may hold several named statistics (a query of several statistics is one
charge); an ungrouped release has ``by == []`` and one row whose ``group`` is ``{}``.

Everything stored is public: a differentially private output (values, refusals, the keys
of privately selected groups, privately found bounds) or a function of public parameters
only (accuracy at alpha = 0.05, rank accuracy, a noise scale that :class:`Release` reports,
which it does only when the scale depends on public parameters or on a private output).
Never stored: data values, the number of records, local or smooth sensitivities, smooth
noise scales, and any :attr:`Release.parameters` entry outside :data:`PUBLIC_PARAMETERS`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np

from dpsense.methods import Release

__all__ = [
    "ACCURACY_ALPHA",
    "FORMAT",
    "PUBLIC_PARAMETERS",
    "decode",
    "encode",
    "outputs_of",
    "statistic_outputs",
]

FORMAT: Final = 1
"""The version of the stored dictionary (a new key is not a new version)."""

ACCURACY_ALPHA: Final = 0.05
"""Stored accuracies are half-widths at 95%."""

PUBLIC_PARAMETERS: Final = (
    "bound",  # propose-test-release: the proposed bound, chosen without the data
    "test_fraction",
    "threshold",  # the PTR test's threshold, from epsilon and delta only
    "resolution",
    "resolution_source",
    "branch",  # adaptive: the branch its private test chose
    "scale_units",  # what a KSW mean's scale is measured in (a constant)
)
"""The :attr:`Release.parameters` entries the log keeps: each is a public parameter or a
private output. Anything else (whatever a method may add later) is left out."""


@runtime_checkable
class GroupedLike(Protocol):
    """What the log reads of a :class:`~dpsense.tables.GroupedRelease` (a higher layer)."""

    @property
    def by(self) -> tuple[str, ...]: ...

    @property
    def selection(self) -> str: ...

    @property
    def groups(self) -> Mapping[Any, Release]: ...

    @property
    def epsilon(self) -> float: ...

    @property
    def delta(self) -> float: ...

    @property
    def parameters(self) -> Mapping[str, Any]: ...


def _number(value: Any) -> Any:
    """A JSON-safe number: non-finite floats become the strings "nan", "inf", "-inf"."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | np.integer):
        return int(value)
    number = float(value)
    return number if math.isfinite(number) else str(number)


def _value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, np.ndarray | tuple | list):
        return [_number(v) for v in np.asarray(value, dtype=float).ravel()]
    return _number(value)


def _key_part(part: Any) -> Any:
    if part is None or isinstance(part, str | bool):
        return part
    if isinstance(part, int | float | np.integer | np.floating):
        return _number(part)
    return str(part)  # dates and other key types are shown as text


def _row(group: dict[str, Any], rel: Release) -> dict[str, Any]:
    interval = rel.interval(ACCURACY_ALPHA)
    return {
        "group": group,
        "value": _value(rel.value),
        "refused": bool(rel.refused),
        # the 95% interval: released values and public quantities only (docs/intervals.md)
        "low": None if interval is None else _value(interval[0]),
        "high": None if interval is None else _value(interval[1]),
        "unreliable": bool(rel.unreliable(ACCURACY_ALPHA)),
        "accuracy": _number(rel.accuracy(ACCURACY_ALPHA)),
        "rank_accuracy": rel.rank_accuracy(ACCURACY_ALPHA),
        "method": rel.method,
        "noise": rel.noise,
        # Release.scale is None whenever the scale would reveal a non-private quantity
        # (smooth sensitivity, the means' data-dependent scales); see docs/report.md
        "scale": _number(rel.scale),
    }


def _bounds(statistic: object, parameters: Mapping[str, Any]) -> list[float] | None:
    lower, upper = getattr(statistic, "lower", None), getattr(statistic, "upper", None)
    if lower is not None and upper is not None:
        return [float(lower), float(upper)]
    found = parameters.get("bounds")  # bounds="private": the released bounds
    if isinstance(found, Mapping) and "lower" in found and "upper" in found:
        return [float(found["lower"]), float(found["upper"])]
    return None


def _bounds_source(statistic: object, parameters: Mapping[str, Any]) -> dict[str, Any] | None:
    """Where the bounds came from: found privately (with the share and epsilon spent on
    them) or given by the analyst; None for a statistic without bounds (a count)."""
    found = parameters.get("bounds")
    if isinstance(found, Mapping) and found.get("source") == "private":
        return {
            "source": "private",
            "share": _number(found.get("share")),
            "epsilon": _number(found.get("epsilon")),
        }
    if getattr(statistic, "lower", None) is not None:
        return {"source": "public", "share": None, "epsilon": None}
    return None


def _interval_source(first: Release | None) -> dict[str, Any] | None:
    """How the statistic's intervals were built (public: the kind and its budget share)."""
    shown = first.parameters.get("interval") if first is not None else None
    if not isinstance(shown, Mapping):
        return None
    return {"kind": str(shown.get("kind")), "share": _number(shown.get("share"))}


def _p(statistic: object) -> Any:
    if hasattr(statistic, "ps"):
        return [float(p) for p in statistic.ps]
    p = getattr(statistic, "p", None)
    return None if p is None else float(p)


def statistic_outputs(
    result: Release | GroupedLike,
    *,
    name: str | None = None,
    statistic: object = None,
    column: str | None = None,
) -> dict[str, Any]:
    """The stored entry of one released statistic, grouped or not.

    Parameters
    ----------
    result : Release or GroupedRelease
        The release (its public fields only are read).
    name : str, optional
        The name the statistic was asked for under (a query's key); the statistic's name
        by default.
    statistic : Statistic, optional
        The statistic object, for its public bounds and ``p``.
    column : str, optional
        The value column.
    """
    if isinstance(result, Release):
        releases: list[tuple[dict[str, Any], Release]] = [({}, result)]
        by: list[str] = []
        selection = None
        outer: Mapping[str, Any] = result.parameters
    else:
        by = list(result.by)
        selection = result.selection
        outer = result.parameters
        releases = []
        for key, rel in result.groups.items():
            parts = key if len(by) > 1 else (key,)
            releases.append(({b: _key_part(k) for b, k in zip(by, parts, strict=True)}, rel))
    first = releases[0][1] if releases else None
    methods = {r.method for _, r in releases}
    stat_name = first.statistic if first is not None else getattr(statistic, "name", "")
    params = {k: first.parameters[k] for k in PUBLIC_PARAMETERS if first and k in first.parameters}
    return {
        "name": name or stat_name or getattr(statistic, "name", ""),
        "statistic": stat_name or getattr(statistic, "name", ""),
        "column": column,
        "bounds": _bounds(statistic, outer),
        "bounds_source": _bounds_source(statistic, outer),
        "interval": _interval_source(first),
        "covers": first.covers if first is not None else "",
        "p": _p(statistic),
        "by": by,
        "selection": selection,
        "method": methods.pop() if len(methods) == 1 else ("mixed" if methods else None),
        "noise": first.noise if first is not None else None,
        "scale": _number(first.scale) if first is not None and len(releases) == 1 else None,
        "epsilon": float(result.epsilon),
        "delta": float(result.delta),
        "rho": _number(getattr(result, "rho", None)),
        "seeded": any(r.seeded for _, r in releases),
        "parameters": {k: _value(v) if not isinstance(v, str) else v for k, v in params.items()},
        "rows": [_row(group, rel) for group, rel in releases],
    }


def _items(result: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(result, Release | GroupedLike):
        return [("", result)]
    named = getattr(result, "results", result)  # a QueryResult holds its mapping
    items = getattr(named, "items", None)
    if callable(items):  # names to releases
        return list(items())
    raise TypeError(f"cannot log a {type(result).__name__}")


def _kind(result: Any, parts: list[Any], zcdp: bool) -> str:
    if zcdp:
        return "zcdp"
    # the whole charge's delta (a query's includes its partition selection)
    deltas = [getattr(result, "delta", 0.0), *(r.delta for r in parts)]
    return "approximate" if any(float(d) > 0 for d in deltas) else "pure"


def _neighbours(result: Release | GroupedLike) -> str:
    if isinstance(result, Release):
        return result.neighbours
    return next((r.neighbours for r in result.groups.values()), "")


def outputs_of(
    result: Any,
    *,
    statistic: object = None,
    column: str | Mapping[str, str | None] | None = None,
    privacy_unit: str | None = None,
    max_rows_per_unit: int = 1,
    max_groups_per_unit: int = 1,
    where: str | None = None,
    zcdp: bool = False,
) -> dict[str, Any]:
    """The public outputs of one charge, as stored in the ledger.

    Parameters
    ----------
    result : Release, GroupedRelease, QueryResult or a mapping of names to releases
        What the charge released. A :class:`~dpsense.QueryResult` or a mapping is several
        named statistics paid for by one charge.
    statistic : Statistic or mapping of str to Statistic, optional
        The statistic (for its public bounds and ``p``), or each named statistic's.
    column : str or mapping of str to str, optional
        The value column, or each named statistic's column.
    where : str, optional
        The query's row filter, as the analyst wrote it.
    privacy_unit, max_rows_per_unit, max_groups_per_unit
        Who is protected: the privacy unit column (None: a row) and its contribution bounds.
    zcdp : bool
        True when the charge was to a zCDP (rho) budget.

    Returns
    -------
    dict
        The dictionary described in this module's docstring (JSON-safe).
    """
    items = list(_items(result))
    entries = []
    for name, rel in items:
        col = column.get(name) if isinstance(column, Mapping) else column
        stat = statistic.get(name) if isinstance(statistic, Mapping) else statistic
        entry = statistic_outputs(rel, name=name or None, statistic=stat, column=col)
        entry["share"] = _share(result, name)
        entries.append(entry)
    results = [rel for _, rel in items]
    return {
        "format": FORMAT,
        "where": None if where is None else str(where),
        "guarantee": {
            "kind": _kind(result, results, zcdp),
            "neighbours": _neighbours(results[0]) if results else "",
            "privacy_unit": privacy_unit,
            "max_rows_per_unit": int(max_rows_per_unit) if privacy_unit is not None else 1,
            "max_groups_per_unit": int(max_groups_per_unit) if privacy_unit is not None else 1,
        },
        "statistics": entries,
    }


def _share(result: Any, name: str) -> float | None:
    """A query's statistic's share of the query's epsilon (its split); None alone."""
    parameters = getattr(result, "parameters", None)
    split = parameters.get("split") if isinstance(parameters, Mapping) else None
    total = getattr(result, "epsilon", None)
    if not isinstance(split, Mapping) or name not in split or not total:
        return None
    share: float = float(split[name]["epsilon"]) / float(total)
    return share


def encode(outputs: Mapping[str, Any]) -> str:
    """The JSON text stored in the ledger (strict JSON: no NaN)."""
    return json.dumps(outputs, allow_nan=False, sort_keys=True, separators=(",", ":"))


def decode(text: str | None) -> dict[str, Any] | None:
    """The stored dictionary (None for a charge without outputs or unreadable ones)."""
    if text is None:
        return None
    try:
        loaded = json.loads(text)
    except ValueError:
        return None
    return loaded if isinstance(loaded, dict) else None
