"""Release.accuracy(alpha): half-widths that cover at the stated rate, and are not wider.

* Seeded coverage: 4000 releases per case; the interval value +- a(0.05) covers the true
  statistic in at least 95% of them (minus 3 standard errors) and in at most 97%, and the
  interval at 0.85 a covers visibly less (so a is not padded).
* The integer tails equal brute-force sums of the discrete Laplace and discrete Gaussian
  pmfs (the Gaussian's is a bound within one step of the exact one).
* None wherever the error depends on the data; alpha is validated.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from dpsense.errors import InputError
from dpsense.mechanisms.accuracy import (
    discrete_gaussian_halfwidth,
    discrete_laplace_halfwidth,
)
from dpsense.noise.rng import SeededRandom

TRIALS = 4000
X = np.random.default_rng(7).uniform(0, 10, 400)


def releases(
    stat: ds.Statistic, trials: int = TRIALS, **kwargs: object
) -> tuple[np.ndarray, list[ds.Release]]:
    rng = SeededRandom(11)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        for _ in range(trials):
            rel = ds.release(X, stat, rng=rng, **kwargs)  # type: ignore[arg-type]
            assert isinstance(rel, ds.Release)
            out.append(rel)
    return np.array([np.nan if r.refused else r.value for r in out], dtype=float), out


def true_value(stat: ds.Statistic) -> float:
    return float(len(X)) if isinstance(stat, ds.Count) else float(stat(X))


CASES: list[tuple[str, Callable[[], ds.Statistic], dict[str, object]]] = [
    ("count, discrete Laplace", ds.Count, {"epsilon": 0.5}),
    ("sum, Laplace", lambda: ds.Sum(0, 10), {"epsilon": 1.0}),
    ("mean, substitute", lambda: ds.Mean(0, 10), {"epsilon": 1.0, "neighbours": "substitute"}),
    (
        "sum, Gaussian",
        lambda: ds.Sum(0, 10),
        {"epsilon": 1.0, "delta": 1e-6, "method": "global", "noise": "gaussian"},
    ),
    (
        "median, propose-test-release",
        lambda: ds.Median(-100, 100),  # wide bounds: clipping the output rarely acts
        {"epsilon": 1.0, "delta": 1e-6, "method": "ptr", "bound": 5.0},
    ),
]


@pytest.mark.parametrize(("name", "make", "kwargs"), CASES, ids=[c[0] for c in CASES])
def test_intervals_cover_at_the_stated_rate_and_are_not_wider(
    name: str, make: Callable[[], ds.Statistic], kwargs: dict[str, object]
) -> None:
    stat = make()
    values, rels = releases(stat, **kwargs)
    answered = [not r.refused for r in rels]  # PTR: the noise is independent of the test
    assert sum(answered) > 0.99 * TRIALS
    values, rels = values[answered], [r for r in rels if not r.refused]
    widths = [r.accuracy(0.05) for r in rels]
    assert all(w is not None for w in widths)
    a = max(w for w in widths if w is not None)
    # public: the same for every release but for half an ulp of the printed value
    assert a - min(w for w in widths if w is not None) <= 1e-9 * a
    assert a > 0
    err = np.abs(values - true_value(stat))
    se = math.sqrt(0.05 * 0.95 / len(rels))
    coverage = float(np.mean(err <= a))
    assert 0.95 - 3 * se <= coverage <= 0.97
    assert float(np.mean(err <= 0.85 * a)) < 0.95 - 3 * se  # not padded
    # the textbook continuous formulas, up to a grid step
    scale = rels[0].scale
    assert scale is not None
    if rels[0].noise in ("laplace", "discrete-laplace"):
        assert a == pytest.approx(scale * math.log(1 / 0.05), rel=0.05, abs=1.0)
    else:
        assert a == pytest.approx(scale * 1.959964, rel=1e-3)


def test_a_count_under_substitute_is_exact() -> None:
    rel = ds.release(X, ds.Count(), epsilon=1, neighbours="substitute")
    assert isinstance(rel, ds.Release)
    assert rel.accuracy() == 0.0


@pytest.mark.parametrize("t", [0.3, 1.0, 2.5, 17.0])
@pytest.mark.parametrize("alpha", [0.5, 0.05, 0.001])
def test_discrete_laplace_halfwidth_is_the_smallest_by_brute_force(t: float, alpha: float) -> None:
    z = np.arange(-2000, 2001)
    pmf = np.exp(-np.abs(z) / t)
    pmf /= pmf.sum()
    k = discrete_laplace_halfwidth(t, alpha)
    tail = lambda j: float(pmf[np.abs(z) > j].sum())  # noqa: E731
    assert tail(k) <= alpha * (1 + 1e-12)
    assert k == 0 or tail(k - 1) > alpha


@pytest.mark.parametrize("t", [3.0, 10.0, 60.0])
@pytest.mark.parametrize("alpha", [0.3, 0.05, 0.001])
def test_discrete_gaussian_halfwidth_bounds_the_exact_tail(t: float, alpha: float) -> None:
    z = np.arange(-4000, 4001)
    pmf = np.exp(-(z.astype(float) ** 2) / (2 * t * t))
    pmf /= pmf.sum()
    k = discrete_gaussian_halfwidth(t, alpha)
    tail = lambda j: float(pmf[np.abs(z) > j].sum())  # noqa: E731
    assert tail(k) <= alpha
    exact = next(j for j in range(4000) if tail(j) <= alpha)
    assert k <= exact + 1


def test_none_where_the_error_depends_on_the_data() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rels = [
            ds.release(X, ds.Median(0, 10), epsilon=1, rng=1),  # exponential
            ds.release(X, ds.Mean(0, 10), epsilon=1, rng=1),  # ksw
            ds.release(X, ds.Mean(0, 10), epsilon=1, method="global", rng=1),  # n private
            ds.release(X, ds.Variance(0, 10), epsilon=1, rng=1),  # smooth
            ds.release(X, ds.Quantiles([0.2, 0.8], 0, 10), epsilon=1, rng=1),
            ds.sample_and_aggregate(X, np.mean, blocks=10, lower=0, upper=10, epsilon=1, rng=1),
            ds.private_bounds(X, epsilon=1, rng=1),
            ds.private_ratio([1, 0, 1], [1, 1, 1], epsilon=1, rng=1),
            ds.release(X, ds.Median(0, 10), epsilon=1, delta=1e-6, method="ptr", bound=1e-9),
        ]
    for rel in rels:
        assert isinstance(rel, ds.Release)
        assert rel.accuracy() is None, rel.method
    assert rels[-1].refused


@pytest.mark.parametrize("alpha", [0, 1, -0.1, 1.5, float("nan"), "0.05"])
def test_alpha_is_validated(alpha: object) -> None:
    rel = ds.release(X, ds.Count(), epsilon=1)
    assert isinstance(rel, ds.Release)
    with pytest.raises(InputError, match="alpha"):
        rel.accuracy(alpha)  # type: ignore[arg-type]


def test_grouped_to_pandas_has_an_accuracy_column() -> None:
    df = pd.DataFrame({"v": X, "g": np.where(X < 5, "low", "high")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        counts = ds.release(df, ds.Count(), epsilon=1, by="g", keys=["low", "high"], rng=3)
        medians = ds.release(df, ds.Median(0, 10), epsilon=1, column="v", by="g", keys=["low"])
    assert isinstance(counts, ds.GroupedRelease)
    assert isinstance(medians, ds.GroupedRelease)
    frame = counts.to_pandas()
    columns = ["g", "value", "refused", "method", "noise", "scale", "low", "high", "unreliable"]
    columns += ["accuracy", "rank_accuracy"]
    assert list(frame.columns) == columns
    assert list(frame["accuracy"]) == [counts[k].accuracy() for k in ("low", "high")]
    assert frame["accuracy"].notna().all()
    assert medians.to_pandas()["accuracy"].isna().all()


def test_a_resolution_that_does_not_divide_the_bounds_is_covered() -> None:
    """Bounds [0, 2.9] with resolution 1: the grid stops at 2, so a true median of 2.9
    (every record above the upper bound) is released as 2: the half-width must
    include the 0.9 gap, not half a step."""
    x = np.full(50, 10.0)
    stat = ds.Median(0, 2.9, resolution=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        rels = [
            ds.release(x, stat, epsilon=1, delta=1e-6, method="ptr", bound=0.01, rng=s)
            for s in range(50)
        ] + [ds.release(x, stat, epsilon=100, method="global", rng=s) for s in range(20)]
    answered = [r for r in rels if isinstance(r, ds.Release) and not r.refused]
    assert len(answered) > 40
    for rel in answered:
        a = rel.accuracy()
        assert a is not None
        assert abs(rel.value - 2.9) <= a


def test_the_conversion_to_a_double_is_covered_at_large_magnitudes() -> None:
    """A sum near 1e18 has doubles 128 apart: the noisy grid value is rounded to one of them
    when it is printed, which the half-width must cover."""
    from fractions import Fraction

    x = np.full(10**6, 1e12 + 0.5)
    stat = ds.Sum(1e12, 1e12 + 1)
    truth = stat._value_exact(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        for seed in range(40):
            rel = ds.release(x, stat, epsilon=1, neighbours="substitute", rng=seed)
            assert isinstance(rel, ds.Release)
            a = rel.accuracy()
            assert a is not None
            assert abs(Fraction(rel.value) - truth) <= Fraction(a)


def test_split_budgets_never_add_up_to_more_than_the_total() -> None:
    from fractions import Fraction

    from dpsense.params import rest_of_budget

    rs = np.random.default_rng(1)
    for total, share in zip(rs.uniform(1e-3, 10, 5000), rs.uniform(0.01, 0.99, 5000), strict=False):
        used = float(share * total)
        rest = rest_of_budget(float(total), used)
        assert rest > 0
        assert Fraction(used) + Fraction(rest) <= Fraction(float(total))
        assert float(total) - used - rest <= 4 * math.ulp(float(total))  # and no waste
