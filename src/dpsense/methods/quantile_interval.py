r"""A private 95% interval for a quantile: two more quantiles, at ranks moved outward.

The quantile's value :math:`x_{(r)}`, :math:`r = \max(1, \lceil pn \rceil)`, is bracketed by
a pair of level-p quantiles drawn together by one exponential mechanism with the
interval's share of the budget (docs/intervals.md §3, after the private confidence
intervals for the median of Drechsler, Globus-Harris, McMillan, Sarathy and Smith 2022):

* **A coarse public grid.** Candidates :math:`c_0 = l < c_1 < \dots < c_K = u` (K = 64 equal
  steps of the bounds). Each record counts as the grid point at or below it (its cell
  :math:`y = c_{\max\{k: c_k \le x\}} \le x`), so the data lie on the candidates and some
  candidate has score 0. The counts the scores need, :math:`\#\{y < c_j\} = \#\{x < c_j\}`
  and :math:`\#\{y > c_j\} = \#\{x \ge c_{j+1}\}`, are comparisons with public doubles.
* **Ranks moved without knowing n.** The lower endpoint's score :math:`u_{lo}` is that of
  the data plus :math:`k_{lo}` public records at l, the upper's :math:`u_{hi}` plus
  :math:`k_{hi}` at u (a public change: neighbours stay neighbours, each score's
  sensitivity is unchanged). The level-p target of the padded data is then
  :math:`(1-p) k_{lo}` ranks below (:math:`p k_{hi}` above) the original one.
* **One draw for the pair.** :math:`(L, H) = (c_j, c_k)`, :math:`j \le k`, with
  :math:`P \propto e^{-\eta U}`, :math:`U = \max(u_{lo}(j), u_{hi}(k))`: the maximum of two
  scores of sensitivity Δ has sensitivity Δ, so the pair is one epsilon-DP release.
* **How far.** The best pair has U = 0, so a pair with :math:`U \ge s` is drawn with
  probability at most :math:`P e^{-\eta s}` over the P = G (G + 1) / 2 pairs (McSherry and
  Talwar 2007). With :math:`s = \lceil (\ln P + \ln(1/\alpha)) / \eta \rceil` rows and
  :math:`k_{lo} = \lceil s / (1-p) \rceil`, :math:`k_{hi} = \lceil s / p \rceil`: if L were
  above :math:`y_{(r)}`, at least :math:`r + k_{lo}` padded records would lie below it and
  :math:`u_{lo}(L) \ge (1-p) k_{lo} \ge s`; likewise H below :math:`y_{(r)}` would give
  :math:`u_{hi}(H) \ge s`. So :math:`L \le y_{(r)} \le H` with probability at least
  :math:`1 - \alpha`; as :math:`x_{(r)} < c_{j+1}` when :math:`y_{(r)} = c_j`, the interval
  is L to the grid point after H.

The pair is an exact draw (:class:`dpsense.noise.choice.ExponentialChoice`: integer
scores, the multiplier rounded down). Pure epsilon-DP at its share, under either neighbour
relation (the score's sensitivity is the point release's: ``quantile_score``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Final

import numpy as np

from dpsense._arrays import F64, I64
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
    "pair_count",
    "quantile_endpoints",
]

INTERVAL_STEPS: Final = 64
"""K: the interval's candidates are the bounds and K - 1 equal steps between them."""


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
    """s: the score (in rows) that both endpoints stay below with probability 1 - alpha,
    for the pair drawn jointly with ``epsilon`` (:func:`pair_count` candidate pairs)."""
    score = quantile_score(p, epsilon, neighbours, "interval")
    per_row = exact(score.eta) * score.den  # the multiplier of a score in rows
    if per_row <= 0:
        return 2**62
    _, log_ratio = log_bounds(Fraction(pair_count()) / exact(alpha))
    return max(1, math.ceil(log_ratio / per_row))


def pair_count() -> int:
    """The candidate pairs (L, H) = (c_j, c_k), j <= k, of the joint draw: G (G + 1) / 2."""
    g = INTERVAL_STEPS + 1
    return g * (g + 1) // 2


def endpoint_scores(
    below: I64, n: int, pad_low: int, pad_high: int, score: QuantileScore
) -> list[int]:
    """The integer scores ``max(0, den a - num N, den b - (den - num) N)`` of the candidates
    for the records (``below[j] = #{x < c_j}``, n of them) plus ``pad_low`` records at the
    lower bound and ``pad_high`` at the upper (N in all), each record counted at its cell.
    Python integers: the padding can be large (a level near 0 or 1 at a small epsilon),
    and no size of it may overflow."""
    total = n + pad_low + pad_high
    num, den = score.num, score.den
    if den * total < _EXACT_INT64:  # every term fits an int64: numpy computes them exactly
        return _endpoint_scores_int64(below, n, pad_low, pad_high, num, den, total)
    counts = [int(c) for c in below]
    out = []
    for j, c in enumerate(counts):
        a = c + (pad_low if j > 0 else 0)  # the lower records lie below every c_j, j >= 1
        # cells above c_j: records at or above c_{j+1}, and the upper records for j < K
        b = (n - counts[j + 1] + pad_high) if j + 1 < len(counts) else 0
        out.append(max(0, den * a - num * total, den * b - (den - num) * total))
    return out


_EXACT_INT64: Final = 1 << 62
"""``endpoint_scores`` in numpy's int64 below this bound on ``den * N`` (its terms and
their differences then lie within +-2^62)."""


def _endpoint_scores_int64(
    below: I64, n: int, pad_low: int, pad_high: int, num: int, den: int, total: int
) -> list[int]:
    """:func:`endpoint_scores` in int64, for ``den * total < 2^62``: the same integers."""
    c = np.asarray(below, dtype=np.int64)
    a = c.copy()
    a[1:] += pad_low
    b = np.zeros_like(c)
    b[:-1] = n - c[1:] + pad_high
    zero = np.zeros_like(c)
    out = np.maximum(np.maximum(zero, den * a - num * total), den * b - (den - num) * total)
    return [int(v) for v in out.tolist()]


def _make_pairs() -> tuple[I64, I64]:
    j, k = np.triu_indices(INTERVAL_STEPS + 1)
    j, k = j.astype(np.int64), k.astype(np.int64)
    j.setflags(write=False)
    k.setflags(write=False)
    return j, k


_PAIRS: Final = _make_pairs()


def _pairs() -> tuple[I64, I64]:
    """The indices (j, k), j <= k, of the candidate pairs, in a fixed public order (made
    once: read-only arrays)."""
    return _PAIRS


def _draw_pair(
    low_scores: list[int], high_scores: list[int], score: QuantileScore, rng: RandomSource
) -> tuple[int, int]:
    """(j, k): the endpoints' indices, one exact draw with P(j, k) ∝ exp(-eta U(j, k)),
    U(j, k) = max(u_lo(j), u_hi(k)) over the pairs j <= k."""
    j, k = _pairs()
    lo = np.array([float(v) for v in low_scores], dtype=np.float64)  # correctly rounded
    hi = np.array([float(v) for v in high_scores], dtype=np.float64)
    floats = np.maximum(lo[j], hi[k])  # the max of two roundings is the rounded max

    def exact_score(i: int) -> Fraction:
        return Fraction(max(low_scores[int(j[i])], high_scores[int(k[i])]))

    choice = ExponentialChoice(
        weights=np.ones(j.shape[0]),
        scores=floats,
        eta=score.eta,
        exact_score=exact_score,
        score_error=float(np.max(floats)) * 2.0**-52,
    )
    i = int(choice.sample(rng)[0])
    return int(j[i]), int(k[i])


def quantile_endpoints(
    records: Any,
    p: float,
    lower: float,
    upper: float,
    epsilon: float,
    neighbours: Neighbours,
    alpha: float,
    rng: RandomSource,
    extra_rows: int = 0,
) -> tuple[float, float, dict[str, Any]]:
    """(L, H, receipt): the interval's two endpoints, drawn jointly as one epsilon-DP
    release (the caller charges epsilon), and their public parameters.

    ``extra_rows`` (b, public or released) moves the endpoints' targets b more ranks
    outward, to the records of ranks r - b and r + b: the padding is
    ``ceil((s + b) / (1 - p))`` and ``ceil((s + b) / p)`` (the population interval of a
    quantile, docs/intervals.md §8; 0 for the privacy interval)."""
    grid = endpoint_grid(lower, upper)
    below = _counts_below(records, grid)
    n = _size(records)
    shift = interval_shift(p, epsilon, neighbours, alpha)
    score = quantile_score(p, epsilon, neighbours, "interval")  # p = num / den, exactly
    num, den = score.num, score.den
    moved = shift + extra_rows
    pad_low = -(-moved * den // (den - num))  # ceil((s + b) / (1 - p))
    pad_high = -(-moved * den // num)  # ceil((s + b) / p)
    low_scores = endpoint_scores(below, n, pad_low, 0, score)
    high_scores = endpoint_scores(below, n, 0, pad_high, score)
    j_low, j_high = _draw_pair(low_scores, high_scores, score, rng)
    low = float(grid[j_low])
    high = float(grid[min(j_high + 1, INTERVAL_STEPS)])
    receipt = {"steps": INTERVAL_STEPS, "shift_rows": shift, "epsilon_pair": epsilon}
    return low, high, receipt
