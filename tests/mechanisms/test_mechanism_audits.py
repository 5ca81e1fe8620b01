"""Empirical-epsilon histogram audits of the base mechanisms on neighbouring inputs (SPEC §6).

Each mechanism runs on the outputs of a query at neighbouring datasets (values that differ
by the full sensitivity) and must pass the audit at its claimed guarantee; a deliberately
mis-scaled mechanism (calibrated to 70% of the true sensitivity) must fail it, which shows
the audit bites.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpsense.audit import histogram_audit
from dpsense.mechanisms import (
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
)
from dpsense.noise.rng import SeededRandom

N = 200_000


def _additive(mech: object, value: float, seed: int, integer: bool = False):
    rng = SeededRandom(seed)
    dtype = np.int64 if integer else np.float64

    def sample(n: int) -> np.ndarray:
        return np.asarray(mech.release(np.full(n, value, dtype=dtype), rng).value)  # type: ignore[attr-defined]

    return sample


def test_laplace_passes_and_a_mis_scaled_laplace_fails() -> None:
    good = LaplaceMechanism(1.0, 1.0)
    result = histogram_audit(_additive(good, 0.0, 1), _additive(good, 1.0, 2), epsilon=1.0, n=N)
    assert result.passed, str(result)
    bad = LaplaceMechanism(0.7, 1.0)  # true sensitivity is 1
    result = histogram_audit(_additive(bad, 0.0, 3), _additive(bad, 1.0, 4), epsilon=1.0, n=N)
    assert not result.passed, str(result)
    assert result.epsilon_lower_bound > 1.0


def test_gaussian_passes_its_analytic_guarantee_and_a_mis_scaled_one_fails() -> None:
    eps, delta = 1.0, 1e-2  # a delta large enough for the audit to have power
    good = GaussianMechanism(1.0, eps, delta)
    result = histogram_audit(
        _additive(good, 0.0, 5), _additive(good, 1.0, 6), epsilon=eps, delta=delta, n=N
    )
    assert result.passed, str(result)
    bad = GaussianMechanism(0.7, eps, delta)
    result = histogram_audit(
        _additive(bad, 0.0, 7), _additive(bad, 1.0, 8), epsilon=eps, delta=delta, n=N
    )
    assert not result.passed, str(result)


def test_discrete_laplace_passes_at_its_epsilon_and_fails_below_it() -> None:
    mech = DiscreteLaplaceMechanism(1.0)  # sensitivity 1: epsilon = 1
    sx, sy = _additive(mech, 0, 9, integer=True), _additive(mech, 1, 10, integer=True)
    assert histogram_audit(sx, sy, epsilon=1.0, n=N).passed
    assert not histogram_audit(sx, sy, epsilon=0.7, n=N).passed


def test_exponential_mechanism_passes_and_a_mis_scaled_one_fails() -> None:
    # utilities of 5 candidates on neighbouring datasets: each moves by at most 1
    u_x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    u_y = np.array([1.0, 0.0, 3.0, 2.0, 3.0])
    assert np.max(np.abs(u_x - u_y)) <= 1.0

    def sampler(mech: ExponentialMechanism, scores: np.ndarray, seed: int):
        rng = SeededRandom(seed)
        return lambda n: mech.sample_indices(scores, n, rng)

    good = ExponentialMechanism(1.0, 2.0)
    result = histogram_audit(sampler(good, u_x, 11), sampler(good, u_y, 12), epsilon=2.0, n=N)
    assert result.passed, str(result)
    bad = ExponentialMechanism(0.5, 2.0)  # claims half the utility sensitivity
    result = histogram_audit(sampler(bad, u_x, 13), sampler(bad, u_y, 14), epsilon=2.0, n=N)
    assert not result.passed, str(result)


@pytest.mark.parametrize("value", [0.0, 1e6 + 0.1, -3.3e-7])
def test_grid_outputs_never_depend_on_the_value_for_their_support(value: float) -> None:
    mech = LaplaceMechanism(1.0, 1.0)
    rng = SeededRandom(15)
    a = mech.release(np.full(1000, value), rng)
    b = mech.release(np.full(1000, value + 1.0), rng)
    assert a.grid == b.grid
    assert a.grid is not None
    assert np.all(np.mod(a.value, a.grid) == 0)
    assert np.all(np.mod(b.value, b.grid) == 0)
