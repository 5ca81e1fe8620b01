r"""Bounds found in the same call: ``ds.release(..., bounds="private")``.

A statistic built without bounds (``ds.Median()``) is released in two steps charged as one:

1. :func:`dpsense.private_bounds` over the whole value column, at
   :math:`\varepsilon_b` = ``bounds_share`` x epsilon (rounded down), each privacy unit kept
   to ``max_rows_per_unit`` rows of the column by the keyed hash (its own draw, before any
   grouping: every group shares the one pair of bounds);
2. the release itself with those bounds, at :math:`\varepsilon - \varepsilon_b` (the exact
   difference rounded down) and the whole delta.

Step 1 is :math:`\varepsilon_b`-DP for a unit: the unit has at most m rows in the one
column it sees, whatever the number of groups, and ``private_bounds`` is
:math:`\varepsilon_b`-DP for units of m rows. Step 2 is
:math:`(\varepsilon - \varepsilon_b, \delta)`-DP for every value of the public bounds step
1 outputs. By sequential (adaptive) composition (Dwork and Roth 2014, Theorem 3.16, which
holds when the second mechanism is chosen from the first one's output) the pair is
:math:`(\varepsilon, \delta)`-DP, and the accountant charges that total once.
docs/bounds_in_release.md gives the derivation and the measured default share.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

from dpsense._exact_budget import difference_down, float_up, product_down
from dpsense.bounds import bounds_price, check_private_bounds, release_bounds
from dpsense.defaults import ACCURACY_ALPHA, BOUNDS_SHARE
from dpsense.errors import Assign, ClippingWarning, InputError, Name, Param
from dpsense.methods import Release
from dpsense.neighbours import Neighbours
from dpsense.noise.rng import RandomSource
from dpsense.statistics import BoundedStatistic, Statistic
from dpsense.statistics._grid import ResolutionGrid
from dpsense.tables.grouped import GroupedRelease

if TYPE_CHECKING:
    from dpsense.query.plan import QueryPlan

__all__ = [
    "BOUNDS_SHARE",
    "BoundsPlan",
    "find_bounds",
    "mark_private_bounds",
    "missing_bounds",
    "plan_bounds",
    "served",
    "with_bounds_receipt",
]


def served(statistics: Sequence[Statistic]) -> str:
    """What one column's bounds step serves, from the request only: "mean" when every
    statistic that reads it is a mean or a sum (a clip near the top K = c m / epsilon_b
    rows, docs/bounds.md "Bounds for a mean"), else "quantiles" (a share of each tail, as
    a quantile wants)."""
    from dpsense.statistics import Mean, Sum

    if statistics and all(isinstance(s, Mean | Sum) for s in statistics):
        return "mean"
    return "quantiles"


@dataclass(frozen=True)
class BoundsPlan:
    """How ``bounds="private"`` splits epsilon, from public parameters only."""

    share: float
    """The share of epsilon asked for."""
    epsilon: float
    """Epsilon of the bounds step: share x epsilon, rounded down."""
    rest: float
    """Epsilon left for the release: the exact difference, rounded down."""


def missing_bounds(statistic: BoundedStatistic, where: str) -> InputError:
    """The error for a statistic built without bounds and released without
    ``bounds="private"``: it names both ways."""
    return InputError(
        f"{type(statistic).__name__} was built without bounds: give public bounds chosen "
        f"without looking at the data, e.g. {statistic._example()}, or pass ",
        Assign("bounds", "private", quoted=True),
        f" to {where} to find them privately (",
        Name("bounds_share"),
        f" of epsilon, {BOUNDS_SHARE:g} by default). dpsense never infers bounds from the data.",
    )


def plan_bounds(
    statistic: Statistic,
    bounds: object,
    bounds_share: object,
    epsilon: float,
    neighbours: Neighbours,
    *,
    where: str = "release",
) -> BoundsPlan | None:
    """The split of ``bounds="private"`` (None without it), or an InputError.

    Without ``bounds="private"`` a statistic built without bounds is an error that says
    both ways; with it, the statistic must need bounds and not have them, and the
    neighbours must be add-remove (private bounds are add-remove DP).
    """
    if bounds is not None and bounds != "private":
        raise InputError(
            Param("bounds", of=where),
            f" must be None (the statistic's own bounds) or 'private'. Got {bounds!r} instead.",
        )
    if bounds is None:
        if bounds_share is not None:
            raise InputError(
                Param("bounds_share", of=where),
                " is the share of epsilon spent on private bounds: pass ",
                Assign("bounds", "private", quoted=True),
                " too, or drop it.",
            )
        if isinstance(statistic, BoundedStatistic) and not statistic.has_bounds:
            raise missing_bounds(statistic, where)
        return None
    if not isinstance(statistic, BoundedStatistic):
        raise InputError(
            f"{statistic.name} uses no value and needs no bounds: drop ",
            Assign("bounds", "private", quoted=True),
            ".",
        )
    if statistic.has_bounds:
        raise InputError(
            f"This {statistic.name} already has bounds ({statistic.lower:g}, "
            f"{statistic.upper:g}): drop ",
            Assign("bounds", "private", quoted=True),
            ", or build it without bounds "
            f"(e.g. ds.{type(statistic).__name__}()) to find them privately.",
        )
    if neighbours != "add-remove":
        raise InputError(
            Assign("bounds", "private", quoted=True),
            " finds bounds with add-remove differential privacy: pass ",
            Assign("neighbours", "add-remove", quoted=True),
            ", or give public bounds.",
        )
    return _bounds_split(bounds_share, epsilon, where)


def _bounds_split(bounds_share: object, epsilon: float, where: str) -> BoundsPlan:
    """The bounds step's share of epsilon and the rest (rounded so that they add up to at
    most epsilon), or an InputError for a share outside (0, 1) or one that leaves nothing."""
    share = BOUNDS_SHARE if bounds_share is None else bounds_share
    if (
        isinstance(share, bool)
        or not isinstance(share, int | float)
        or not 0.0 < float(share) < 1.0
    ):
        raise InputError(
            Param("bounds_share", of=where),
            f" must be a float in (0, 1). Got {bounds_share!r} instead.",
        )
    eps_b = product_down(float(share), epsilon)
    rest = difference_down(epsilon, eps_b)
    if not (eps_b > 0.0 and rest > 0.0):
        raise InputError(
            Param("bounds_share", of=where),
            " leaves no epsilon for the bounds or for the release (",
            Assign("epsilon", repr(epsilon)),
            ", ",
            Assign("bounds_share", repr(share)),
            "): pass a share further from 0 and 1.",
        )
    return BoundsPlan(float(share), eps_b, rest)


def find_bounds(
    plan: QueryPlan,
    data: Any,
    statistic: BoundedStatistic,
    step: BoundsPlan,
    column: str | None,
    rng: RandomSource,
    serve: str = "quantiles",
) -> tuple[BoundedStatistic, dict[str, Any]]:
    """Step 1: the statistic with private bounds of ``column``, and their receipt.

    ``private_bounds`` bounds each unit to the plan's ``max_rows`` rows of the whole column
    (not per group: a unit in g groups still adds at most m rows here), of the column as
    the release reads it (the plan's ``schema`` casts it and its ``row_filter`` keeps rows
    the same way).
    """
    privacy_unit, max_rows_per_unit = plan.unit, plan.max_rows
    # the draw of ds.private_bounds, checked as it checks it, inside this release's own
    # request (priced by query.price with the rest of the plan: no second door)
    args = check_private_bounds(
        step.epsilon,
        column=column,
        privacy_unit=privacy_unit,
        max_rows_per_unit=max_rows_per_unit,
        nulls=plan.nulls,
        schema=plan.schema,
        row_filter=plan.row_filter,
        serve=serve,
    )
    found = release_bounds(data, args, rng)
    lower, upper = (float(v) for v in found.value)
    bounded, dropped = bounded_statistic(statistic, lower, upper)
    receipt = {
        "source": "private",
        "epsilon": found.epsilon,
        "share": step.share,
        "lower": lower,
        "upper": upper,
        "method": found.method,
        "privacy_unit": privacy_unit,
        "max_rows_per_unit": max_rows_per_unit if privacy_unit is not None else 1,
    }
    if args.tail_rows is not None:
        receipt["serve"] = "mean"
        receipt["tail_rows"] = float(args.tail_rows)
    if dropped:
        receipt["resolution_dropped"] = True
    return bounded, receipt


def bounded_statistic(statistic: BoundedStatistic, lower: float, upper: float) -> tuple[Any, bool]:
    """``statistic`` with the private bounds, and whether its declared resolution had to be
    dropped: bounds too wide for its grid (2^50 steps or more, e.g. the ends of the bounds
    grid on too little data) give a continuous release instead of an error after the
    budget is spent. A choice made from the released bounds only: post-processing."""
    resolution = getattr(statistic, "resolution", None)
    if resolution is not None:
        try:
            ResolutionGrid.build(lower, upper, resolution, type(statistic).__name__)
        except InputError:
            continuous = replace(cast(Any, statistic), resolution=None, lower=lower, upper=upper)
            return continuous, True
    return statistic.with_bounds(lower, upper), False


def mark_private_bounds(
    result: Release | GroupedRelease, bounds: dict[str, Any], *, where: str = "release"
) -> Release | GroupedRelease:
    """``result`` with each of its releases (each group's) naming the bounds it used
    (``parameters["bounds"]``), so that each can say when clipping may dominate
    (``Release.clipping_may_dominate``); a :class:`ClippingWarning` when some release
    does (read from released values and public parameters only: post-processing)."""
    if isinstance(result, GroupedRelease):
        groups = {
            key: replace(rel, parameters={**rel.parameters, "bounds": bounds})
            for key, rel in result.groups.items()
        }
        params = {**result.parameters, "bounds": bounds}
        result = replace(result, groups=groups, parameters=params)
        releases = list(groups.values())
    else:
        result = replace(result, parameters={**result.parameters, "bounds": bounds})
        releases = [result]
    if any(rel.clipping_may_dominate(ACCURACY_ALPHA) for rel in releases):
        warn_clipping(where)
    return result


def warn_clipping(where: str) -> None:
    """The warning of a release whose private bounds may clip much of its column."""
    warnings.warn(
        ClippingWarning(
            f"The bounds found by {where} (bounds='private') may clip much of the column: "
            "the interval reaches a bound (or a bound lies beyond 2^50), so the release "
            "covers the values clipped to those bounds and may be far from the statistic "
            "of the raw values; it is marked unreliable. Pass public bounds, or more "
            "epsilon (or a larger bounds_share)."
        ),
        stacklevel=4,
    )


def with_bounds_receipt(
    result: Release | GroupedRelease,
    bounds: dict[str, Any],
    *,
    epsilon: float,
    delta: float,
    release_epsilon: float,
) -> Release | GroupedRelease:
    """The release's receipt with both parts: the total guarantee ``(epsilon, delta)`` and
    ``parameters["bounds"]`` (step 1), ``parameters["release"]`` (step 2)."""
    release_part = {"epsilon": release_epsilon, "delta": result.delta}
    params = {**result.parameters, "bounds": bounds, "release": release_part}
    result = mark_private_bounds(result, bounds)
    if isinstance(result, GroupedRelease):
        return replace(result, epsilon=epsilon, delta=delta, parameters=params)
    rho = result.rho
    if rho is not None:  # zCDP adds (Lemma 2.3): the release's rho and the bounds step's
        rho = float_up(Fraction(rho) + bounds_price(bounds["epsilon"]).rho)
    return replace(result, epsilon=epsilon, rho=rho, parameters=params)
