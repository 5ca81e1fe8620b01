"""Seed 000's framework examples, reproduced with SPEC's corrections."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpsense as ds
from dpsense.methods.ptr import _tail, _test_scale, ptr_threshold
from dpsense.noise.rng import SeededRandom
from dpsense.query.one_step import sample_and_aggregate
from dpsense.release import release


def _ages(n: int = 32_561) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.clip(np.round(rng.gamma(6.0, 6.5, n) + 17), 17, 90)


def test_seed_000_ptr_threshold_is_too_small_and_ours_is_not() -> None:
    eps, delta = 1.0, 1e-6
    seed_threshold = math.log(2 / delta) / (2 * eps)
    real_delta = 0.5 * math.exp(-eps * seed_threshold)  # P(Lap(1/eps) > T) when D = 0
    assert real_delta == pytest.approx(3.5e-4, rel=0.02)
    assert real_delta > 300 * delta
    correct = math.log(1 / (2 * delta)) / eps
    assert 0.5 * math.exp(-eps * correct) == pytest.approx(delta)
    m = ptr_threshold(eps, delta)
    scale = float(_test_scale(eps))
    assert _tail(m, scale) <= delta < _tail(m - 1, scale)
    assert m >= correct


def test_seed_000_ptr_mean_of_ages_passes_with_the_corrected_bound() -> None:
    ages = _ages()
    n = ages.size
    mean = ds.Mean(0, 100)
    delta = 1 / n**2
    # with the corrected A(k) the distance to local sensitivity 0.005 is far above threshold
    distance = mean.distance_to_instability(ages, 0.005)
    assert distance > ptr_threshold(0.5, delta)
    rng = SeededRandom(1)
    errors = []
    for _ in range(200):
        r = release(ages, mean, epsilon=1.0, delta=delta, method="ptr", bound=0.005, rng=rng)
        assert not r.refused
        errors.append(abs(r.value - ages.mean()))
    assert np.mean(errors) < 0.05  # Lap(0.005 / 0.5): mean error 0.01


def test_seed_000_global_noisy_sum_over_count_and_ptr_are_both_accurate() -> None:
    ages = _ages()
    rng = SeededRandom(2)
    glob = [
        release(ages, ds.Mean(0, 100), epsilon=1, method="global", rng=rng).value
        for _ in range(200)
    ]
    assert abs(np.mean(glob) - ages.mean()) < 0.05
    pct = 100 * np.abs(np.array(glob) - ages.mean()) / ages.mean()
    assert np.median(pct) < 0.1  # seed 000's histogram: well under a percent


def test_seed_000_sample_and_aggregate_few_blocks_lose_to_global() -> None:
    ages = _ages()
    rng = SeededRandom(3)
    truth = ages.mean()

    def saa_errors(blocks: int) -> list[float]:
        """100 releases' errors; the draws continue the one shared generator in order."""
        return [
            abs(
                sample_and_aggregate(
                    ages, np.mean, blocks=blocks, lower=20, upper=80, epsilon=1, rng=rng
                ).value
                - truth
            )
            for _ in range(100)
        ]

    saa10 = saa_errors(10)
    saa600 = saa_errors(600)
    glob = [
        abs(release(ages, ds.Mean(0, 100), epsilon=1, method="global", rng=rng).value - truth)
        for _ in range(100)
    ]
    # seed 000: "k = 10; global sensitivity is *much* better"; more blocks close the gap
    assert np.mean(saa10) > 5 * np.mean(glob)
    assert np.mean(saa600) < np.mean(saa10)
