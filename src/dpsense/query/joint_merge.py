"""Several quantile statistics of one column released as one joint release.

A query such as ``MEDIAN(wage), QUANTILE_CONT(wage, [0.1, 0.9])`` holds three levels of
one column in two statistics. Released apart, each runs at its own share; merged, one
recursive-halving release (``mechanisms.quantiles.RecursiveQuantiles``) runs all the
levels at the sum of their shares, which is more accurate when
:func:`~dpsense.mechanisms.quantiles.joint_is_better` says so for the total number of
levels (docs/quantile_mechanisms.md §7c derives that the price is unchanged: one
mechanism at the summed epsilon in place of several whose epsilons sum to it).

The plan decides (:func:`plan_merges`) from the request only, never from the data: the
statistics are quantiles (``ds.Median``, ``ds.Quantile``, ``ds.Quantiles``) of the same
column released by the exponential mechanism (asked for, or chosen by ``auto``), with
the same public bounds (or both found by that column's one private bounds step), the same
resolution and weight, distinct levels, and ``joint=False`` not asked for. The run
releases the merged statistic in the place of the first of them (:func:`merged_entry`,
:func:`merged_statistic`) and hands each its own levels back (:func:`split_result`): its
values, its intervals, and a receipt naming the statistics it was released with, the
joint release's epsilon and its own share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from dpsense._exact_budget import exact, float_down
from dpsense.mechanisms.quantiles import joint_is_better
from dpsense.methods import Release
from dpsense.neighbours import Neighbours
from dpsense.statistics import Quantile, Quantiles, Statistic
from dpsense.tables.grouped_result import GroupedRelease
from dpsense.tables.request import SELECTION_SHARE

if TYPE_CHECKING:
    from dpsense.query.plan import Entry

__all__ = [
    "JointMerge",
    "joined",
    "merge_of",
    "merged_entry",
    "merged_statistic",
    "plan_merges",
    "released_values",
    "split_receipt",
    "split_result",
]

_MAX_DENOMINATOR = 1_000_000


@dataclass(frozen=True)
class JointMerge:
    """Quantile statistics of one column released jointly: their names (in the query's
    order), the merged levels (increasing), and the sum of their shares."""

    names: tuple[str, ...]
    ps: tuple[float, ...]
    epsilon: float
    delta: float


def _levels(statistic: Statistic) -> tuple[Fraction, ...]:
    if isinstance(statistic, Quantiles):
        return statistic.levels
    assert isinstance(statistic, Quantile)
    return (Fraction(statistic.p).limit_denominator(_MAX_DENOMINATOR),)


def _ps(statistic: Statistic) -> tuple[float, ...]:
    return tuple(statistic.ps) if isinstance(statistic, Quantiles) else (statistic.p,)  # type: ignore[attr-defined]


def _key(entry: Entry) -> tuple[Any, ...] | None:
    """What statistics must share to be merged (None: this one is never merged)."""
    stat = entry.statistic
    if not isinstance(stat, Quantile | Quantiles) or entry.chosen != "exponential":
        return None
    bounds = (stat.lower, stat.upper) if stat.has_bounds else None
    return (entry.column, bounds, stat.resolution, entry.weight)


def plan_merges(
    entries: Sequence[Entry], options: Mapping[str, Any], neighbours: Neighbours
) -> tuple[JointMerge, ...]:
    """The joint releases of ``entries`` (module docstring), from public parameters only:
    ``options`` are the query's method options as asked (``joint=False`` keeps every
    statistic apart, ``joint=True`` merges whatever can be)."""
    if options.get("joint") is False or len(entries) < 2:
        return ()
    groups: dict[tuple[Any, ...], list[Entry]] = {}
    for entry in entries:
        key = _key(entry)
        if key is not None:
            groups.setdefault(key, []).append(entry)
    merges = []
    for members in groups.values():
        levels = [q for e in members for q in _levels(e.statistic)]
        if len(members) < 2 or len(set(levels)) < len(levels):
            continue
        if options.get("joint") is not True and not joint_is_better(len(levels), neighbours):
            continue
        ps = sorted(
            (q, p)
            for e in members
            for q, p in zip(_levels(e.statistic), _ps(e.statistic), strict=True)
        )
        merges.append(
            JointMerge(
                names=tuple(e.name for e in members),
                ps=tuple(p for _, p in ps),
                epsilon=float_down(sum(exact(e.epsilon) for e in members)),
                delta=float_down(sum(exact(e.delta) for e in members)),
            )
        )
    return tuple(merges)


def merge_of(merges: Sequence[JointMerge], name: str) -> JointMerge | None:
    """The joint release statistic ``name`` is part of, if any."""
    return next((m for m in merges if name in m.names), None)


def merged_statistic(merge: JointMerge, stats: Mapping[str, Statistic]) -> Quantiles:
    """The merged statistic, with the bounds its members release with (``stats``: after
    the private bounds step, if any)."""
    first = stats[merge.names[0]]
    assert isinstance(first, Quantile | Quantiles)
    return Quantiles(merge.ps, first.lower, first.upper, first.resolution)


def merged_entry(merge: JointMerge, entries: Sequence[Entry]) -> Entry:
    """The joint release as one entry of the plan, in its first member's place: the
    merged levels, exponential and joint, at the sum of the members' shares."""
    first = next(e for e in entries if e.name == merge.names[0])
    stat = first.statistic
    assert isinstance(stat, Quantile | Quantiles)
    merged = Quantiles(merge.ps, stat.lower, stat.upper, stat.resolution)
    return replace(
        first,
        statistic=merged,
        chosen="exponential",
        options={"joint": True},
        epsilon=merge.epsilon,
        delta=merge.delta,
    )


def split_result(
    merge: JointMerge,
    got: Release | GroupedRelease,
    stats: Mapping[str, Statistic],
    shares: Mapping[str, tuple[tuple[float, float], tuple[float, float]]],
) -> dict[str, Release | GroupedRelease]:
    """Each member's own levels of the joint release ``got``. ``shares[name]``: the
    member's (epsilon, delta) and its (epsilon, delta) per group."""
    out: dict[str, Release | GroupedRelease] = {}
    for name in merge.names:
        (eps, dlt), per_group = shares[name]
        if isinstance(got, GroupedRelease):
            groups = {k: _member(merge, r, name, stats[name], per_group) for k, r in got}
            params = {
                **got.parameters,
                "per_group": {"epsilon": per_group[0], "delta": per_group[1]},
            }
            out[name] = replace(got, epsilon=eps, delta=dlt, groups=groups, parameters=params)
        else:
            out[name] = _member(merge, got, name, stats[name], per_group)
    return out


def _member(
    merge: JointMerge,
    rel: Release,
    name: str,
    statistic: Statistic,
    share: tuple[float, float],
) -> Release:
    """One member's levels of the joint release ``rel`` of one group."""
    merged = [Fraction(p).limit_denominator(_MAX_DENOMINATOR) for p in merge.ps]
    at = [merged.index(q) for q in _levels(statistic)]
    single = not isinstance(statistic, Quantiles)
    spec = dict(rel.interval_parts)
    for part in ("low", "high", "shift_rows"):
        if part in spec:
            spec[part] = spec[part][at[0]] if single else [spec[part][i] for i in at]
    params = dict(rel.parameters)
    if spec:
        params["interval"] = spec
    if single:
        params.pop("ps", None)
    else:
        params["ps"] = [merge.ps[i] for i in at]
    params["joint_release"] = {
        "with": [n for n in merge.names if n != name],
        "ps": list(merge.ps),
        "epsilon": rel.epsilon,
        "share": share[0],
    }
    if rel.value is None:
        value: Any = None
    elif single:
        value = float(rel.value[at[0]])
    else:
        value = np.array([rel.value[i] for i in at], dtype=np.float64)
        value.setflags(write=False)
    return replace(
        rel,
        value=value,
        epsilon=share[0],
        delta=share[1],
        statistic=statistic.name,
        parameters=params,
        interval_parts={},
    )


def released_values(statistic: Statistic) -> int:
    """How many values ``statistic`` releases: its levels for ``ds.Quantiles``, else 1.
    Each is one share of the default split (module docstring)."""
    return len(statistic.ps) if isinstance(statistic, Quantiles) else 1


def joined(entry: Entry, merges: tuple[JointMerge, ...]) -> Entry:
    """``entry``, its levels released jointly when it is part of a joint release."""
    if isinstance(entry.statistic, Quantiles) and merge_of(merges, entry.name) is not None:
        return replace(entry, options={**entry.options, "joint": True})
    return entry


def split_receipt(
    entries: list[Entry], selection: tuple[float, float] | None, merges: tuple[JointMerge, ...]
) -> dict[str, Any]:
    """The query's receipt of its split: each statistic's share and the selection's."""
    split = {e.name: _entry_receipt(e) for e in entries}
    for merge in merges:
        for name in merge.names:
            split[name].update(joint=True, released_with=[n for n in merge.names if n != name])
    return {
        "split": split,
        "selection_share": SELECTION_SHARE if selection is not None else None,
    }


def _entry_receipt(entry: Entry) -> dict[str, Any]:
    """One statistic's share in the receipt: its (epsilon, delta), its weight (per
    released value), and for several quantiles how many values and whether jointly."""
    out: dict[str, Any] = {
        "epsilon": entry.epsilon,
        "delta": entry.delta,
        "weight": float(entry.weight),
    }
    if isinstance(entry.statistic, Quantiles):
        out["values"] = released_values(entry.statistic)
        out["joint"] = entry.options.get("joint")
    return out
