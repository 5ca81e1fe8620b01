"""The ``exponential`` method: quantiles by the exponential mechanism (Smith 2011).

The standard baseline for private quantiles: pure epsilon, no sensitivity analysis of the
data needed. See :mod:`dpsense.mechanisms.quantile` and docs/quantile_mechanisms.md.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpsense._arrays import FloatArray
from dpsense._exact_budget import difference_down, exact, product_down, quotient_down
from dpsense.defaults import ACCURACY_ALPHA, INTERVAL_SHARE
from dpsense.errors import Assign, InputError, Param
from dpsense.mechanisms.quantile import ExponentialQuantile
from dpsense.mechanisms.quantiles import RecursiveQuantiles, dithered, joint_is_better
from dpsense.methods._release import Release
from dpsense.methods.call import MethodCall
from dpsense.methods.quantile_interval import quantile_endpoints
from dpsense.neighbours import Neighbours
from dpsense.noise.rng import RandomSource
from dpsense.statistics import Quantile, Quantiles, Statistic
from dpsense.statistics._grid import PowerOfTwoGrid
from dpsense.statistics.units import group_privacy_budget, rows_per_unit

__all__ = ["check_exponential", "check_joint", "interval_budget", "release_exponential"]


def _grid_parameters(statistic: Quantile | Quantiles, spacing: float) -> dict[str, object]:
    if statistic.resolution is None:
        return {"grid": spacing}
    return {"grid": spacing, "resolution": statistic.resolution}


def _release(
    value: object,
    selection: str,
    epsilon: float,
    neighbours: Neighbours,
    statistic: Statistic,
    rng: RandomSource,
    params: dict[str, object],
) -> Release:
    """The Release of method ``exponential``: pure epsilon, no noise scale."""
    return Release(
        value,
        False,
        epsilon,
        0.0,
        "exponential",
        selection,
        None,
        neighbours,
        statistic.name,
        rng.seeded,
        None,
        params,
    )


def interval_budget(epsilon: float) -> tuple[float, float]:
    """(point, pair): a quantile's epsilon split between its value and its interval's two
    endpoints, drawn jointly (``INTERVAL_SHARE`` for the pair, the value the rest; both
    rounded down, so the two releases compose to at most ``epsilon``)."""
    pair = product_down(Fraction(INTERVAL_SHARE), epsilon)
    return difference_down(epsilon, exact(pair)), pair


def _outward(statistic: Quantiles, value: float, *, down: bool) -> float:
    """An interval's end on the declared resolution's grid, rounded outward."""
    if statistic.resolution is None:
        return value
    points = statistic.candidates()
    if down:
        k = max(int(points.count_at_most(np.array([value]))[0]) - 1, 0)
    else:
        k = min(int(points.count_below(np.array([value]))[0]), points.size - 1)
    return float(points.values(np.array([k]))[0])


def check_exponential(statistic: Statistic) -> None:
    """The exponential mechanism releases quantiles: refused otherwise, from the statistic
    alone (``query.methods.check_parameters`` runs it before any charge)."""
    if not isinstance(statistic, Quantile | Quantiles):
        raise InputError(
            Assign("method", "exponential", quoted=True),
            f" releases a median or quantiles; got {statistic.name}. Use another method: "
            "'global', 'smooth' or 'ptr'.",
        )


def check_joint(statistic: Statistic, joint: object) -> None:
    """``joint=`` is True or False, for several quantiles only."""
    if joint is None:
        return
    if not isinstance(statistic, Quantiles):
        raise InputError(
            Param("joint", word="option", method="exponential"),
            " chooses how several quantiles (ds.Quantiles) are released; "
            f"{statistic.name} is one value: drop it.",
        )
    if not isinstance(joint, bool):
        raise InputError(
            Param("joint", word="option", method="exponential"),
            f" must be True or False. Got {type(joint).__name__}.",
        )


def release_exponential(call: MethodCall, joint: bool | None = None) -> Release:
    """Release a quantile with the exponential mechanism (pure epsilon; delta unused).

    ``xc`` (clipped records) is reordered in place: callers pass a buffer they own.
    Several quantiles (:class:`Quantiles`) are released jointly by recursive halving
    (``joint=True``) or by one exponential-mechanism release per level at an equal share
    (``joint=False``); None (the default) picks by
    :func:`~dpsense.mechanisms.quantiles.joint_is_better`, as the plan does.
    """
    xc, statistic, epsilon, _, neighbours, rng = call.parts()  # delta unused
    check_exponential(statistic)
    check_joint(statistic, joint)
    if isinstance(statistic, Quantiles):
        if joint is None:
            joint = joint_is_better(len(statistic.ps), neighbours)
        return _release_several(
            xc, statistic, epsilon=epsilon, neighbours=neighbours, rng=rng, joint=joint
        )
    assert isinstance(statistic, Quantile)
    # a unit moves every score by at most m times a row's change (m = 1 without a unit)
    row_epsilon = group_privacy_budget(epsilon, 0.0, rows_per_unit(statistic))[0]
    point, pair = interval_budget(row_epsilon)
    mech = ExponentialQuantile(
        statistic.p,
        statistic.lower,
        statistic.upper,
        point,
        statistic.resolution,
        neighbours,
    )
    out = mech.release_clipped(xc, rng)
    value = float(out.value)
    low, high, receipt = quantile_endpoints(
        xc,
        statistic.p,
        statistic.lower,
        statistic.upper,
        pair,
        neighbours,
        ACCURACY_ALPHA,
        rng,
    )
    params = _grid_parameters(statistic, mech.grid)
    bound = mech.rank_bound()
    if bound is not None:  # public: epsilon, the score's sensitivity, the grid
        params["rank_bound"] = {"eta": bound[0], "candidates": bound[1]}
    params["interval"] = {
        "kind": "released",
        "low": statistic.round_to_resolution_down(low),
        "high": statistic.round_to_resolution_up(high),
        "alpha": ACCURACY_ALPHA,
        "share": INTERVAL_SHARE,
        "range": (statistic.lower, statistic.upper),
        **receipt,
    }
    return _release(value, mech.selection, epsilon, neighbours, statistic, rng, params)


def _joint_values(
    xc: FloatArray, statistic: Quantiles, point: float, neighbours: Neighbours, rng: RandomSource
) -> tuple[FloatArray, dict[str, object]]:
    """The levels by recursive halving at ``point`` in all, and its receipt."""
    res = statistic.resolution
    if res is None:
        grid = statistic.candidates()
        mech = RecursiveQuantiles(statistic.levels, grid, point, neighbours)
        values = mech.release_clipped(xc.copy(), rng)
    else:  # ties removed by dithering, releases rounded back to the resolution grid
        half = 0.5 * res
        grid = PowerOfTwoGrid.build(statistic.lower - half, statistic.upper + half, "Quantiles")
        mech = RecursiveQuantiles(statistic.levels, grid, point, neighbours)
        raw = mech.release_clipped(dithered(xc, res, rng), rng)
        values = statistic.candidates().nearest(raw)
    params = _grid_parameters(statistic, grid.spacing if res is None else res)
    params.update(
        ps=list(statistic.ps),
        joint=True,
        algorithm="recursive halving (Kaplan, Schnapp, Stemmer 2022)"
        if len(statistic.ps) > 1
        else "exponential mechanism",
        depth=mech.depth,
        epsilon_per_call=mech.per_call,
    )
    return values, params


def _separate_values(
    xc: FloatArray, statistic: Quantiles, point: float, neighbours: Neighbours, rng: RandomSource
) -> tuple[FloatArray, dict[str, object]]:
    """Each level by its own exponential mechanism at ``point / m`` (rounded down:
    sequential composition spends at most ``point``), sorted (post-processing; sorting
    never moves a vector further from a non-decreasing one, docs/quantile_mechanisms.md
    §7b), and its receipt."""
    each = quotient_down(point, len(statistic.ps))
    mechs = [
        ExponentialQuantile(
            p, statistic.lower, statistic.upper, each, statistic.resolution, neighbours
        )
        for p in statistic.ps
    ]
    values = np.sort(np.array([float(m.release_clipped(xc.copy(), rng).value) for m in mechs]))
    params = _grid_parameters(statistic, mechs[0].grid)
    params.update(
        ps=list(statistic.ps),
        joint=False,
        algorithm="one exponential mechanism per level (sequential composition)",
        depth=1,
        epsilon_per_call=each,
    )
    return values, params


def _release_several(
    xc: FloatArray,
    statistic: Quantiles,
    *,
    epsilon: float,
    neighbours: Neighbours,
    rng: RandomSource,
    joint: bool,
) -> Release:
    # a unit's rows change the calls of one depth by at most m rows in total
    row_epsilon = group_privacy_budget(epsilon, 0.0, rows_per_unit(statistic))[0]
    # the intervals: one pair of endpoints per level, INTERVAL_SHARE / m each (sequential
    # composition); the levels themselves the rest
    levels = len(statistic.ps)
    point, shared = interval_budget(row_epsilon)
    each = quotient_down(exact(shared), levels)
    if joint:
        values, params = _joint_values(xc, statistic, point, neighbours, rng)
    else:
        values, params = _separate_values(xc, statistic, point, neighbours, rng)
    values.setflags(write=False)
    ends = [
        quantile_endpoints(
            xc, p, statistic.lower, statistic.upper, each, neighbours, ACCURACY_ALPHA, rng
        )
        for p in statistic.ps
    ]
    params["selection"] = (
        "exponential mechanism; permute-and-flip on sub-grids of at most 2^16 points"
    )
    params["interval"] = {
        "kind": "released",
        "low": [_outward(statistic, low, down=True) for low, _, _ in ends],
        "high": [_outward(statistic, high, down=False) for _, high, _ in ends],
        "alpha": ACCURACY_ALPHA,
        "share": INTERVAL_SHARE,
        "range": (statistic.lower, statistic.upper),
        "steps": ends[0][2]["steps"],
        "epsilon_pair": each,
        "shift_rows": [receipt["shift_rows"] for _, _, receipt in ends],
    }
    return _release(values, "exponential-mechanism", epsilon, neighbours, statistic, rng, params)
