"""Goodness of fit of every sampler (STYLE rule 7): each test accepts the true parameter
and rejects a 30% wrong one, on seeded sources, so the outcomes are deterministic."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats

from dpsense.noise import exact
from dpsense.noise.grid import grid_gaussian, grid_laplace
from dpsense.noise.rng import SeededRandom

N = 200_000
ALPHA = 1e-3


def chi2_pvalue(samples: np.ndarray, pmf: Callable[[np.ndarray], np.ndarray]) -> float:
    """Chi-square p-value of integer samples against a pmf, pooling sparse tails."""
    values, counts = np.unique(samples, return_counts=True)
    lo, hi = int(values.min()), int(values.max())
    support = np.arange(lo - 50, hi + 51)
    probs = pmf(support)
    probs = probs / probs.sum()
    expected = probs * samples.size
    observed = np.zeros(support.size)
    observed[values - support[0]] = counts
    # pool bins from each end until every pooled bin expects at least 5
    keep = expected >= 5
    first, last = int(np.argmax(keep)), int(len(keep) - np.argmax(keep[::-1]) - 1)
    obs = np.concatenate(
        ([observed[:first].sum()], observed[first : last + 1], [observed[last + 1 :].sum()])
    )
    exp = np.concatenate(
        ([expected[:first].sum()], expected[first : last + 1], [expected[last + 1 :].sum()])
    )
    mask = exp > 0
    return float(stats.chisquare(obs[mask], exp[mask] * obs[mask].sum() / exp[mask].sum()).pvalue)


def test_uniform_below_is_uniform_for_small_and_large_bounds() -> None:
    rng = SeededRandom(1)
    u = exact.uniform_below(rng, np.full(N, 7, dtype=np.uint64))
    assert stats.chisquare(np.bincount(u, minlength=7)).pvalue > ALPHA
    big = 3 * 2**61 + 5  # rejection region of the 64-bit path is large here
    v = exact.uniform_below(rng, np.full(N, big, dtype=np.uint64)).astype(np.float64) / big
    assert stats.kstest(v, "uniform").pvalue > ALPHA
    assert stats.kstest(v * 1.3, "uniform").pvalue < ALPHA


@pytest.mark.parametrize(("num", "den"), [(1, 3), (1, 1), (7, 4), (9, 2)])
def test_bernoulli_exp(num: int, den: int) -> None:
    rng = SeededRandom(2)
    draws = exact.bernoulli_exp(
        rng, np.full(N, num, dtype=np.uint64), np.full(N, den, dtype=np.uint64)
    )
    p = np.exp(-num / den)
    k = int(draws.sum())
    assert stats.binomtest(k, N, p).pvalue > ALPHA
    assert stats.binomtest(k, N, min(1.0, p * 1.3)).pvalue < ALPHA
    assert stats.binomtest(k, N, p * 0.7).pvalue < ALPHA


def test_bernoulli_ratio() -> None:
    rng = SeededRandom(3)
    draws = exact.bernoulli_ratio(
        rng, np.full(N, 2, dtype=np.uint64), np.full(N, 7, dtype=np.uint64)
    )
    k = int(draws.sum())
    assert stats.binomtest(k, N, 2 / 7).pvalue > ALPHA
    assert stats.binomtest(k, N, 1.3 * 2 / 7).pvalue < ALPHA


def test_geometric_exp1() -> None:
    v = exact.geometric_exp1(SeededRandom(4), N).astype(np.int64)

    def pmf(rate: float) -> Callable[[np.ndarray], np.ndarray]:
        return lambda k: np.where(k >= 0, np.exp(-rate * np.maximum(k, 0)), 0.0)

    assert chi2_pvalue(v, pmf(1.0)) > ALPHA
    assert chi2_pvalue(v, pmf(1.3)) < ALPHA


@pytest.mark.parametrize("scale", [Fraction(3), Fraction(5, 2), Fraction(1, 3), Fraction(2**21)])
def test_discrete_laplace(scale: Fraction) -> None:
    z = exact.discrete_laplace(SeededRandom(5), scale, N)
    s = float(scale)
    if s > 1000:  # too many support points for chi-square: test the magnitude's law
        assert stats.kstest(np.abs(z) / s, "expon").pvalue > ALPHA
        assert stats.kstest(np.abs(z) / (1.3 * s), "expon").pvalue < ALPHA
        return

    def pmf(b: float) -> Callable[[np.ndarray], np.ndarray]:
        return lambda k: np.exp(-np.abs(k) / b)

    assert chi2_pvalue(z, pmf(s)) > ALPHA
    assert chi2_pvalue(z, pmf(1.3 * s)) < ALPHA


@pytest.mark.parametrize("sigma2", [Fraction(9), Fraction(10, 3), Fraction(1, 4), Fraction(2**40)])
def test_discrete_gaussian(sigma2: Fraction) -> None:
    z = exact.discrete_gaussian(SeededRandom(6), sigma2, N)
    s = float(sigma2) ** 0.5
    if s > 1000:
        assert stats.kstest(z / s, "norm").pvalue > ALPHA
        assert stats.kstest(z / (1.3 * s), "norm").pvalue < ALPHA
        return

    def pmf(sd: float) -> Callable[[np.ndarray], np.ndarray]:
        return lambda k: np.exp(-(k.astype(float) ** 2) / (2 * sd * sd))

    assert chi2_pvalue(z, pmf(s)) > ALPHA
    assert chi2_pvalue(z, pmf(1.3 * s)) < ALPHA


def test_discrete_gaussian_large_values_take_the_exact_python_path() -> None:
    # sigma^2 with a large denominator forces the Python-integer acceptance test
    z = exact.discrete_gaussian(SeededRandom(7), Fraction(2**31 + 1, 3), 2_000)
    s = (float(2**31 + 1) / 3) ** 0.5
    assert stats.kstest(z / s, "norm").pvalue > ALPHA


# the grid Gaussian draws one vector of dimension N: rounding inflates the L2 sensitivity by
# gamma sqrt(N), hence its looser scale tolerance
@pytest.mark.parametrize(
    ("sampler", "epsilon_or_sigma", "seed", "law", "scale", "rel", "wrong_scale"),
    [
        (grid_laplace, 0.5, 8, "laplace", 2.0, 1e-5, 2.6),
        (grid_gaussian, 3.0, 9, "norm", 3.0, 1e-4, 3.9),
    ],
    ids=["laplace", "gaussian"],
)
def test_grid_sampler_matches_its_law_and_lies_on_its_grid(
    sampler: Callable[..., Any],
    epsilon_or_sigma: float,
    seed: int,
    law: str,
    scale: float,
    rel: float,
    wrong_scale: float,
) -> None:
    out, info = sampler(np.zeros(N), 1.0, epsilon_or_sigma, SeededRandom(seed))
    assert info.scale == pytest.approx(scale, rel=rel)
    assert stats.kstest(out, law, args=(0, scale)).pvalue > ALPHA
    assert stats.kstest(out, law, args=(0, wrong_scale)).pvalue < ALPHA
    assert np.all(out / info.grid == np.round(out / info.grid))


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_scalar_python_path_matches_the_vectorised_law(kind: str) -> None:
    # draws of size <= 16 take the pure-Python path: same law, tested separately
    rng = SeededRandom(12)
    if kind == "laplace":
        z = np.concatenate([exact.discrete_laplace(rng, Fraction(5, 2), 4) for _ in range(15_000)])

        def law(b: float) -> Callable[[np.ndarray], np.ndarray]:
            return lambda k: np.exp(-np.abs(k) / b)

        true, wrong = law(2.5), law(2.5 * 1.3)
    else:
        z = np.concatenate(
            [exact.discrete_gaussian(rng, Fraction(10, 3), 4) for _ in range(15_000)]
        )

        def law(var: float) -> Callable[[np.ndarray], np.ndarray]:
            return lambda k: np.exp(-(k.astype(float) ** 2) / (2 * var))

        true, wrong = law(10 / 3), law(10 / 3 * 1.69)
    assert chi2_pvalue(z, true) > ALPHA
    assert chi2_pvalue(z, wrong) < ALPHA
