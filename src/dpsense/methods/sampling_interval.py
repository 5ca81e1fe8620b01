r"""Population intervals: ``interval="privacy+sampling"`` (docs/intervals.md §8).

When the data are a simple random sample of a population, the interval of a mean or a
quantile covers the population's value, not only the sample's. The statistic's epsilon is
split (each part rounded down): ``1 - SAMPLING_SHARE`` for the point, released by its method
with its privacy interval as usual, and ``SAMPLING_SHARE`` for the private ingredients of
the sampling error, each pure epsilon-DP at its declared share:

* **a mean**: a discrete-Laplace count n~ (a third of the share) and a discrete-Laplace sum
  of the squared distances to the released mean, each record's distance rescaled to
  [0, 1] and rounded up to ``1 / QUANTA`` (two thirds). The interval is the privacy
  interval at ``alpha / 5`` widened by :math:`z_{1 - 3\alpha/10} \bar s / \sqrt{n_-}`, with
  :math:`n_-` the count's lower bound and :math:`\bar s` the standard deviation's upper
  bound, each one-sided at ``alpha / 10``;
* **a quantile**: a discrete-Laplace count (a fifth of the share) whose upper bound
  :math:`n_+` (one-sided, at ``alpha / 10``) sets the binomial ranks :math:`r \pm b`,
  :math:`b = \lceil z_{1 - \alpha_b / 2} \sqrt{n_+ p (1 - p)} \rceil + 1`
  (:math:`\alpha_b = 3\alpha/5`), and two more order statistics at those ranks moved outward
  by their rank error (four fifths, at ``3 alpha / 10``: Drechsler, Globus-Harris,
  McMillan, Sarathy and Smith 2022), released for alpha = 0.05.

Everything a unit of m rows can change is counted: the count's sensitivity is m, the
squares' ``m * QUANTA``, the order statistics' score the point's at epsilon / m.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from statistics import NormalDist
from typing import Any, Final

import numpy as np

from dpsense._exact_budget import difference_down, exact, product_down
from dpsense.defaults import ACCURACY_ALPHA, INTERVALS, SAMPLING_SHARE
from dpsense.errors import Assign, InputError, Param
from dpsense.mechanisms.accuracy import discrete_laplace_halfwidth
from dpsense.mechanisms.additive import DiscreteLaplaceMechanism
from dpsense.methods._release import Release
from dpsense.methods.call import MethodCall
from dpsense.methods.intervals import released_interval
from dpsense.methods.quantile_interval import quantile_endpoints
from dpsense.statistics import Mean, Quantile, Statistic
from dpsense.statistics.units import group_privacy_budget, rows_per_unit

__all__ = [
    "COVERS_POPULATION",
    "POPULATION",
    "QUANTA",
    "SamplingBudget",
    "check_interval",
    "population_interval",
    "release_with_sampling",
    "sampling_budget",
]

POPULATION: Final = INTERVALS[1]
"""``interval="privacy+sampling"``."""

COVERS_POPULATION: Final = (
    "the population's value, when the data are a simple random sample of it "
    "(values clipped to the bounds)"
)
"""What a population interval covers (``Release.covers``, the receipt)."""

QUANTA: Final = 2**16
"""A record's squared distance to the centre, over the squared width, is counted in
``1 / QUANTA`` steps, rounded up: an integer in [0, QUANTA]."""

# how a population interval's alpha is spent (union bound: the parts sum to alpha)
_MEAN_PRIVACY, _MEAN_SAMPLING, _MEAN_INGREDIENT = 0.2, 0.6, 0.1
_QUANTILE_COUNT, _QUANTILE_BINOMIAL, _QUANTILE_PAIR = 0.1, 0.6, 0.3


@dataclass(frozen=True)
class SamplingBudget:
    """A statistic's epsilon under ``interval="privacy+sampling"``: the point's, the
    count's and the spread's (a mean's squares, a quantile's pair), summing to at most
    the statistic's."""

    point: float
    count: float
    spread: float


def sampling_budget(statistic: Statistic, epsilon: float) -> SamplingBudget:
    """The split of ``epsilon`` (module docstring), every part rounded down: the release
    and the price (``query.price``) both read it."""
    sampling = product_down(Fraction(SAMPLING_SHARE), epsilon)
    point = difference_down(epsilon, exact(sampling))
    third = Fraction(1, 3) if isinstance(statistic, Mean) else Fraction(1, 5)
    count = product_down(third, sampling)
    return SamplingBudget(point, count, difference_down(sampling, exact(count)))


def supports_population(statistic: Statistic) -> bool:
    """A mean, a median or one quantile (several quantiles, counts, sums, variances do
    not have a population interval)."""
    return isinstance(statistic, Mean | Quantile)


def check_interval(
    interval: object, statistics: Sequence[tuple[str, Statistic]], where: str
) -> str:
    """``interval``, checked from the request alone: "privacy" or "privacy+sampling", the
    latter for means, medians and quantiles only (an InputError naming the others)."""
    if not isinstance(interval, str) or interval not in INTERVALS:
        raise InputError(
            Param("interval", of=where),
            " must be 'privacy' (the interval covers the data's statistic) or "
            "'privacy+sampling' (the population's, for a simple random sample). "
            f"Got {interval!r} instead.",
        )
    if interval == POPULATION:
        others = [
            stat.name if name == "value" else f"{name!r} ({stat.name})"
            for name, stat in statistics
            if not supports_population(stat)
        ]
        if others:
            what = ", ".join(others)
            raise InputError(
                Assign("interval", POPULATION, quoted=True),
                " covers a population's mean, median or quantile (ds.Mean, ds.Median, "
                f"ds.Quantile), not {what}: release it with ",
                Assign("interval", "privacy", quoted=True),
                " (the default).",
            )
    return interval


def _values(records: Any) -> np.ndarray:
    """The clipped records as an array (an engine's held group: its sorted values)."""
    if isinstance(records, np.ndarray):
        return records
    return np.asarray(records.sorted_values(), dtype=np.float64)


def _noisy_count(records: Any, m: int, epsilon: float, call: MethodCall) -> tuple[int, float]:
    n = int(records.shape[0]) if isinstance(records, np.ndarray) else int(records.size)
    out = DiscreteLaplaceMechanism.for_privacy(m, epsilon).release(n, call.rng)
    return int(out.value), float(out.scale)


def squared_quanta(values: np.ndarray, centre: float, lower: float, upper: float) -> int:
    """The sum over the records of ``min(QUANTA, floor(QUANTA ((x - c) / w)^2) + 2)``: at
    least ``QUANTA ((x - c) / w)^2`` each (two steps cover the float's rounding), at most
    QUANTA each (c and x lie in [l, u])."""
    width = upper - lower
    if width <= 0 or values.shape[0] == 0:
        return 0
    t = ((values - centre) / width) ** 2
    q = np.minimum(np.floor(t * QUANTA) + 2, QUANTA).astype(np.int64)
    return int(q.sum())


def _mean_parts(call: MethodCall, out: Release, budget: SamplingBudget) -> dict[str, Any]:
    """The mean's ingredients: a noisy count and a noisy sum of squared quanta about the
    released mean (post-processing of the point: a public centre)."""
    stat = call.statistic
    assert isinstance(stat, Mean)
    m = rows_per_unit(stat)
    lower, upper = float(stat.lower), float(stat.upper)
    centre = min(max(float(out.value), lower), upper)
    noisy_count, count_scale = _noisy_count(call.records, m, budget.count, call)
    total = squared_quanta(_values(call.records), centre, lower, upper)
    squares = DiscreteLaplaceMechanism.for_privacy(m * QUANTA, budget.spread).release(
        total, call.rng
    )
    return {
        "form": "mean",
        "privacy": dict(out.interval_parts),
        "noisy_count": noisy_count,
        "count_scale": count_scale,
        "noisy_squares": int(squares.value),
        "squares_scale": float(squares.scale),
        "width": upper - lower,
        "epsilon_count": budget.count,
        "epsilon_spread": budget.spread,
    }


def _one_sided(scale: float, alpha: float) -> int:
    """The smallest k with P(Z > k) <= alpha, Z discrete Laplace of ``scale``: the
    two-sided half-width at 2 alpha (the law is symmetric)."""
    return discrete_laplace_halfwidth(scale, min(2.0 * alpha, 1.0))


def binomial_rows(n_high: float, p: float, alpha: float) -> int:
    """b: the ranks r - b and r + b hold the population's p-quantile between them with
    probability about 1 - alpha for a sample of at most ``n_high`` records (normal
    approximation of the binomial count below it, plus one rank for r's rounding)."""
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    n = min(max(n_high, 0.0), 2.0**53)
    return math.ceil(z * math.sqrt(n * p * (1.0 - p))) + 1


def _quantile_parts(call: MethodCall, budget: SamplingBudget) -> dict[str, Any]:
    """The quantile's ingredients: a noisy count's upper bound, and two order statistics
    at the binomial ranks moved outward by their rank error."""
    stat = call.statistic
    assert isinstance(stat, Quantile)
    m = rows_per_unit(stat)
    alpha = ACCURACY_ALPHA
    noisy_count, count_scale = _noisy_count(call.records, m, budget.count, call)
    n_high = noisy_count + _one_sided(count_scale, _QUANTILE_COUNT * alpha)
    extra = binomial_rows(float(n_high), float(stat.p), _QUANTILE_BINOMIAL * alpha)
    row_epsilon = group_privacy_budget(budget.spread, 0.0, m)[0]
    low, high, receipt = quantile_endpoints(
        call.records,
        float(stat.p),
        float(stat.lower),
        float(stat.upper),
        row_epsilon,
        call.neighbours,
        _QUANTILE_PAIR * alpha,
        call.rng,
        extra_rows=extra,
    )
    return {
        "form": "quantile",
        "low": stat.round_to_resolution_down(low),
        "high": stat.round_to_resolution_up(high),
        "alpha": alpha,
        "noisy_count": noisy_count,
        "count_scale": count_scale,
        "epsilon_count": budget.count,
        **receipt,
    }


def release_with_sampling(
    method: Callable[..., Release], call: MethodCall, options: Mapping[str, Any]
) -> Release:
    """``method``'s release of ``call`` at the point's share, with the population
    interval's ingredients drawn at theirs after it (module docstring); the receipt
    states the whole epsilon, the share and what the interval covers."""
    stat = call.statistic
    assert isinstance(stat, Mean | Quantile)  # plan_query refuses the others
    budget = sampling_budget(stat, call.epsilon)
    out = method(replace(call, epsilon=budget.point), **dict(options))
    whole: dict[str, Any] = {"epsilon": call.epsilon}
    if out.rho is not None:
        whole["rho"] = out.rho + (budget.count**2 + budget.spread**2) / 2.0
    mean = isinstance(stat, Mean)
    if out.refused or out.value is None or (mean and not out.interval_parts):
        return replace(out, **whole)  # no interval to widen: the ingredients are not drawn
    parts = _mean_parts(call, out, budget) if mean else _quantile_parts(call, budget)
    spec = {
        "kind": "population",
        "share": SAMPLING_SHARE,
        "covers": COVERS_POPULATION,
        "range": (float(stat.lower), float(stat.upper)),
        **parts,
    }
    params = {**out.parameters, "interval": spec}
    return replace(out, **whole, parameters=params, interval_parts={}, covers=COVERS_POPULATION)


def population_interval(
    release: Release, value: float, spec: Mapping[str, Any], alpha: float
) -> tuple[float, float] | None:
    """The population interval of ``release`` (``spec``: its parts) at ``alpha``."""
    if spec["form"] == "quantile":
        got = released_interval(value, spec, alpha)
        return None if got is None else (float(got[0]), float(got[1]))
    privacy = replace(
        release,
        parameters={**release.parameters, "interval": dict(spec["privacy"])},
        interval_parts={},
        covers="",
    )
    inner = privacy.interval(_MEAN_PRIVACY * alpha)
    if inner is None:
        return None
    lo, hi = (float(v) for v in spec["range"])
    half = sampling_halfwidth(spec, alpha)
    low, high = max(float(inner[0]) - half, lo), min(float(inner[1]) + half, hi)
    return min(low, value), max(high, value)


def sampling_halfwidth(spec: Mapping[str, Any], alpha: float) -> float:
    r""":math:`z_{1 - 3\alpha/10} \bar s / \sqrt{n_-}` from the released count and squares
    (infinite when the count's lower bound is below 2: the interval is then the range)."""
    n_low = spec["noisy_count"] - _one_sided(spec["count_scale"], _MEAN_INGREDIENT * alpha)
    if n_low < 2:
        return math.inf
    squares = spec["noisy_squares"] + _one_sided(spec["squares_scale"], _MEAN_INGREDIENT * alpha)
    s_squared = max(squares, 0) / QUANTA * spec["width"] ** 2 / (n_low - 1)
    z = NormalDist().inv_cdf(1.0 - _MEAN_SAMPLING * alpha / 2.0)
    return float(z * math.sqrt(s_squared / n_low))
