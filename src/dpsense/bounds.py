r"""Private bounds: a public ``(lower, upper)`` for a column, found with privacy.

One exponential mechanism over pairs of points of a public log-scale grid
(docs/bounds.md): the grid ``v_0 < ... < v_{G-1}`` is 0 and ±2^k for k = -30..60
(G = 183); ``(lower, upper)`` is one pair ``(v_i, v_j)`` of the G^2, drawn with the whole
epsilon. With n the number of (bounded) rows,
n0 of them non-zero, ``a(v) = #{x < v}``, ``b(v) = #{x > v}`` (the rows each bound would
clip) and ``r_W(v) = #{|x| >= |v| / 2^W}``, the scores (lower is better) are

* lower: ``max(0, a(v) - t_lo n, [v < 0] w(v))``,
* upper: ``max(0, b(v) - t_hi n, [v > 0] w(v))``,
* width: ``w(v) = max(s n - r_W(v), h n0 - r_H(v))``,

with ``t_lo = quantiles[0]``, ``t_hi = 1 - quantiles[1]`` (the share each side may clip),
``s = 1/10``, ``W = 5``, ``h = 1/2``, ``H = 7``. Score 0 means: the bound clips at most its
target share, it is within a factor 2^W of the magnitude that a tenth of the data reach
and within 2^H of the median magnitude of the non-zero rows. The first term alone (the
quantile recipe of OpenDP) has a flat score ``t n`` over every grid point beyond the
data, so at small n the bound wanders to the end of the grid; the width terms make those
points cost ``max(s n, h n0)`` instead, and the zero-score set is an interval of several
grid points, not one target quantile. (Counting h against the non-zero rows keeps data
with many exact zeros from a floor that would tie clipping bounds with good ones.)

The pair scores ``S(i, j) = max(S_lo(v_i), S_hi(v_j))``. Each score, and so their max,
moves by at most m (= ``max_rows_per_unit``, 1 without a privacy unit) when a person is
added or removed, so the draw ``P(i, j) ∝ exp(-eta S(i, j))`` with ``eta <= epsilon /
(2 m)`` is epsilon-DP (McSherry & Talwar 2007); it is exact
(:class:`dpsense.noise.choice.ExponentialChoice`). The max, not two independent draws of
epsilon/2: a pair with one end good and the other clipping c rows too many weighs
``exp(-epsilon c / 2m)``, not ``exp(-epsilon c / 4m)``. Clipping: with probability at least
``1 - beta``, each bound clips at most ``t n + OPT + 2 m ln(G^2 / beta) / epsilon`` rows
(the utility theorem; OPT is 0 unless the data are too heavy-tailed for the width terms).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense._arrays import F64, as_data
from dpsense._exact_budget import exact, quotient_down
from dpsense.data.source import is_table
from dpsense.defaults import FAR_BOUND
from dpsense.errors import Assign, FarBoundsWarning, InputError, Name, Param
from dpsense.methods import Release
from dpsense.methods.zcdp import ZcdpPrice, pure_rho
from dpsense.noise.choice import ExponentialChoice
from dpsense.noise.rng import RandomSource
from dpsense.params import check_epsilon
from dpsense.tables.grouped import bounded_values
from dpsense.tables.handle import TableHandle
from dpsense.tables.row_filter import RowFilter
from dpsense.tables.schema import Cast, parse_schema

__all__ = [
    "PRIVATE_BOUNDS_DOC",
    "BoundsArgs",
    "bound_scores",
    "bounds_eta",
    "bounds_grid",
    "bounds_price",
    "check_bounds_delta",
    "check_private_bounds",
    "ordered_pair",
    "release_bounds",
]

K_LOW: Final = 30
"""The smallest non-zero magnitude on the grid is 2^-K_LOW."""
K_HIGH: Final = 60
"""The largest magnitude on the grid is 2^K_HIGH."""
WIDTH_STEPS: Final = 8
"""W: the levels of the width term: a bound v costs s n / W for each level j = 1..W at
which fewer than a tenth of the rows on its side of 0 reach v / 2^j."""
WIDTH_SHARE: Final = Fraction(1, 10)
"""s: the share of the data that must reach |bound| / 2^W."""
BULK_STEPS: Final = 7
"""H: a bound costs nothing for width while half the non-zero rows reach 2^-H of its size."""
BULK_SHARE: Final = Fraction(1, 2)
"""h: the share of the non-zero rows that must reach |bound| / 2^H."""
_MAX_DENOMINATOR: Final = 1_000_000
TAIL_ROWS: Final = Fraction(2)
"""c: bounds for a mean or a sum (``serve="mean"``) aim to clip K = c m / epsilon rows at
each end, not a share of the rows (docs/bounds.md "Bounds for a mean"; measured in
benchmarks/mean_private_bounds.py)."""
SERVES: Final = ("quantiles", "mean")
"""What the bounds serve: quantiles keep a share of each tail, a mean or a sum a number of
rows."""


def bounds_grid() -> F64:
    """The public candidate grid: 0 and ±2^k for k = -K_LOW..K_HIGH, increasing."""
    powers = np.ldexp(1.0, np.arange(-K_LOW, K_HIGH + 1))
    return np.concatenate([-powers[::-1], [0.0], powers])


def _same_side_reach(x: F64, grid: F64, steps: int) -> NDArray[np.int64]:
    """``#{x >= v / 2^steps}`` for each grid point v > 0 and ``#{x <= v / 2^steps}`` for
    v < 0 (rows on v's side of 0 whose magnitude is within a factor 2^steps of v's); 0
    at v = 0. Exact: v / 2^steps is a power of two."""
    ordered = np.sort(x)
    scaled = np.ldexp(grid, -steps)
    above = ordered.size - np.searchsorted(ordered, scaled, side="left")
    below = np.searchsorted(ordered, scaled, side="right")
    return np.where(grid > 0, above, np.where(grid < 0, below, 0)).astype(np.int64)


def _level_shortfalls(x: F64, grid: F64, tail: Fraction | None) -> list[list[Fraction]]:
    """For each width level j = 1..W, each grid point's ``max(0, s n - r_j)`` (with a
    ``tail``, its share capped: :func:`bound_scores`)."""
    n = int(x.size)
    # the target of each level: a share s of the rows of the larger of v's side of 0 and
    # the rest (half the rows for symmetric data; all of them for a bound on a side with
    # no rows, which then pays for it); it moves by at most s when a row is added or removed
    positive, negative = int(np.count_nonzero(x > 0)), int(np.count_nonzero(x < 0))
    sides = [(positive, negative) if v > 0 else (negative, positive) for v in grid.tolist()]
    targets = [WIDTH_SHARE * max(side, n - side) for side, _ in sides]
    # with a tail cap, s times the rows on the other side of 0 is added to the cap: a bound
    # on the wrong side of one-signed data pays the full s T. (Not the rows missing on v's
    # side, s (n - 2 n_v): removing a row of v's side would raise it by s while r_j drops
    # by 1, a move of 1 + s.)
    missing = [WIDTH_SHARE * other for _, other in sides]
    # the mean over the levels of max(0, target - r_j): each term moves by at most 1 when
    # a row is added or removed, so their mean does too; it grows by target / W per
    # doubling beyond the data, where one level alone is flat
    return [
        [
            max(Fraction(0), _capped(target, tail, j, extra) - r)
            for target, extra, r in zip(targets, missing, reach, strict=True)
        ]
        for j, reach in (
            (j, _same_side_reach(x, grid, j).tolist()) for j in range(1, WIDTH_STEPS + 1)
        )
    ]


def bound_scores(
    x: F64, grid: F64, t_lo: Fraction, t_hi: Fraction, tail: Fraction | None = None
) -> tuple[list[Fraction], list[Fraction]]:
    """The exact scores of every grid point as a lower and as an upper bound (in rows).

    ``lower: max(0, a - t_lo n, [v < 0] w)``, ``upper: max(0, b - t_hi n, [v > 0] w)``
    with ``a = #{x < v}``, ``b = #{x > v}``, the width term
    ``w = max(mean_j max(0, s n - r_j), h n0 - r_H)`` over the levels j = 1..W,
    ``r_j`` the rows on v's side of 0 within a factor 2^j of v (:func:`_same_side_reach`),
    ``r_H = #{|x| >= |v|/2^H}`` and n0 the non-zero rows (infinities count as beyond
    every grid point; NaN must be gone).

    With ``tail`` (K rows, public: the bounds of a mean or a sum, docs/bounds.md "Bounds
    for a mean") every share of the rows is capped by a number of rows: the clipping
    target ``min(t n, K)``, level j's ``min(s T, K 2^(j-1))`` and the bulk term's
    ``min(h n0, K 2^(H-1))``. Each cap is a minimum of a public number and a share, so
    it moves by at most the share when a row is added or removed: the sensitivity is
    unchanged. Without it (None) the scores are exactly the quantile recipe's.
    """
    n = int(x.size)
    nonzero = int(np.count_nonzero(x))
    magnitudes = np.sort(np.abs(x))
    ordered = np.sort(x)
    below = np.searchsorted(ordered, grid, side="left")
    above = n - np.searchsorted(ordered, grid, side="right")
    bulk = n - np.searchsorted(magnitudes, np.ldexp(np.abs(grid), -BULK_STEPS), side="left")
    short = _level_shortfalls(x, grid, tail)
    clip_lo, clip_hi = _capped(t_lo * n, tail, 1), _capped(t_hi * n, tail, 1)
    half = _capped(BULK_SHARE * nonzero, tail, BULK_STEPS)
    lows: list[Fraction] = []
    highs: list[Fraction] = []
    for i, (v, a, b, q) in enumerate(
        zip(grid.tolist(), below.tolist(), above.tolist(), bulk.tolist(), strict=True)
    ):
        # at v = 0 the counts include zeros, but the width terms apply only for v != 0
        levels = sum((level[i] for level in short), Fraction(0)) / WIDTH_STEPS
        width = max(levels, half - q)
        lows.append(max(Fraction(0), a - clip_lo, width if v < 0 else Fraction(0)))
        highs.append(max(Fraction(0), b - clip_hi, width if v > 0 else Fraction(0)))
    return lows, highs


def _capped(
    share: Fraction, tail: Fraction | None, level: int, extra: Fraction = Fraction(0)
) -> Fraction:
    """``min(share, tail 2^(level-1) + extra)``: a share of the rows capped by a public
    number of rows plus ``extra`` (no cap without ``tail``). When ``share`` and ``extra``
    each move by at most d as a row is added or removed, so does the result."""
    if tail is None:
        return Fraction(share)
    return min(Fraction(share), Fraction(tail * 2 ** (level - 1) + extra))


def _draw_pair(rng: RandomSource, lows: list[Fraction], highs: list[Fraction], eta: float) -> int:
    """One exact draw of the pair index k = i G + j with P(k) ∝ exp(-eta max(lows[i],
    highs[j]))."""
    size = len(highs)
    floats = np.maximum.outer(
        np.array([float(v) for v in lows]), np.array([float(v) for v in highs])
    ).ravel()
    # float(Fraction) is correctly rounded and rounding is monotone, so the float of the
    # max is the max of the floats: within half an ulp, |s| 2^-53
    error = float(np.max(np.abs(floats))) * 2.0**-52
    choice = ExponentialChoice(
        weights=np.ones(floats.size),
        scores=floats,
        eta=eta,
        exact_score=lambda k: max(lows[k // size], highs[k % size]),
        score_error=error,
    )
    return int(choice.sample(rng)[0])


def bounds_eta(epsilon: float, m: int) -> float:
    """eta = epsilon / (2 m), rounded down: the pair's score moves by at most m."""
    return quotient_down(exact(epsilon), 2 * m)


def ordered_pair(grid: F64, i_lo: int, i_hi: int) -> tuple[float, float]:
    """Post-processing: the drawn pair as an increasing pair of grid points (swapped when
    the lower came out above the upper, one step apart at least)."""
    i_lo, i_hi = min(i_lo, i_hi), max(i_lo, i_hi)
    if i_lo == i_hi:
        i_lo, i_hi = max(i_lo - 1, 0), min(i_hi + 1, grid.size - 1)
    return float(grid[i_lo]), float(grid[i_hi])


def check_bounds_delta(delta: float) -> None:
    """Raise unless ``delta`` is 0: private bounds are pure epsilon-DP."""
    if delta != 0.0:
        raise InputError(
            "private_bounds is pure epsilon-DP and spends no delta: pass ",
            Assign("delta", "0"),
            " (the default).",
        )


def bounds_price(epsilon: float) -> ZcdpPrice:
    """The zCDP price of one private bounds step at ``epsilon``: the draw is one exponential
    mechanism, pure epsilon-DP (module docstring; delta must be 0, :func:`check_bounds_delta`),
    so it is epsilon^2/2-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    return ZcdpPrice(pure_rho(epsilon))


PRIVATE_BOUNDS_DOC = """Private ``(lower, upper)`` bounds of a column, epsilon-DP (add-remove).

    ``data`` is anything :func:`dpsense.release` takes (an array, a DataFrame, a file, a
    Spark DataFrame...). The value is a pair of public grid points (0 or ±2^k), drawn by
    one exponential mechanism over all pairs (module docstring, docs/bounds.md): the
    lower aims to clip at most the share ``quantiles[0]`` of the rows, the upper at most
    ``1 - quantiles[1]``, each within a factor 2^5 of the magnitude a tenth of the data
    reach and 2^7 of the median magnitude of the non-zero rows. The noise adds about
    ``4 m ln(G) / epsilon`` clipped rows per end at worst (m rows per person, G = 183
    grid points); docs/bounds.md states the probability. Use them as the
    bounds of a later release, whose budget is separate (an :class:`dpsense.Accountant`
    adds both). ``delta`` must be 0: this is pure epsilon-DP. It always answers: on data
    too small for the noise, the bounds are wide or clip more.
    ``schema`` casts columns in the engine as in :func:`dpsense.release` (a row whose
    value does not fit its declared type is dropped), so that ``release(..., schema=...,
    bounds="private")`` reads the same column in both steps. The table is typed as a
    release types it (an undeclared privacy unit column read as text). A release's own
    bounds step (``bounds="private"``) makes the same draw on its table's handle, with its
    ``where=`` filter, inside the release's own request.
    ``serve="mean"`` finds bounds for a mean or a sum: each end aims to clip
    ``K = 2 m / epsilon`` rows rather than a share of them (capped at that share), so the
    clip follows the column's tail at every size (docs/bounds.md "Bounds for a mean");
    ``release(..., bounds="private")`` does so for a column read only by means and sums.
    """
"""The docstring of ``dpsense.private_bounds`` (``query/one_step.py``, the door that
releases through the pipeline): the mechanism, beside its code."""


@dataclass(frozen=True)
class BoundsArgs:
    """The checked arguments of :func:`private_bounds` (everything but the data)."""

    epsilon: float
    quantiles: tuple[float, float]
    column: str | None
    privacy_unit: str | None
    max_rows_per_unit: int
    nulls: str
    casts: Mapping[str, Cast]
    row_filter: RowFilter | None
    serve: str = "quantiles"

    @property
    def tail_rows(self) -> Fraction | None:
        """K = c m / epsilon (exact) for ``serve="mean"``, None for quantiles."""
        if self.serve != "mean":
            return None
        m = self.max_rows_per_unit if self.privacy_unit is not None else 1
        return TAIL_ROWS * m / Fraction(self.epsilon)


def check_private_bounds(
    epsilon: float,
    delta: float = 0.0,
    *,
    column: str | None = None,
    privacy_unit: str | None = None,
    max_rows_per_unit: int = 1,
    nulls: str = "error",
    quantiles: tuple[float, float] = (0.02, 0.98),
    schema: Mapping[str, str] | None = None,
    row_filter: RowFilter | None = None,
    serve: str = "quantiles",
) -> BoundsArgs:
    """The arguments of :func:`private_bounds` checked, in its order, before any data is
    read."""
    where = "private_bounds"
    eps = check_epsilon(epsilon, where=where)
    check_bounds_delta(delta)
    p_lo, p_hi = _check_quantiles(quantiles)
    _check_units(nulls, privacy_unit, max_rows_per_unit)
    casts = parse_schema(schema, where)
    if serve not in SERVES:
        raise InputError(
            Param("serve", of=where), f" must be one of {SERVES}. Got {serve!r} instead."
        )
    return BoundsArgs(
        eps, (p_lo, p_hi), column, privacy_unit, max_rows_per_unit, nulls, casts, row_filter,
        serve,
    )  # fmt: skip


def release_bounds(data: Any, args: BoundsArgs, source: RandomSource) -> Release:
    """The draw of :func:`private_bounds` on ``data``, its arguments checked."""
    unit, (p_lo, p_hi) = args.privacy_unit, args.quantiles
    x = _values(
        data, args.column, unit, args.max_rows_per_unit, args.nulls, source, args.casts,
        args.row_filter,
    )  # fmt: skip
    m = args.max_rows_per_unit if unit is not None else 1
    lower, upper, eta = _drawn_bounds(x, p_lo, p_hi, args.epsilon, m, source, args.tail_rows)
    _warn_far(lower, upper, "private_bounds")
    return Release(
        value=(lower, upper),
        refused=False,
        epsilon=args.epsilon,
        delta=0.0,
        method="exponential",
        noise="exponential-mechanism",
        scale=None,
        neighbours="add-remove",
        statistic="bounds",
        seeded=source.seeded,
        parameters=_receipt(p_lo, p_hi, eta, unit, m, args.tail_rows),
    )


def _drawn_bounds(
    x: Any,
    p_lo: float,
    p_hi: float,
    eps: float,
    m: int,
    source: RandomSource,
    tail: Fraction | None = None,
) -> tuple[float, float, float]:
    """The drawn pair of grid points (lower, upper) and the exponential mechanism's eta."""
    grid, lows, highs = _scores_on_the_grid(x, p_lo, p_hi, tail)
    # the pair's score max(S_lo(i), S_hi(j)) moves by at most m per person: one draw over
    # all G^2 pairs with eta = epsilon / (2 m) is epsilon-DP (rounded down: more private)
    eta = bounds_eta(eps, m)
    k = _draw_pair(source, lows, highs, eta)
    lower, upper = ordered_pair(grid, k // grid.size, k % grid.size)
    return lower, upper, eta


def _scores_on_the_grid(
    x: Any, p_lo: float, p_hi: float, tail: Fraction | None = None
) -> tuple[Any, Any, Any]:
    """The grid of candidate bounds and each point's score as a lower and an upper bound
    of the target quantiles (exact rationals of the levels)."""
    grid = bounds_grid()
    t_lo = Fraction(p_lo).limit_denominator(_MAX_DENOMINATOR)
    t_hi = 1 - Fraction(p_hi).limit_denominator(_MAX_DENOMINATOR)
    lows, highs = bound_scores(np.asarray(x, dtype=np.float64), grid, t_lo, t_hi, tail)
    return grid, lows, highs


FAR: Final = FAR_BOUND
"""Bounds this far out (about 1e15) are rarely a column's real range."""


def _warn_far(lower: float, upper: float, where: str) -> None:
    """Warn when a released bound is beyond :data:`FAR` (post-processing of the released
    pair: the warning depends on released values only)."""
    if max(abs(lower), abs(upper)) >= FAR:
        warnings.warn(
            f"The bounds found by {where} reach beyond 2^50 (about 1e15): the column "
            "holds infinities or sentinel values (such as 9999999), or too few rows for the "
            "search at this epsilon; every release clips to the bounds, and a mean or a sum "
            "is then mostly noise. Check the column, drop such rows, or pass public bounds.",
            FarBoundsWarning,
            stacklevel=3,
        )


def _check_units(nulls: str, privacy_unit: str | None, max_rows_per_unit: Any) -> None:
    """The rule for missing values and the contribution bound, checked."""
    if nulls not in ("error", "drop"):
        raise InputError(Param("nulls"), f" must be 'error' or 'drop'. Got {nulls!r} instead.")
    if privacy_unit is None and max_rows_per_unit != 1:
        raise InputError(
            Name("max_rows_per_unit"),
            " bounds what one privacy unit contributes: pass ",
            Assign("privacy_unit"),
            " (the column identifying a person).",
        )
    if not isinstance(max_rows_per_unit, int) or max_rows_per_unit < 1:
        raise InputError(
            Name("max_rows_per_unit"),
            f" must be an integer >= 1. Got {max_rows_per_unit!r} instead.",
        )


def _receipt(
    p_lo: float,
    p_hi: float,
    eta: float,
    privacy_unit: str | None,
    m: int,
    tail: Fraction | None = None,
) -> dict[str, Any]:
    """The public parameters of a bounds release."""
    out: dict[str, Any] = {
        "quantiles": (p_lo, p_hi),
        "grid": f"0 and ±2^k, k = {-K_LOW}..{K_HIGH}",
        "eta": eta,
        "width_steps": WIDTH_STEPS,
        "width_share": float(WIDTH_SHARE),
        "bulk_steps": BULK_STEPS,
        "bulk_share": float(BULK_SHARE),
        "privacy_unit": privacy_unit,
        "max_rows_per_unit": m,
    }
    if tail is not None:  # bounds for a mean: each end aims at K clipped rows
        out["serve"] = "mean"
        out["tail_rows"] = float(tail)
    return out


def _check_quantiles(quantiles: Any) -> tuple[float, float]:
    try:
        p_lo, p_hi = (float(q) for q in quantiles)
    except (TypeError, ValueError):
        raise InputError(
            Param("quantiles", of="private_bounds"), " must be two numbers, e.g. (0.02, 0.98)."
        ) from None
    if not (0.0 <= p_lo < p_hi <= 1.0) or math.isnan(p_lo) or math.isnan(p_hi):
        raise InputError(
            Param("quantiles", of="private_bounds", word=""),
            " must satisfy 0 <= low < high <= 1, e.g. (0.02, 0.98).",
        )
    return p_lo, p_hi


def _values(
    data: Any,
    column: str | None,
    unit: str | None,
    m: int,
    nulls: str,
    source: Any,
    casts: Mapping[str, Cast],
    row_filter: RowFilter | None = None,
) -> np.ndarray:
    if (
        isinstance(data, TableHandle)
        or is_table(data)
        or unit is not None
        or column is not None
        or casts
        or row_filter
    ):
        return bounded_values(
            data,
            column=column,
            privacy_unit=unit,
            max_rows_per_unit=m,
            nulls=nulls,
            rng=source,
            schema=casts,
            row_filter=row_filter,
        )
    # the table path draws a bounding key from the generator first: drawing it here too
    # keeps seeded releases equal whatever the input's format
    source.words(2)
    # infinities fall in the outermost buckets of the histogram, as any value beyond
    # the grid does; NaN and None are missing values, for nulls=
    return as_data(data, name="data", where="private_bounds", allow_empty=True, nulls=nulls)
