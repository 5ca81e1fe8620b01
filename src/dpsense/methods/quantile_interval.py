r"""A private 95% interval for a quantile: two more quantiles, at ranks moved outward, on
public ladders around the released value.

The quantile's value :math:`x_{(r)}`, :math:`r = \max(1, \lceil pn \rceil)`, is bracketed by
two releases of the exponential mechanism at level p, each with its own share of the
budget, drawn after the point M (docs/intervals.md §3, after the private confidence
intervals for the median of Drechsler, Globus-Harris, McMillan, Sarathy and Smith 2022):

* **Ladders around the released value.** The lower endpoint's candidates are M and the
  points :math:`M - w 2^{-B + k/Q}` (w the bounds' width, B = 20 octaves, Q = 4 steps an
  octave, k = 0..BQ) clipped to the bounds, with the lower bound; the upper's mirror them
  above M. At most :math:`G = BQ + 3` candidates a side, each a function of public
  quantities and the released M: fine where the endpoints land on large groups, a fixed
  share (:math:`2^{1/Q} - 1`, 19%) of the distance to M further out. Each record counts
  as a candidate: for L the one at or below it (records above M at M), for H the one at or
  above it (records below M at M); the counts are comparisons with public doubles.
* **Ranks moved without knowing n.** The lower endpoint's data get :math:`k_{lo}` public
  records at l, the upper's :math:`k_{hi}` at u (a public change: neighbours stay
  neighbours, the score's sensitivity is unchanged). The level-p target of the padded
  data is then :math:`(1-p) k_{lo}` ranks below (:math:`p k_{hi}` above) the original one,
  whatever n is.
* **How far.** The exponential mechanism over G candidates outputs a candidate whose
  score is at least s with probability at most :math:`G e^{-\eta s}` when the best score
  is 0 (McSherry and Talwar 2007). With :math:`s = \lceil (\ln G + \ln(2/\alpha)) / \eta
  \rceil` rows, :math:`k_{lo} = \lceil s / (1-p) \rceil` and :math:`k_{hi} = \lceil s / p
  \rceil`: :math:`P(L > x_{(r)} \mid M) \le \alpha / 2` and :math:`P(H < x_{(r)} \mid M)
  \le \alpha / 2` for every released M, so :math:`[L, H]` (which holds M) holds
  :math:`x_{(r)}` with probability at least :math:`1 - \alpha`.

Each endpoint is an exact draw (:class:`dpsense.noise.choice.ExponentialChoice`: integer
scores, the multiplier rounded down). Pure epsilon-DP at its share given M, under either
neighbour relation (the score's sensitivity is the point release's: ``quantile_score``);
with M's own epsilon they compose to the quantile's.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final, TypeVar, cast

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
    "INTERVAL_CANDIDATES",
    "INTERVAL_OCTAVES",
    "INTERVAL_PER_OCTAVE",
    "EndpointSteps",
    "LadderCounts",
    "counts_at",
    "endpoint_ladder",
    "endpoint_scores",
    "endpoint_steps",
    "interval_shift",
    "ladder_cells",
    "ladder_counts",
    "quantile_endpoints",
    "run_with",
]

INTERVAL_OCTAVES: Final = 20
"""B: the ladder's finest step is 2^-B of the bounds' width."""

INTERVAL_PER_OCTAVE: Final = 4
"""Q: the ladder's steps per doubling of the distance to the released value."""

INTERVAL_CANDIDATES: Final = INTERVAL_OCTAVES * INTERVAL_PER_OCTAVE + 3
"""G: at most this many candidates a side (the value, BQ + 1 distances, the bound)."""

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
T = TypeVar("T")


def endpoint_ladder(point: float, lower: float, upper: float, side: int) -> F64:
    """The public candidates of one endpoint, increasing doubles: below the released
    ``point`` down to ``lower`` (side -1) or above it up to ``upper`` (side +1)."""
    width = upper - lower
    powers = -INTERVAL_OCTAVES + np.arange(INTERVAL_OCTAVES * INTERVAL_PER_OCTAVE + 1) / (
        INTERVAL_PER_OCTAVE
    )
    steps = width * np.exp2(powers)
    if side < 0:
        points = np.concatenate([[lower], point - steps, [point]])
    else:
        points = np.concatenate([[point], point + steps, [upper]])
    points = np.clip(points, min(lower, point), max(upper, point))
    return np.unique(points)  # sorted, strictly increasing, at most G of them


def counts_at(records: Any, points: F64) -> I64:
    """#{x < c} at each of the increasing public ``points``, read from ``records``."""
    return _counts_below(records, points)


def _counts_below(records: Any, points: F64) -> I64:
    """#{x < c} for each point c: from a numpy array, or from any record source (an
    engine's records: its exact counts, one per point)."""
    if isinstance(records, np.ndarray):  # one pass, no sorted copy
        return counts_below_points(records, points)
    return np.asarray(records.counts_below(points), dtype=np.int64)


def _size(records: Any) -> int:
    return int(records.shape[0]) if isinstance(records, np.ndarray) else int(records.size)


def _ladder_points(candidates: F64, side: int) -> F64:
    """The public points whose #{x < c} give the cells: c_j, j >= 1 (side -1), or the
    next double after c_j, j < K (side +1: #{x <= c} is #{x < the next double after c})."""
    return candidates[1:] if side < 0 else np.nextafter(candidates[:-1], np.inf)


def _cells(n: int, counts: I64) -> I64:
    return np.diff(np.concatenate([[0], counts, [n]])).astype(np.int64)


def ladder_cells(records: Any, candidates: F64, side: int) -> I64:
    """How many records count as each candidate: the candidate at or below each record
    (side -1; records below the first count as the first) or at or above it (side +1;
    records above the last count as the last). Read only as #{x < c} for public c."""
    return _cells(_size(records), _counts_below(records, _ladder_points(candidates, side)))


def interval_shift(p: float, epsilon: float, neighbours: Neighbours, alpha: float) -> int:
    """s: the score (in rows) an endpoint stays below with probability 1 - alpha / 2."""
    score = quantile_score(p, epsilon, neighbours, "interval")
    per_row = exact(score.eta) * score.den  # the multiplier of a score in rows
    if per_row <= 0:
        return 2**62
    _, log_ratio = log_bounds(INTERVAL_CANDIDATES * 2 / exact(alpha))
    return max(1, math.ceil(log_ratio / per_row))


def endpoint_scores(cells: I64, pad_low: int, pad_high: int, score: QuantileScore) -> list[int]:
    """The integer scores ``max(0, den a - num N, den b - (den - num) N)`` of the candidates
    for ``cells[j]`` records at candidate j plus ``pad_low`` records at the first and
    ``pad_high`` at the last (N in all; a records below candidate j, b above it). Python
    integers: the padding can be large (a level near 0 or 1 at a small epsilon), and no
    size of it may overflow."""
    counts = [int(c) for c in cells]
    counts[0] += pad_low
    counts[-1] += pad_high
    total = sum(counts)
    num, den = score.num, score.den
    out = []
    below = 0
    for c in counts:
        above = total - below - c
        out.append(max(0, den * below - num * total, den * above - (den - num) * total))
        below += c
    return out


def _draw(cells: I64, pad_low: int, pad_high: int, score: QuantileScore, rng: RandomSource) -> int:
    """The index of one endpoint: level p over the padded records at their candidates,
    drawn exactly with P(j) ∝ exp(-eta u_j)."""
    scores = endpoint_scores(cells, pad_low, pad_high, score)
    floats = np.array([float(s) for s in scores], dtype=np.float64)  # each correctly rounded
    choice = ExponentialChoice(
        weights=np.ones(len(scores)),
        scores=floats,
        eta=score.eta,
        exact_score=lambda j: Fraction(scores[j]),
        score_error=float(np.max(floats)) * 2.0**-52,
    )
    return int(choice.sample(rng)[0])


@dataclass(frozen=True)
class LadderCounts:
    """What an interval reads of the records: ``#{x < c}`` at the increasing public
    ``points`` (both ladders', public given the released ``centre``). ``width`` (the
    bounds') and the ladder's geometry let an engine guess each record's cell (speed only:
    every count is exact whatever the guess; ``tables.engines.duckdb.ladders``)."""

    points: F64
    centre: float
    width: float
    below: F64
    above: F64

    @property
    def split(self) -> int:
        """How many of ``points`` are the lower ladder's (the rest the upper's)."""
        return int(self.below.shape[0]) - 1


def ladder_counts(point: float, lower: float, upper: float) -> LadderCounts:
    """The points whose counts give both ladders' cells around the released ``point``."""
    below = endpoint_ladder(point, lower, upper, -1)
    above = endpoint_ladder(point, lower, upper, +1)
    first, second = _ladder_points(below, -1), _ladder_points(above, +1)
    points = np.concatenate([first, second])
    return LadderCounts(points, float(point), float(upper - lower), below, above)


EndpointSteps = Generator[LadderCounts, I64, tuple[float, float, dict[str, Any]]]
"""An interval's release as steps: it asks for one :class:`LadderCounts` and, sent the
counts, returns (L, H, receipt). A caller may hold the counts back (an engine then answers
many groups' ladders at once) as long as the draws keep their order."""


def endpoint_steps(
    n: int,
    p: float,
    point: float,
    lower: float,
    upper: float,
    epsilon: float,
    neighbours: Neighbours,
    alpha: float,
    rng: RandomSource,
) -> EndpointSteps:
    """:func:`quantile_endpoints` for ``n`` records, the counts asked for and sent in."""
    shift = interval_shift(p, epsilon, neighbours, alpha)
    score = quantile_score(p, epsilon, neighbours, "interval")  # p = num / den, exactly
    num, den = score.num, score.den
    pad_low = -(-shift * den // (den - num))  # ceil(s / (1 - p))
    pad_high = -(-shift * den // num)  # ceil(s / p)
    want = ladder_counts(point, lower, upper)
    # one read of the records for both ladders: #{x < c} at public points
    counts = np.asarray((yield want), dtype=np.int64)
    k = want.split
    cells_low, cells_high = _cells(n, counts[:k]), _cells(n, counts[k:])
    low = float(want.below[_draw(cells_low, pad_low, 0, score, rng)])
    high = float(want.above[_draw(cells_high, 0, pad_high, score, rng)])
    receipt = {
        "candidates": INTERVAL_CANDIDATES,
        "ladder": f"2^-{INTERVAL_OCTAVES} to 1 of the width, {INTERVAL_PER_OCTAVE} a doubling",
        "shift_rows": shift,
        "epsilon_each": epsilon,
    }
    return low, high, receipt


def run_with(steps: Generator[LadderCounts, I64, T], records: Any) -> T:
    """Run ``steps`` to the end, answering each request from ``records`` at once."""
    try:
        want = next(steps)
        while True:
            want = steps.send(_counts_below(records, want.points))
    except StopIteration as done:
        return cast(T, done.value)


def quantile_endpoints(
    records: Any,
    p: float,
    point: float,
    lower: float,
    upper: float,
    epsilon: float,
    neighbours: Neighbours,
    alpha: float,
    rng: RandomSource,
) -> tuple[float, float, dict[str, Any]]:
    """(L, H, receipt): the interval's two endpoints around the released ``point`` (L <=
    point <= H), each an epsilon-DP release given it (the caller charges 2 epsilon), and
    their public parameters."""
    steps = endpoint_steps(_size(records), p, point, lower, upper, epsilon, neighbours, alpha, rng)
    return run_with(steps, records)
