"""The base mechanisms: randomness, calibration, grid support, accuracy and validation."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpsense as ds
from dpsense.mechanisms import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
)
from dpsense.noise import SystemRandom, resolve_rng
from dpsense.noise.rng import SeededRandom


def test_default_randomness_is_the_os_csprng_and_does_not_warn() -> None:
    assert isinstance(resolve_rng(None), SystemRandom)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = ds.LaplaceMechanism(1.0, 1.0).release(3.0)
    assert result.seeded is False


def test_int_seed_warns_is_reproducible_and_marked() -> None:
    with pytest.warns(ds.SeededRandomnessWarning, match="not cryptographically secure"):
        a = ds.LaplaceMechanism(1.0, 1.0).release(3.0, rng=42)
    with pytest.warns(ds.SeededRandomnessWarning):
        b = ds.LaplaceMechanism(1.0, 1.0).release(3.0, rng=42)
    assert a.seeded
    assert b.seeded
    assert a.value == b.value
    with pytest.warns(ds.SeededRandomnessWarning):
        ds.gaussian(1.0, sensitivity=1, epsilon=1, delta=1e-6, rng=np.random.default_rng(1))


@pytest.mark.parametrize("bad", [-1, 1.5, "seed", True])
def test_bad_rng_is_refused(bad: object) -> None:
    with pytest.raises(ds.InputError, match="'rng' parameter"):
        ds.laplace(1.0, sensitivity=1, epsilon=1, rng=bad)


def test_outputs_on_neighbouring_inputs_share_one_data_independent_grid() -> None:
    rng = SeededRandom(1)
    mech = ds.LaplaceMechanism(1.0, 0.5)
    on_x = [mech.release(0.0, rng) for _ in range(200)]
    on_y = [mech.release(1.0 / 3.0, rng) for _ in range(200)]
    grids = {r.grid for r in on_x + on_y}
    assert len(grids) == 1
    grid = grids.pop()
    assert grid is not None
    assert math.frexp(grid)[0] == 0.5  # a power of two
    for r in on_x + on_y:
        assert (r.value / grid).is_integer()
    gauss = ds.GaussianMechanism(1.0, 1.0, 1e-6)
    gx = [gauss.release(0.0, rng) for _ in range(100)]
    gy = [gauss.release(0.7, rng) for _ in range(100)]
    assert len({r.grid for r in gx + gy}) == 1
    assert all((r.value / gx[0].grid).is_integer() for r in gx + gy)


def test_classic_gaussian_refuses_epsilon_at_least_one() -> None:
    with pytest.raises(ds.InputError, match="epsilon < 1"):
        ds.GaussianMechanism(1.0, 1.0, 1e-5, analytic=False)
    assert classic_gaussian_sigma(1.0, 0.5, 1e-5) == pytest.approx(
        math.sqrt(2 * math.log(1.25e5)) / 0.5
    )


def _mp_delta(sigma: float, sens: float, eps: float) -> mpmath.mpf:
    mpmath.mp.dps = 50
    s, d, e = mpmath.mpf(sigma), mpmath.mpf(sens), mpmath.mpf(eps)
    return mpmath.ncdf(d / (2 * s) - e * s / d) - mpmath.e**e * mpmath.ncdf(
        -d / (2 * s) - e * s / d
    )


@pytest.mark.parametrize(("eps", "delta"), [(0.1, 1e-6), (1.0, 1e-5), (4.0, 1e-9), (10.0, 1e-3)])
def test_analytic_gaussian_is_the_smallest_private_sigma(eps: float, delta: float) -> None:
    sigma = analytic_gaussian_sigma(2.0, eps, delta)
    # cross-checked against an independent 50-digit computation
    assert _mp_delta(sigma, 2.0, eps) <= delta
    assert _mp_delta(sigma * (1 - 1e-9), 2.0, eps) > delta
    assert analytic_gaussian_delta(sigma, 2.0, eps) <= delta
    if eps < 1:
        assert sigma < classic_gaussian_sigma(2.0, eps, delta)


def test_vector_values_get_independent_noise_and_keep_their_shape() -> None:
    rng = SeededRandom(3)
    out = ds.LaplaceMechanism(1.0, 1.0).release(np.zeros((50, 40)), rng).value
    assert out.shape == (50, 40)
    flat = out.reshape(-1)
    assert abs(np.corrcoef(flat[:-1], flat[1:])[0, 1]) < 0.05
    assert stats.kstest(flat, "laplace").pvalue > 1e-3


@pytest.mark.parametrize(
    "mech",
    [
        ds.LaplaceMechanism(1.0, 0.7),
        ds.GaussianMechanism(1.0, 0.7, 1e-6),
        ds.DiscreteLaplaceMechanism(3.0),
        ds.DiscreteGaussianMechanism(4.0),
    ],
    ids=["laplace", "gaussian", "discrete-laplace", "discrete-gaussian"],
)
def test_accuracy_statements_hold_empirically(mech: object) -> None:
    rng = SeededRandom(4)
    beta = 0.1
    a = mech.accuracy(beta)  # type: ignore[attr-defined]
    discrete = isinstance(mech, ds.DiscreteLaplaceMechanism | ds.DiscreteGaussianMechanism)
    value = np.zeros(20_000, dtype=np.int64 if discrete else np.float64)
    out = mech.release(value, rng).value  # type: ignore[attr-defined]
    coverage = float(np.mean(np.abs(out) <= a))
    assert coverage >= 1 - beta - 0.01
    assert "probability" in mech.accuracy_statement(beta)  # type: ignore[attr-defined]


def test_discrete_mechanisms_are_integers_in_integers_out() -> None:
    rng = SeededRandom(5)
    out = ds.DiscreteLaplaceMechanism(2.5).release(np.arange(10), rng).value
    assert out.dtype == np.int64
    assert isinstance(ds.DiscreteGaussianMechanism(3.3).release(7, rng).value, int)
    with pytest.raises(ds.InputError, match="integers"):
        ds.discrete_laplace(1.5, scale=1.0)
    assert ds.DiscreteLaplaceMechanism.for_privacy(2, 0.5).scale == 4.0
    assert ds.DiscreteLaplaceMechanism(4.0).epsilon_for(2) == 0.5
    assert ds.DiscreteGaussianMechanism(2.0).rho_for(1) == 0.125


def test_zero_sensitivity_releases_the_value_unchanged() -> None:
    assert ds.laplace(5.0, sensitivity=0.0, epsilon=1.0) == 5.0
    assert ds.gaussian(5.0, sensitivity=0.0, epsilon=1.0, delta=1e-6) == 5.0


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: ds.laplace(1.0, sensitivity=1, epsilon=0), "'epsilon' parameter"),
        (lambda: ds.laplace(1.0, sensitivity=-1, epsilon=1), "'sensitivity' parameter"),
        (lambda: ds.laplace(float("nan"), sensitivity=1, epsilon=1), "NaN"),
        (lambda: ds.laplace([], sensitivity=1, epsilon=1), "empty"),
        (lambda: ds.laplace("x", sensitivity=1, epsilon=1), "number"),
        (lambda: ds.gaussian(1.0, sensitivity=1, epsilon=1, delta=0), "'delta' parameter"),
        (lambda: ds.gaussian(1.0, sensitivity=1, epsilon=1, delta=1.0), "'delta' parameter"),
        (lambda: ds.discrete_gaussian(1, sigma=0), "'sigma' parameter"),
        (lambda: ds.discrete_laplace(1, scale=-2), "'scale' parameter"),
        (lambda: ds.exponential(["a"], [1, 2], sensitivity=1, epsilon=1), "one score"),
        (lambda: ds.exponential(["a"], [np.inf], sensitivity=1, epsilon=1), "NaN or infinity"),
        (lambda: ds.exponential(["a"], [1], sensitivity=0, epsilon=1), "'sensitivity'"),
        (lambda: ds.report_noisy_max([], sensitivity=1, epsilon=1), "at least one score"),
    ],
)
def test_bad_input_is_one_clear_input_error(call: object, fragment: str) -> None:
    with pytest.raises(ds.InputError, match=None) as info:
        call()  # type: ignore[operator]
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.slow  # a chi-square test over many draws: the slow tier (make slow)
def test_exponential_mechanism_follows_its_softmax() -> None:
    rng = SeededRandom(6)
    mech = ds.ExponentialMechanism(1.0, 1.5)
    scores = [0.0, 1.0, 2.0, 4.0]
    picks = [mech.select(range(4), scores, rng).index for _ in range(20_000)]
    counts = np.bincount(picks, minlength=4)
    p = mech.probabilities(scores)
    assert stats.chisquare(counts, p * counts.sum()).pvalue > 1e-3
    wrong = ds.ExponentialMechanism(1.0, 1.5 * 1.3).probabilities(scores)
    assert stats.chisquare(counts, wrong * counts.sum()).pvalue < 1e-3
    assert mech.accuracy(4, 0.05) == pytest.approx(2 / 1.5 * (math.log(4) + math.log(20)))


def test_exponential_mechanism_gives_far_candidates_positive_probability() -> None:
    """Utility gap 2000 at eps/(2 Delta) = 1/2: weight ratio e^-1000, positive, certified."""
    mech = ds.ExponentialMechanism(1.0, 1.0)
    choice = mech._choice(np.array([0.0, -2000.0, -1.0]))
    assert choice.probability_lower_bound(1) > 0
    assert Fraction(mech.temperature) <= Fraction(1, 2)
    picks = mech.sample_indices([0.0, -2000.0, -1.0], 2000, SeededRandom(8))
    assert set(picks.tolist()) <= {0, 2}
    exact = mech._choice(np.array([0.0, 1.0, 2.0, 4.0])).sample(SeededRandom(9), 5000, _exact=True)
    p = ds.ExponentialMechanism(1.0, 1.5).probabilities([0.0, 1.0, 2.0, 4.0])
    assert stats.chisquare(np.bincount(exact, minlength=4), p * 5000).pvalue < 1e-3  # wrong eps
    right = mech.probabilities([0.0, 1.0, 2.0, 4.0])
    assert stats.chisquare(np.bincount(exact, minlength=4), right * 5000).pvalue > 1e-3


def test_report_noisy_max_prefers_the_largest_score() -> None:
    rng = SeededRandom(7)
    wins = [
        ds.report_noisy_max([1.0, 9.0, 2.0], sensitivity=1, epsilon=2, rng=rng) for _ in range(500)
    ]
    assert np.bincount(wins, minlength=3).argmax() == 1
