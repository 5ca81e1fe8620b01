"""audit_mechanism: both audits on a callable from a dataset to a number (seeded)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.audit import audit_mechanism, neighbour_relation
from dpsense.audit.mechanism import check_draws
from dpsense.errors import InputError

X = np.linspace(0.0, 1.0, 50)
X_ADD = np.append(X, 1.0)  # add-remove neighbour of X
X_SUB = np.append(X[:-1], 0.0)  # substitute neighbour of X


def laplace_count(data: Any, rng: np.random.Generator) -> float:
    return len(data) + float(rng.laplace(0.0, 1.0))


def tiny_count(data: Any, rng: np.random.Generator) -> float:
    return len(data) + float(rng.laplace(0.0, 1.0 / 1000))


# --------------------------------------------------------------------------- the pair


def brute_relation(a: list[float], b: list[float]) -> str:
    """By definition: one record added or removed, or one replaced, over all positions."""
    if Counter(a) == Counter(b):
        return "identical"
    for big, small in ((a, b), (b, a)):
        if any(Counter(big[:i] + big[i + 1 :]) == Counter(small) for i in range(len(big))):
            return "add-remove"
    if len(a) == len(b):
        for i in range(len(a)):
            if any(Counter([*a[:i], v, *a[i + 1 :]]) == Counter(b) for v in set(b)):
                return "substitute"
    return "neither"


def test_neighbour_relation_matches_the_definition() -> None:
    universe = [0.0, 0.5, 1.0]
    datasets = [list(d) for k in range(4) for d in itertools.product(universe, repeat=k)]
    for a, b in itertools.product(datasets, repeat=2):
        assert neighbour_relation(a, b) == brute_relation(a, b), (a, b)


# --------------------------------------------------------------------------- verdicts


def test_catastrophe_test_catches_noise_scaled_to_local_sensitivity() -> None:
    """The median on [0, 1] with Laplace noise at its local sensitivity (NRS07 §1.1).

    x' has local sensitivity 0, so its output is exactly the median every time; the
    catastrophe test needs only 100 draws, where the histogram audit's 80 Bonferroni
    probabilities make it weaker.
    """
    median = ds.Median(0.0, 1.0)

    def local_median(data: Any, rng: np.random.Generator) -> float:
        scale = median.local_sensitivity(data, neighbours="substitute")
        return float(np.median(data)) + (float(rng.laplace(0.0, scale)) if scale > 0 else 0.0)

    x, x_prime = [0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 0.5, 1.0]
    assert median.local_sensitivity(np.array(x), neighbours="substitute") == 0.5
    result = audit_mechanism(local_median, x, x_prime, epsilon=1.0, draws=100, seed=0)
    assert result.violation
    assert result.neighbours == "substitute"
    assert result.found_by == "catastrophe"
    assert result.catastrophe is not None
    assert not result.catastrophe.passed
    assert result.catastrophe_event == "value 0.5"
    assert (result.catastrophe.count_x, result.catastrophe.count_y) == (0, 100)
    assert result.direction == "x' over x"
    assert result.epsilon_lower_bound == result.catastrophe.epsilon_lower_bound > 2.0


def test_alpha_is_split_only_when_the_catastrophe_test_runs() -> None:
    def discrete(data: Any, rng: np.random.Generator) -> int:
        return int(ds.discrete_laplace(len(data), scale=1.0, rng=rng))

    with_lump = audit_mechanism(discrete, X, X_ADD, epsilon=1.0, draws=2_000, alpha=0.1, seed=1)
    assert not with_lump.violation  # exact discrete Laplace at epsilon = 1/scale
    assert with_lump.catastrophe is not None
    assert with_lump.catastrophe.alpha == with_lump.histogram.alpha == 0.05
    assert with_lump.confidence == pytest.approx(0.9)
    continuous = audit_mechanism(laplace_count, X, X_ADD, epsilon=1.0, draws=500, alpha=0.1)
    assert continuous.catastrophe is None
    assert continuous.catastrophe_event is None
    assert continuous.histogram.alpha == 0.1
    assert continuous.calls == 2 * (500 + 500 + 500)
    # with delta > 0 the catastrophe test (a test of pure DP) never runs
    approximate = audit_mechanism(discrete, X, X_ADD, epsilon=1.0, delta=1e-3, draws=500)
    assert approximate.catastrophe is None
    assert approximate.histogram.alpha == 0.05
    assert approximate.calls == 2 * (500 + 500)


def test_gaussian_with_delta() -> None:
    sigma = ds.mechanisms.GaussianMechanism(1.0, 1.0, 1e-2, True).sigma

    def gaussian(scale: float) -> Any:
        return lambda data, rng: len(data) + float(rng.normal(0.0, scale))

    args = {"x": X, "x_prime": X_ADD, "epsilon": 1.0, "delta": 1e-2, "draws": 4_000, "seed": 2}
    assert not audit_mechanism(gaussian(sigma), **args).violation
    broken = audit_mechanism(gaussian(sigma / 1000), **args)
    assert broken.violation
    assert broken.histogram.delta_excess > 0


def test_correct_laplace_rarely_flagged_over_seeds() -> None:
    """A private mechanism is flagged with probability at most alpha (here, never)."""
    flagged = [
        audit_mechanism(
            laplace_count, X, X_SUB if s % 2 else X_ADD, epsilon=1.0, draws=1_000, seed=s
        )
        for s in range(10)
    ]
    assert sum(r.violation for r in flagged) <= 1
    assert all(0.0 <= r.epsilon_lower_bound <= 1.0 for r in flagged)


def test_seed_makes_the_audit_reproducible() -> None:
    first = audit_mechanism(laplace_count, X, X_ADD, epsilon=1.0, draws=300, seed=9)
    assert audit_mechanism(laplace_count, X, X_ADD, epsilon=1.0, draws=300, seed=9) == first
    assert audit_mechanism(laplace_count, X, X_ADD, epsilon=1.0, draws=300, seed=8) != first


def test_str_says_what_the_verdict_means() -> None:
    good = audit_mechanism(laplace_count, X, X_ADD, epsilon=1.0, draws=1_000, seed=3)
    bad = audit_mechanism(tiny_count, X, X_ADD, epsilon=1.0, draws=1_000, seed=3)
    assert good.verdict == "no violation detected"
    assert str(good).startswith("No violation detected at this power")
    assert "never prove privacy" in str(good)
    assert bad.verdict == "violation found"
    assert str(bad).startswith("VIOLATION FOUND: the mechanism is not (epsilon=1, delta=0)-DP.")


# --------------------------------------------------------------------------- answers


@pytest.mark.parametrize(
    "answer",
    [1, 1.5, np.float32(1.5), np.int64(2), np.array(2.5), np.array([3.0]), True, np.bool_(True)],
)
def test_accepted_answers(answer: object) -> None:
    result = audit_mechanism(lambda data: answer, X, X_ADD, epsilon=1.0, draws=100)
    assert not result.violation  # the same answer on both datasets


def test_the_data_is_read_only_and_the_cause_is_kept() -> None:
    def sorts_in_place(data: Any) -> float:
        data.sort()
        return 0.0

    with pytest.raises(InputError, match="raised ValueError when called on x,") as info:
        audit_mechanism(sorts_in_place, X, X_ADD, epsilon=1.0, draws=100, name="mine")
    assert "the mechanism mine raised" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)  # Python users see the traceback


def test_calls_on_x_prime_are_named() -> None:
    def fails_on_more(data: Any) -> float:
        if len(data) > 50:
            raise KeyError("987654.321")
        return 0.0

    with pytest.raises(InputError) as info:
        audit_mechanism(fails_on_more, X, X_ADD, epsilon=1.0, draws=100)
    assert "raised KeyError when called on x'," in str(info.value)
    assert "987654" not in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": 0}, "The 'epsilon' parameter of audit_mechanism must be a float in (0, inf)."),
        ({"epsilon": 1, "delta": 1}, "The 'delta' parameter of audit_mechanism"),
        ({"epsilon": 1, "draws": 99}, "The 'draws' parameter of audit_mechanism must be an int"),
        ({"epsilon": 1, "draws": 10**8}, "in [100, 10000000]. Got 100000000 instead."),
        ({"epsilon": 1, "draws": 150.5}, "'draws'"),
        ({"epsilon": 1, "alpha": 0}, "'alpha'"),
        ({"epsilon": 1, "seed": -1}, "'seed'"),
        ({"epsilon": 1, "neighbours": "swap"}, "'neighbours'"),
        ({"epsilon": 1, "x": [[1.0]]}, "'x' parameter of audit_mechanism must be a 1-D array"),
        ({"epsilon": 1, "x": ["a"]}, "'x' parameter"),
        ({"epsilon": 1, "x_prime": [math.nan]}, "'x_prime' parameter of audit_mechanism"),
        ({"epsilon": 1, "function": 3}, "'function' parameter of audit_mechanism"),
    ],
)
def test_bad_parameters(kwargs: dict[str, Any], message: str) -> None:
    call: dict[str, Any] = {"function": laplace_count, "x": X, "x_prime": X_ADD, **kwargs}
    with pytest.raises(InputError) as info:
        audit_mechanism(**call)
    assert message in str(info.value)


def test_check_draws_accepts_whole_floats() -> None:
    assert check_draws(1000.0) == 1000
    with pytest.raises(InputError):
        check_draws(True)
