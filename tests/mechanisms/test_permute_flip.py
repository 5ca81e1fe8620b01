"""Permute-and-flip quantiles (mechanisms/_permute_flip.py): exact law and privacy.

* The exact pmf of permute-and-flip is computed from its definition: candidate k is output
  with probability p_k E[1 / (1 + X_k)], X_k the (Poisson-binomial) number of other active
  candidates. 100 000 draws are compared with it by a chi-square test (alpha = 0.001) on
  the full path, the window path and forced windows of 1 and 2 ranks (the tail's certified
  and conditional steps then decide many draws); a 30% wrong epsilon is rejected.
* Privacy: on every add/remove/substitute neighbour of small datasets the log-ratio of the
  exact pmfs is at most epsilon, and half the sensitivity exceeds it.
* It is used for grids of at most 2^16 values, and is never less accurate than the
  exponential mechanism on tied integer data (mean absolute error over seeded draws).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

import dpsense as ds
from dpsense.mechanisms._permute_flip import MAX_GRID, pf_eta, sample_permute_and_flip
from dpsense.mechanisms.quantile import ExponentialQuantile, quantile_score
from dpsense.noise.rng import SeededRandom
from dpsense.statistics._grid import CandidateGrid, ResolutionGrid

ALPHA = 0.001
GRID = ResolutionGrid.build(0.0, 12.0, 1.0, "test")  # 13 candidates


def scores(x: list[float], p: float, values: NDArray[np.float64]) -> list[Fraction]:
    """The tie-aware score max(0, #{x < v} - pn, #{x > v} - (1-p)n), from the definition."""
    q = Fraction(p).limit_denominator(1_000_000)
    xs = np.asarray(x, dtype=float)
    n = xs.shape[0]
    return [
        max(Fraction(0), int(np.sum(xs < v)) - q * n, int(np.sum(xs > v)) - (1 - q) * n)
        for v in values
    ]


def pf_pmf(
    x: list[float],
    p: float,
    eps: float,
    values: NDArray[np.float64],
    relation: str = "add-remove",
    factor: float = 1.0,
) -> NDArray[np.float64]:
    q = Fraction(p).limit_denominator(1_000_000)
    delta = max(q, 1 - q) if relation == "add-remove" else Fraction(1)
    eta = eps / (2 * float(delta) * factor)
    u = np.array([float(s) for s in scores(x, p, values)])
    return pf_law(np.exp(-eta * (u - u.min())))


def pf_law(probs: NDArray[np.float64]) -> NDArray[np.float64]:
    """Permute-and-flip's pmf for activation probabilities ``probs``: candidate k is output
    with probability p_k E[1 / (1 + X_k)], X_k the (Poisson-binomial) number of other
    active candidates (McKenna and Sheldon 2020)."""
    size = probs.size
    out = np.zeros(size)
    for k in range(size):
        dist = np.zeros(size)
        dist[0] = 1.0
        for j in range(size):
            if j != k:
                dist[1:] = dist[1:] * (1 - probs[j]) + dist[:-1] * probs[j]
                dist[0] *= 1 - probs[j]
        out[k] = probs[k] * float(np.sum(dist / np.arange(1, size + 1)))
    return out / out.sum()


def draw(
    x: list[float], p: float, eps: float, count: int, seed: int, **private: object
) -> NDArray[np.int64]:
    score = quantile_score(p, eps, "add-remove", "test")
    rng = SeededRandom(seed)
    xc = np.asarray(x, dtype=float)
    return sample_permute_and_flip(rng, xc, GRID, score, count, **private)  # type: ignore[arg-type]


def pvalue(samples: NDArray[np.int64], pmf: NDArray[np.float64]) -> float:
    observed = np.bincount(samples, minlength=pmf.size).astype(float)
    expected = pmf * samples.size
    small = expected < 5
    if small.any():
        observed = np.append(observed[~small], observed[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    expected *= observed.sum() / expected.sum()
    return float(stats.chisquare(observed, expected).pvalue)


X = [2.0, 3.0, 3.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0, 9.0, 11.0] * 3


@pytest.mark.slow
@pytest.mark.parametrize(
    ("private", "eps"),
    [({"_full": True}, 0.6), ({}, 0.6), ({"_window": 1}, 0.6), ({"_window": 2}, 0.3)],
)
def test_sampler_matches_the_exact_permute_and_flip_pmf(
    private: dict[str, object], eps: float
) -> None:
    values = GRID.values(np.arange(GRID.size))
    samples = draw(X, 0.4, eps, 100_000, 31, **private)
    assert pvalue(samples, pf_pmf(X, 0.4, eps, values)) > ALPHA
    assert pvalue(samples, pf_pmf(X, 0.4, 1.3 * eps, values)) < ALPHA


def test_rounded_multiplier_is_at_most_eta() -> None:
    for eps in (1e-9, 0.05, 1.0, 7.3):
        score = quantile_score(0.5, eps, "add-remove", "test")
        eta = pf_eta(score)
        assert eta <= Fraction(score.eta)
        assert Fraction(score.eta) - eta < Fraction(1, 2**61)


UNIVERSE = [-1.0, 0.0, 3.0, 4.0, 6.0, 12.0, 20.0]
DATASETS = [[], [3.0], [3.0, 4.0, 6.0], [0.0, 0.0, 12.0], [4.0, 4.0, 4.0], [0.0, 3.0, 3.0, 12.0]]


def neighbours_of(x: list[float], relation: str) -> list[list[float]]:
    if relation == "add-remove":
        return [[*x, v] for v in UNIVERSE] + [x[:i] + x[i + 1 :] for i in range(len(x))]
    return [[*x[:i], v, *x[i + 1 :]] for i in range(len(x)) for v in UNIVERSE]


@pytest.mark.parametrize("relation", ["add-remove", "substitute"])
def test_privacy_loss_is_at_most_epsilon(relation: str) -> None:
    values = GRID.values(np.arange(GRID.size))
    eps = 1.0
    for p, factor, within in ((0.5, 1.0, True), (0.25, 1.0, True), (0.5, 0.5, False)):
        worst = 0.0
        for x in DATASETS:
            if relation == "substitute" and not x:
                continue
            clip = list(np.clip(x, 0.0, 12.0))
            base = np.log(pf_pmf(clip, p, eps, values, relation, factor))
            for y in neighbours_of(x, relation):
                other = np.log(
                    pf_pmf(list(np.clip(y, 0.0, 12.0)), p, eps, values, relation, factor)
                )
                worst = max(worst, float(np.max(np.abs(base - other))))
        if within:
            assert 0.4 * eps < worst <= eps + 1e-9
        else:
            assert worst > eps


def test_used_on_small_grids_and_reported() -> None:
    small = ExponentialQuantile(0.5, 0.0, 100.0, 1.0, resolution=1.0)
    assert small.selection == "permute-and-flip"
    assert ExponentialQuantile(0.5, 0.0, 100.0, 1.0).selection == "exponential-mechanism"
    assert ExponentialQuantile(0.5, 0.0, float(MAX_GRID), 1.0, resolution=1.0).selection == (
        "exponential-mechanism"
    )
    out = ds.release(
        [1.0, 2.0, 2.0],
        ds.Median(0, 10, resolution=1),
        epsilon=1.0,
        method="exponential",
        rng=SeededRandom(1),
    )
    assert out.noise == "permute-and-flip"
    assert out.parameters["resolution"] == 1.0


def test_never_less_accurate_than_the_exponential_mechanism_on_tied_data() -> None:
    from dpsense.mechanisms._quantile_sampler import sample_quantile_indices

    rs = np.random.default_rng(3)
    x = rs.choice(np.arange(10.0), size=1000, p=np.array([1, 2, 3, 4, 5, 5, 4, 3, 2, 1]) / 30)
    grid: CandidateGrid = ResolutionGrid.build(0.0, 100.0, 1.0, "test")
    truth = float(np.sort(x)[499])
    score = quantile_score(0.5, 0.05, "add-remove", "test")
    rng = SeededRandom(4)
    values = grid.values(np.arange(grid.size))
    pf = values[sample_permute_and_flip(rng, x.copy(), grid, score, 3000)]
    em = values[sample_quantile_indices(rng, x.copy(), grid, score, 3000)]
    mae_pf = float(np.mean(np.abs(np.array(pf) - truth)))
    mae_em = float(np.mean(np.abs(em - truth)))
    assert mae_pf <= mae_em
    assert math.isfinite(mae_pf)
