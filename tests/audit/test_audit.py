"""Statistical tests of the audits: they accept true claims and reject 30%-wrong ones.

Every sampler owns a seeded generator, so each audit below is deterministic.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from itertools import product
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, stats
from tests.conftest import FakeTerminal

from dpsense.audit import (
    AuditResult,
    CatastropheResult,
    catastrophe_test,
    clopper_pearson,
    histogram_audit,
)
from dpsense.errors import InputError

Sampler = Callable[[int], Any]


def additive(
    noise: Callable[[np.random.Generator, int], Any],
    centre_x: float,
    centre_y: float,
    seed: int = 0,
) -> tuple[Sampler, Sampler]:
    """Samplers of f + noise on x and on x' with independent seeded generators."""
    rng_x, rng_y = np.random.default_rng([seed, 0]), np.random.default_rng([seed, 1])
    return (
        lambda k: centre_x + noise(rng_x, k),
        lambda k: centre_y + noise(rng_y, k),
    )


def laplace(scale: float, seed: int = 0) -> tuple[Sampler, Sampler]:
    return additive(lambda rng, k: rng.laplace(0.0, scale, k), 0.0, 1.0, seed)


def gaussian(sigma: float, seed: int = 0) -> tuple[Sampler, Sampler]:
    return additive(lambda rng, k: rng.normal(0.0, sigma, k), 0.0, 1.0, seed)


def two_sided_geometric(epsilon: float, seed: int = 0) -> tuple[Sampler, Sampler]:
    """A count (3 on x, 4 on x') plus noise with P(Z = z) proportional to e^(-eps |z|)."""
    p = -math.expm1(-epsilon)
    return additive(lambda rng, k: rng.geometric(p, k) - rng.geometric(p, k), 3, 4, seed)


def randomised_response(truth: float, seed: int = 0) -> tuple[Sampler, Sampler]:
    """The bit is 0 on x and 1 on x'; report it truthfully with probability ``truth``."""
    rng_x, rng_y = np.random.default_rng([seed, 0]), np.random.default_rng([seed, 1])
    return (lambda k: rng_x.random(k) >= truth), (lambda k: rng_y.random(k) < truth)


def classic_gaussian_sigma(epsilon: float, delta: float) -> float:
    """Dwork and Roth (2014), Theorem A.1, sensitivity 1 (valid for epsilon < 1)."""
    return math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def exact_gaussian_delta(sigma: float, epsilon: float) -> float:
    """Smallest delta of the Gaussian mechanism (sensitivity 1): Balle and Wang 2018, Thm 8."""
    a, b = 1.0 / (2.0 * sigma), epsilon * sigma
    return float(stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b))


def analytic_gaussian_sigma(epsilon: float, delta: float) -> float:
    return float(optimize.brentq(lambda s: exact_gaussian_delta(s, epsilon) - delta, 1e-3, 1e3))


# ---------------------------------------------------------------------- Clopper-Pearson


@pytest.mark.parametrize(("count", "n"), [(0, 100), (1, 100), (37, 100), (99, 100), (100, 100)])
def test_clopper_pearson_matches_scipy_exact_interval(count: int, n: int) -> None:
    lower, upper = clopper_pearson(count, n, 0.01)
    reference = stats.binomtest(count, n).proportion_ci(confidence_level=0.99, method="exact")
    assert float(lower) == pytest.approx(reference.low, abs=1e-12)
    assert float(upper) == pytest.approx(reference.high, abs=1e-12)


def test_clopper_pearson_zero_count_has_closed_form() -> None:
    _, upper = clopper_pearson(0, 250, 0.1)
    assert float(upper) == pytest.approx(1.0 - 0.05 ** (1.0 / 250))


def test_clopper_pearson_covers_at_the_stated_level() -> None:
    # exact coverage, summed over the binomial distribution, for a few proportions
    n, alpha = 60, 0.1
    k = np.arange(n + 1)
    lower, upper = clopper_pearson(k, n, alpha)
    for p in (0.01, 0.2, 0.5, 0.93):
        covered = (lower <= p) & (p <= upper)
        assert stats.binom.pmf(k, n, p)[covered].sum() >= 1 - alpha


# --------------------------------------------------------------------- Laplace, pure DP


def test_laplace_with_correct_scale_passes() -> None:
    result = histogram_audit(*laplace(1.0), epsilon=1.0, n=200_000)
    assert result.passed
    assert 0.8 < result.epsilon_lower_bound <= 1.0
    assert result.delta_excess <= 0.0


def test_laplace_with_30_percent_too_little_noise_fails() -> None:
    result = histogram_audit(*laplace(0.7), epsilon=1.0, n=200_000)
    assert not result.passed
    # the true privacy loss is 1 / 0.7 = 1.43; the bound is below it and above the claim
    assert 1.0 < result.epsilon_lower_bound <= 1.0 / 0.7
    assert result.delta_excess > 0.0


def test_audit_is_symmetric_in_the_datasets() -> None:
    sample_x, sample_y = laplace(0.7, seed=3)
    result = histogram_audit(sample_y, sample_x, epsilon=1.0, n=100_000)
    assert not result.passed


def test_one_direction_only_tests_x_against_x_prime() -> None:
    # P_x'(1) / P_x(1) = 2.5 violates epsilon = 0.5; every ratio P_x / P_x' is below 1.2
    rng_x, rng_y = np.random.default_rng(11), np.random.default_rng(12)

    def sample_x(k: int) -> Any:
        return (rng_x.random(k) < 0.1).astype(np.int64)

    def sample_y(k: int) -> Any:
        return (rng_y.random(k) < 0.25).astype(np.int64)

    both = histogram_audit(sample_x, sample_y, epsilon=0.5, n=50_000)
    assert not both.passed
    assert both.direction == "x' over x"
    assert both.worst_event == "value 1"
    one = histogram_audit(sample_x, sample_y, epsilon=0.5, n=50_000, both_directions=False)
    assert one.passed
    assert one.events_tested * 2 == both.events_tested


# --------------------------------------------------------------- Gaussian, (eps, delta)


def test_classic_gaussian_passes_approximate_audit() -> None:
    sigma = classic_gaussian_sigma(0.5, 1e-5)
    result = histogram_audit(*gaussian(sigma), epsilon=0.5, delta=1e-5, n=200_000)
    assert result.passed
    assert result.epsilon_lower_bound <= 0.5


def test_analytic_gaussian_passes_at_its_exact_delta() -> None:
    # sigma is tight here: the best event has P_x(E) - e P_x'(E) = 0.01 exactly
    sigma = analytic_gaussian_sigma(1.0, 1e-2)
    assert exact_gaussian_delta(sigma, 1.0) == pytest.approx(1e-2)
    result = histogram_audit(*gaussian(sigma), epsilon=1.0, delta=1e-2, n=200_000)
    assert result.passed
    assert result.epsilon_lower_bound <= 1.0


def test_gaussian_with_30_percent_too_small_sigma_fails() -> None:
    # the classic formula is too loose at epsilon = 1 for a 30% cut to show (its true
    # delta stays below 1e-2), so cut the exact sigma instead: true delta is about 0.05
    sigma = 0.7 * analytic_gaussian_sigma(1.0, 1e-2)
    assert exact_gaussian_delta(sigma, 1.0) > 0.04
    result = histogram_audit(*gaussian(sigma), epsilon=1.0, delta=1e-2, n=200_000)
    assert not result.passed
    assert result.delta_excess > 0.0
    assert result.worst_event.startswith("tail ")
    assert result.epsilon_lower_bound > 1.0


# --------------------------------------------------------------------- discrete outputs


def test_two_sided_geometric_passes_at_its_epsilon() -> None:
    result = histogram_audit(*two_sided_geometric(1.0), epsilon=1.0, n=200_000)
    assert result.passed
    assert result.worst_event.startswith("value ")
    assert 0.9 < result.epsilon_lower_bound <= 1.0


@pytest.mark.parametrize("claimed", [0.5, 0.7])
def test_two_sided_geometric_fails_at_smaller_epsilon(claimed: float) -> None:
    result = histogram_audit(*two_sided_geometric(1.0, seed=1), epsilon=claimed, n=200_000)
    assert not result.passed
    assert result.epsilon_lower_bound > claimed


@pytest.mark.parametrize(("factor", "passes"), [(1.0, True), (0.7, False), (0.5, False)])
def test_randomised_response(factor: float, passes: bool) -> None:
    result = histogram_audit(*randomised_response(0.75), epsilon=factor * math.log(3.0))
    assert result.passed is passes
    assert result.worst_event in {"value 0", "value 1"}


# -------------------------------------------------------------------------- catastrophe


def median(x: Sequence[float]) -> float:
    return float(np.median(np.asarray(x, dtype=float)))


def local_sensitivity(x: Sequence[float], grid: Sequence[float]) -> float:
    """Substitute-neighbour local sensitivity of the median by replacing each record."""
    base, largest = median(x), 0.0
    for i, value in product(range(len(x)), grid):
        y = list(x)
        y[i] = value
        largest = max(largest, abs(median(y) - base))
    return largest


def substitutions(x: Sequence[float], y: Sequence[float]) -> int:
    """Records to replace to turn multiset x into multiset y (same size)."""
    rest = list(y)
    for value in x:
        if value in rest:
            rest.remove(value)
    return len(rest)


GRID = np.linspace(0.0, 1.0, 21).tolist()  # [0, 1] in steps of 0.05, holds every record
SPEC_PAIR = ((0.0, 0.0, 0.5, 1.0, 1.0), (0.0, 0.5, 0.5, 0.5, 1.0))
NEIGHBOUR_PAIR = ((0.0, 0.0, 0.5, 0.5, 1.0), (0.0, 0.5, 0.5, 0.5, 1.0))


def laplace_on(data: Sequence[float], scale: float, seed: int) -> Sampler:
    rng, centre = np.random.default_rng(seed), median(data)
    if scale == 0.0:
        return lambda k: np.full(k, centre)
    return lambda k: centre + rng.laplace(0.0, scale, k)


def test_catastrophe_datasets_by_brute_force() -> None:
    (x, x_prime), (z, _) = SPEC_PAIR, NEIGHBOUR_PAIR
    assert median(x) == median(x_prime) == median(z) == 0.5
    # SPEC §6 names the zero-sensitivity dataset x; with these tuples it is x'
    assert local_sensitivity(x, GRID) == 0.5
    assert local_sensitivity(x_prime, GRID) == 0.0
    assert local_sensitivity(z, GRID) == 0.5
    assert substitutions(x, x_prime) == 2
    assert substitutions(z, x_prime) == 1


@pytest.mark.parametrize("pair", [SPEC_PAIR, NEIGHBOUR_PAIR], ids=["spec", "neighbours"])
def test_laplace_scaled_to_local_sensitivity_fails_within_100_draws(
    pair: tuple[Sequence[float], Sequence[float]],
) -> None:
    epsilon = 1.0
    x, x_prime = pair
    target = median(x_prime)
    result = catastrophe_test(
        laplace_on(x, local_sensitivity(x, GRID) / epsilon, seed=1),
        laplace_on(x_prime, local_sensitivity(x_prime, GRID) / epsilon, seed=2),
        event=lambda out: out == target,
        n=100,
        epsilon=epsilon,
    )
    assert not result.passed
    assert (result.count_x, result.count_y) == (0, 100)
    assert result.direction == "x' over x"
    assert result.epsilon_lower_bound > epsilon


@pytest.mark.parametrize("pair", [SPEC_PAIR, NEIGHBOUR_PAIR], ids=["spec", "neighbours"])
def test_laplace_scaled_to_global_sensitivity_passes(
    pair: tuple[Sequence[float], Sequence[float]],
) -> None:
    epsilon, global_sensitivity = 1.0, 1.0  # median on [0, 1], substitute neighbours
    x, x_prime = pair
    target = median(x_prime)
    result = catastrophe_test(
        laplace_on(x, global_sensitivity / epsilon, seed=1),
        laplace_on(x_prime, global_sensitivity / epsilon, seed=2),
        event=lambda out: out == target,
        epsilon=epsilon,
    )
    assert result.passed
    assert result.epsilon_lower_bound == 0.0


def test_histogram_audit_also_catches_the_point_mass() -> None:
    x, x_prime = NEIGHBOUR_PAIR
    result = histogram_audit(
        laplace_on(x, local_sensitivity(x, GRID), seed=1),
        laplace_on(x_prime, local_sensitivity(x_prime, GRID), seed=2),
        epsilon=1.0,
        n=1_000,
    )
    assert not result.passed
    assert result.worst_event == "value 0.5"


def test_catastrophe_fails_on_event_far_likelier_under_x() -> None:
    rng = np.random.default_rng(4)
    result = catastrophe_test(
        lambda k: rng.laplace(0.0, 0.1, k),
        lambda k: 1.0 + rng.laplace(0.0, 0.1, k),
        event=lambda out: out < 0.5,
        n=200,
        epsilon=2.0,
    )
    assert not result.passed
    assert result.direction == "x over x'"


# ------------------------------------------------------------------------------ results


def test_results_are_frozen_and_readable() -> None:
    passing = histogram_audit(*laplace(1.0, seed=5), epsilon=1.0, n=20_000)
    failing = histogram_audit(*laplace(0.5, seed=5), epsilon=1.0, n=20_000)
    assert isinstance(passing, AuditResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        passing.passed = False  # type: ignore[misc]
    assert "PASSED" in str(passing)
    assert "cannot prove" in str(passing)
    assert "FAILED" in str(failing)
    assert failing.worst_event in str(failing)
    assert "\n" not in str(failing)
    caught = catastrophe_test(
        laplace_on((0.0,), 0.0, 1), laplace_on((1.0,), 0.0, 2), event=lambda o: o == 1.0, epsilon=1
    )
    assert isinstance(caught, CatastropheResult)
    assert "FAILED" in str(caught)
    assert "0 of 1000 outputs on x and 1000 of 1000 on x'" in str(caught)


def test_labels_of_continuous_bins_and_tails() -> None:
    result = histogram_audit(*gaussian(1.0), epsilon=0.01, delta=0.001, n=5_000, bins=4)
    assert not result.passed
    assert result.worst_event.startswith(("tail <", "tail >=", "bin ["))


# ----------------------------------------------------------------------------- progress


def test_no_progress_bar_off_a_terminal(
    capsys: pytest.CaptureFixture[str], rich_tasks: list[str]
) -> None:
    assert histogram_audit(*laplace(1.0, seed=5), epsilon=1.0, n=20_000).passed
    assert rich_tasks == []
    assert capsys.readouterr() == ("", "")


def test_progress_bar_on_a_terminal_follows_the_draws(
    terminal: Callable[[], FakeTerminal], rich_tasks: list[str]
) -> None:
    stderr = terminal()
    result = histogram_audit(*laplace(1.0, seed=5), epsilon=1.0, n=20_000)
    assert rich_tasks == ["Drawing outputs"]
    assert "Drawing outputs" in stderr.getvalue()
    assert "100%" in stderr.getvalue()
    # the bar changes nothing in the audit
    assert result == histogram_audit(*laplace(1.0, seed=5), epsilon=1.0, n=20_000, progress=False)
    assert rich_tasks == ["Drawing outputs"]


def test_forced_progress_bar_uses_rich_but_not_stdout(
    capsys: pytest.CaptureFixture[str], rich_tasks: list[str]
) -> None:
    histogram_audit(*laplace(1.0, seed=5), epsilon=1.0, n=20_000, progress=True)
    assert rich_tasks == ["Drawing outputs"]
    assert capsys.readouterr().out == ""


# --------------------------------------------------------------------------- validation


def good() -> tuple[Sampler, Sampler]:
    return laplace(1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"epsilon": -1},
            "The 'epsilon' parameter of histogram_audit must be a float in (0, inf). "
            "Got -1 instead.",
        ),
        ({"epsilon": 0.0}, "'epsilon'"),
        ({"epsilon": math.inf}, "'epsilon'"),
        ({"epsilon": math.nan}, "'epsilon'"),
        ({"epsilon": "1"}, "'epsilon'"),
        ({"epsilon": True}, "'epsilon'"),
        ({"epsilon": 1, "delta": -0.1}, "'delta' parameter of histogram_audit"),
        ({"epsilon": 1, "delta": 1.0}, "'delta'"),
        ({"epsilon": 1, "n": 99}, "The 'n' parameter of histogram_audit must be an int >= 100"),
        ({"epsilon": 1, "n": 150.5}, "'n'"),
        ({"epsilon": 1, "alpha": 0.0}, "'alpha' parameter of histogram_audit"),
        ({"epsilon": 1, "alpha": 1.0}, "'alpha'"),
        ({"epsilon": 1, "bins": 1}, "The 'bins' parameter of histogram_audit must be an int >= 2"),
        ({"epsilon": 1, "both_directions": "yes"}, "'both_directions'"),
        ({"epsilon": 1, "progress": "yes"}, "'progress' parameter of histogram_audit"),
    ],
)
def test_histogram_audit_rejects_bad_parameters(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as info:
        histogram_audit(*good(), **kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": -1}, "The 'epsilon' parameter of catastrophe_test must be a float"),
        ({"epsilon": 1, "n": 10}, "'n' parameter of catastrophe_test must be an int >= 100"),
        ({"epsilon": 1, "alpha": 2}, "'alpha'"),
        ({"epsilon": 1, "event": "out == 0.5"}, "'event' parameter of catastrophe_test"),
        ({"epsilon": 1, "event": lambda out: out}, "must return a boolean array"),
        ({"epsilon": 1, "event": lambda out: out[:5] > 0}, "shape (5,)"),
    ],
)
def test_catastrophe_test_rejects_bad_parameters(kwargs: dict[str, Any], message: str) -> None:
    kwargs.setdefault("event", lambda out: out == 0.5)
    with pytest.raises(InputError) as info:
        catastrophe_test(*good(), **kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("sampler", "message"),
    [
        (lambda k: np.zeros(k - 1), "must return a 1-D array of n="),
        (lambda k: np.zeros((k, 2)), "shape"),
        (lambda k: np.full(k, np.nan), "NaN or infinite"),
        (lambda k: np.where(np.arange(k) == 3, np.inf, 0.0), "Got 1 NaN or infinite"),
        (lambda k: np.array(["a"] * k), "array of numbers"),
        (lambda k: [None] * k, "array of numbers"),
        (lambda k: 0.5, "shape ()"),
    ],
)
def test_bad_samplers_are_rejected(sampler: Sampler, message: str) -> None:
    with pytest.raises(InputError, match="'sample_y' parameter") as info:
        histogram_audit(good()[0], sampler, epsilon=1.0, n=100)
    assert message in str(info.value)
    with pytest.raises(InputError, match="'sample_x' parameter of catastrophe_test"):
        catastrophe_test(sampler, good()[1], event=lambda out: out == 0, epsilon=1.0, n=100)


def test_non_callable_sampler_is_rejected() -> None:
    with pytest.raises(InputError, match="'sample_x' parameter of histogram_audit must be a"):
        histogram_audit(np.zeros(100), good()[1], epsilon=1.0)  # type: ignore[arg-type]


def test_error_messages_never_echo_outputs() -> None:
    with pytest.raises(InputError) as info:
        histogram_audit(good()[0], lambda k: np.full(k - 1, 123.456), epsilon=1.0, n=100)
    assert "123.456" not in str(info.value)


@given(
    n=st.integers(min_value=1, max_value=5_000),
    fraction=st.floats(min_value=0.0, max_value=1.0),
    alpha=st.floats(min_value=1e-6, max_value=0.5),
)
def test_clopper_pearson_interval_holds_the_estimate_and_widens_with_confidence(
    n: int, fraction: float, alpha: float
) -> None:
    k = round(fraction * n)
    lower, upper = clopper_pearson(k, n, alpha)
    wide_lower, wide_upper = clopper_pearson(k, n, alpha / 10)
    assert 0.0 <= wide_lower <= lower <= k / n <= upper <= wide_upper <= 1.0


def test_true_claims_fail_at_most_about_alpha_of_the_time() -> None:
    # the bounds are conservative: 200 seeded audits of an exact claim at alpha = 0.2
    failures = sum(
        not histogram_audit(
            *randomised_response(0.75, seed), epsilon=math.log(3.0), n=500, alpha=0.2
        ).passed
        for seed in range(200)
    )
    assert failures <= 40
