"""The seed documents' worked examples, reproduced (and corrected where SPEC says so)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpsense as ds


@pytest.mark.parametrize("relation", ["substitute", "add-remove"])
def test_seed_002_median_smooth_sensitivity_is_one(relation: str) -> None:
    # data 1..10 in [0, 1000], beta = 2: S* = max(max_{k<=4} e^{-2k} * 1, ...) = 1
    x = np.arange(1, 11, dtype=float)
    median = ds.Median(0, 1000)
    assert median(x) == 5.0
    assert median.local_sensitivity(x, relation) == 1.0
    assert median.smooth_sensitivity(x, 2.0, relation) == 1.0
    # the slide's A(k): 1 for k = 0, growing with k, reaching 1000 once the window hits a bound
    a = median.sensitivity_at_distance(x, np.arange(11), relation)
    assert a[0] == 1.0
    assert a[-1] == 1000.0
    assert np.max(np.exp(-2.0 * np.arange(11)) * a) == 1.0


def test_seed_000_mean_local_sensitivity_corrected() -> None:
    # SPEC §2: seed 000's u/(n+1) ignores removals. n = 6, l = 0, u = 100:
    # removing the 0 from (0, 100, 100, 100, 100, 100) moves the mean by 16.67 > 14.29.
    x = np.array([0.0, 100, 100, 100, 100, 100])
    mean = ds.Mean(0, 100)
    seed_bound = 100 / (len(x) + 1)
    assert seed_bound == pytest.approx(14.2857, abs=1e-4)
    ls = mean.local_sensitivity(x)
    assert ls == pytest.approx(100 / 6, rel=1e-12)
    assert ls > seed_bound
    brute = ds.empirical_sensitivity(mean, x, [0.0, 100.0], model="domain")
    assert brute == pytest.approx(ls, rel=1e-12)
    # seed 000's A(k) = u/(n - k + 1) is below the brute-force A(1) too; ours is not
    brute_a1 = ds.empirical_sensitivity(mean, x, [0.0, 50.0, 100.0], distance=1)
    assert 100 / (len(x) - 1 + 1) < brute_a1 <= mean.sensitivity_at_distance(x, 1)


def test_seed_000_mean_smooth_sensitivity_on_ages_peaks_at_k_zero() -> None:
    # seed 000: for a large dataset of ages, e^{-beta k} A(k) is largest at k = 0
    rng = np.random.default_rng(0)
    ages = rng.integers(17, 91, 32_561).astype(float)
    beta = ds.smooth_beta(1.0, 1.0 / len(ages) ** 2)
    mean = ds.Mean(0, 100)
    a = mean.sensitivity_at_distance(ages, np.arange(200))
    weighted = np.exp(-beta * np.arange(200)) * a
    assert int(np.argmax(weighted)) == 0
    assert mean.smooth_sensitivity(ages, beta) == pytest.approx(weighted[0], rel=1e-12)


def _median(X: np.ndarray) -> np.ndarray:
    return np.median(X, axis=-1)


@pytest.mark.parametrize("model", ["population", "domain"])
def test_seed_004_universe_median(model: str) -> None:
    # universe {1, 2, 3, 10, 11}, datasets of size 3, median (numpy's, as in the seed), h = 1
    universe = [1, 2, 3, 10, 11]
    es = ds.empirical_sensitivity
    assert es(_median, [1, 2, 3], universe, model=model) == 0.5
    assert es(_median, [1, 10, 11], universe, model=model) == 4.5
    assert es(_median, [1, 2, 3], universe, model=model, neighbours="substitute") == 1.0
    if model == "population":
        assert es(_median, [1, 2, 3], universe, model=model, scope="global") == 4.5
        glob = es(
            _median, [1, 2, 3], universe, model=model, scope="global", neighbours="substitute"
        )
        assert glob == 8.0
    # local never exceeds global, and distance 2 never falls below distance 1
    for nb in ("add-remove", "substitute"):
        local = es(_median, [1, 2, 3], universe, model=model, neighbours=nb)
        glob = es(_median, [1, 2, 3], universe, model=model, neighbours=nb, scope="global")
        h2 = es(_median, [1, 2, 3], universe, model=model, neighbours=nb, hamming=2)
        assert local <= glob
        assert h2 >= local
    assert math.isfinite(es(_median, [1, 2, 3], universe, model=model, hamming=2))
