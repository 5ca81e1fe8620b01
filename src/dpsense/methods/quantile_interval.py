r"""A private 95% interval for a quantile: two more quantiles, at ranks moved outward.

The quantile's value :math:`x_{(r)}`, :math:`r = \max(1, \lceil pn \rceil)`, is bracketed by
two releases of the exponential mechanism at level p, each with its own share of the
budget (docs/intervals.md §3, after the private confidence intervals for the median of
Drechsler, Globus-Harris, McMillan, Sarathy and Smith 2022):

* **A coarse public grid.** Candidates :math:`c_0 = l < c_1 < \dots < c_K = u` (K = 64 equal
  steps of the bounds). Each record counts as the grid point at or below it (its cell
  :math:`y = c_{\max\{k: c_k \le x\}} \le x`), so the data lie on the candidates and some
  candidate has score 0. The counts the scores need, :math:`\#\{y < c_j\} = \#\{x < c_j\}`
  and :math:`\#\{y > c_j\} = \#\{x \ge c_{j+1}\}`, are comparisons with public doubles.
* **Ranks moved without knowing n.** The lower endpoint's data get :math:`k_{lo}` public
  records at l, the upper's :math:`k_{hi}` at u (a public change: neighbours stay
  neighbours, the score's sensitivity is unchanged). The level-p target of the padded
  data is then :math:`(1-p) k_{lo}` ranks below (:math:`p k_{hi}` above) the original one,
  whatever n is.
* **How far.** The exponential mechanism over G candidates outputs a candidate whose
  score is at least s with probability at most :math:`G e^{-\eta s}` when the best score
  is 0 (McSherry and Talwar 2007). With :math:`s = \lceil (\ln G + \ln(2/\alpha)) / \eta
  \rceil` rows and :math:`k_{lo} = \lceil s / (1-p) \rceil`: if the lower endpoint L were
  above :math:`y_{(r)}`, at least :math:`r + k_{lo}` padded records would lie below it and
  its score would be at least :math:`r + k_{lo} - p(n + k_{lo}) \ge (1-p) k_{lo} \ge s`.
  So :math:`P(L > x_{(r)}) \le P(L > y_{(r)}) \le \alpha / 2`, and likewise
  :math:`P(H < y_{(r)}) \le \alpha / 2` with :math:`k_{hi} = \lceil s / p \rceil`. As
  :math:`x_{(r)} < c_{j+1}` when :math:`y_{(r)} = c_j`, the interval is L to the grid point
  after H: it holds :math:`x_{(r)}` with probability at least :math:`1 - \alpha`.

Each endpoint is an exact draw (:class:`dpsense.noise.choice.ExponentialChoice`: integer
scores, the multiplier rounded down). Pure epsilon-DP at its share, under either neighbour
relation (the score's sensitivity is the point release's: ``quantile_score``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense._exact_budget import exact, log_bounds
from dpsense.mechanisms._quantile_sampler import QuantileScore
from dpsense.mechanisms.quantile import quantile_score
from dpsense.neighbours import Neighbours
from dpsense.noise.choice import ExponentialChoice
from dpsense.noise.rng import RandomSource
from dpsense.statistics._order import counts_below_points

__all__ = [
    "INTERVAL_STEPS",
    "endpoint_grid",
    "endpoint_scores",
    "interval_shift",
    "quantile_endpoints",
]

INTERVAL_STEPS: Final = 64
"""K: the interval's candidates are the bounds and K - 1 equal steps between them."""

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def endpoint_grid(lower: float, upper: float) -> F64:
    """The public candidates c_0 = lower < ... < c_K = upper (increasing doubles)."""
    points = lower + (upper - lower) * (np.arange(INTERVAL_STEPS + 1) / INTERVAL_STEPS)
    points[0], points[-1] = lower, upper
    return np.maximum.accumulate(np.minimum(points, upper))


def _counts_below(records: Any, points: F64) -> I64:
    """#{x < c} for each point c: from a numpy array, or from any record source (an
    engine's records: its exact counts, one per point)."""
    if isinstance(records, np.ndarray):  # one pass, no sorted copy
        return counts_below_points(records, points)
    return np.asarray(records.counts_below(points), dtype=np.int64)


def _size(records: Any) -> int:
    return int(records.shape[0]) if isinstance(records, np.ndarray) else int(records.size)


def interval_shift(p: float, epsilon: float, neighbours: Neighbours, alpha: float) -> int:
    """s: the score (in rows) an endpoint stays below with probability 1 - alpha / 2."""
    score = quantile_score(p, epsilon, neighbours, "interval")
    per_row = exact(score.eta) * score.den  # the multiplier of a score in rows
    if per_row <= 0:
        return 2**62
    _, log_ratio = log_bounds((INTERVAL_STEPS + 1) * 2 / exact(alpha))
    return max(1, math.ceil(log_ratio / per_row))


def endpoint_scores(
    below: I64, n: int, pad_low: int, pad_high: int, score: QuantileScore
) -> list[int]:
    """The integer scores ``max(0, den a - num N, den b - (den - num) N)`` of the candidates
    for the records (``below[j] = #{x < c_j}``, n of them) plus ``pad_low`` records at the
    lower bound and ``pad_high`` at the upper (N in all), each record counted at its cell.
    Python integers: the padding can be large (a level near 0 or 1 at a small epsilon),
    and no size of it may overflow."""
    counts = [int(c) for c in below]
    total = n + pad_low + pad_high
    num, den = score.num, score.den
    out = []
    for j, c in enumerate(counts):
        a = c + (pad_low if j > 0 else 0)  # the lower records lie below every c_j, j >= 1
        # cells above c_j: records at or above c_{j+1}, and the upper records for j < K
        b = (n - counts[j + 1] + pad_high) if j + 1 < len(counts) else 0
        out.append(max(0, den * a - num * total, den * b - (den - num) * total))
    return out


def _draw(
    below: I64,
    n: int,
    pad_low: int,
    pad_high: int,
    p: float,
    epsilon: float,
    neighbours: Neighbours,
    rng: RandomSource,
) -> int:
    """The index of one endpoint: level p over the cells of the padded records, drawn
    exactly with P(j) ∝ exp(-eta u_j)."""
    score = quantile_score(p, epsilon, neighbours, "interval")
    scores = endpoint_scores(below, n, pad_low, pad_high, score)
    floats = np.array([float(s) for s in scores], dtype=np.float64)  # each correctly rounded
    choice = ExponentialChoice(
        weights=np.ones(len(scores)),
        scores=floats,
        eta=score.eta,
        exact_score=lambda j: Fraction(scores[j]),
        score_error=float(np.max(floats)) * 2.0**-52,
    )
    return int(choice.sample(rng)[0])


def quantile_endpoints(
    records: Any,
    p: float,
    lower: float,
    upper: float,
    epsilon: float,
    neighbours: Neighbours,
    alpha: float,
    rng: RandomSource,
) -> tuple[float, float, dict[str, Any]]:
    """(L, H, receipt): the interval's two endpoints, each an epsilon-DP release (the
    caller charges 2 epsilon), and their public parameters."""
    grid = endpoint_grid(lower, upper)
    below = _counts_below(records, grid)
    n = _size(records)
    shift = interval_shift(p, epsilon, neighbours, alpha)
    level = quantile_score(p, epsilon, neighbours, "interval")  # p = num / den, exactly
    num, den = level.num, level.den
    pad_low = -(-shift * den // (den - num))  # ceil(s / (1 - p))
    pad_high = -(-shift * den // num)  # ceil(s / p)
    j_low = _draw(below, n, pad_low, 0, p, epsilon, neighbours, rng)
    j_high = _draw(below, n, 0, pad_high, p, epsilon, neighbours, rng)
    low = float(grid[j_low])
    high = float(grid[min(j_high + 1, INTERVAL_STEPS)])
    receipt = {"steps": INTERVAL_STEPS, "shift_rows": shift, "epsilon_each": epsilon}
    return low, high, receipt
