"""Quantile mechanisms (docs/quantile_mechanisms.md): exactness, support and privacy.

* The sampling distribution is checked against the pmf computed by brute force from the
  definition (every grid point): chi-square at alpha = 0.001 accepts the true pmf and
  rejects one with a 30% wrong epsilon, on the fast path and on the certified path alone.
* Support: an interval e^-1000 times less likely than the best has a certified positive
  probability.
* Privacy: on every neighbour (add, remove, substitute) of small datasets the log-ratio of
  the brute-force pmfs never exceeds epsilon, which checks the sensitivity claims; a
  mechanism with half the utility sensitivity fails the same check.
* JointExp is withdrawn and says what to use instead.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy import stats
from scipy.special import logsumexp

from dpsense.errors import InputError
from dpsense.mechanisms.quantile import (
    ExponentialQuantile,
    JointExponentialQuantiles,
    QuantileResult,
    _interval_edges,
    _QuantileGrid,
    _sample_single,
    _single_choice,
    exponential_quantile,
    joint_quantiles,
)
from dpsense.noise.rng import SeededRandom, SeededRandomnessWarning

ALPHA = 0.001
DRAWS = 200_000


# ----------------------------------------------------------------------------------------
# Brute force from the definitions
# ----------------------------------------------------------------------------------------


def grid_values(lower: float, upper: float, bits: int) -> tuple[float, NDArray[np.float64]]:
    """gamma = 2^(floor(log2(upper - lower)) - bits) and the grid points in [lower, upper]."""
    spacing = 2.0 ** (math.floor(math.log2(upper - lower)) - bits)
    ks = np.arange(math.ceil(lower / spacing), math.floor(upper / spacing) + 1)
    return spacing, np.asarray(ks * spacing, dtype=np.float64)


def rounded_records(x: list[float], values: NDArray[np.float64]) -> NDArray[np.int64]:
    """Index of the grid point nearest to each clipped record (test data has no ties)."""
    clipped = np.clip(np.asarray(x, dtype=float), values[0], values[-1])
    return np.asarray(np.argmin(np.abs(clipped[:, None] - values[None, :]), axis=1))


def single_log_pmf(
    x: list[float], p: float, epsilon: float, values: NDArray[np.float64], temperature: float
) -> NDArray[np.float64]:
    """log P(k) ∝ temperature * epsilon * u(k), u(k) = -|#{z <= k} - p n|."""
    z = rounded_records(x, values)
    counts = np.array([np.sum(z <= k) for k in range(values.size)])
    log_w = -temperature * epsilon * np.abs(counts - p * len(x))
    return np.asarray(log_w - logsumexp(log_w))


def chisquare_pvalue(samples: NDArray[np.int64], log_pmf: NDArray[np.float64]) -> float:
    """Chi-square goodness of fit; cells with expected count below 5 are pooled."""
    observed = np.bincount(samples, minlength=log_pmf.size).astype(float)
    expected = np.exp(log_pmf) * samples.size
    small = expected < 5
    if small.any():
        observed = np.append(observed[~small], observed[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    expected *= observed.sum() / expected.sum()
    return float(stats.chisquare(observed, expected).pvalue)


def sorted_offsets(x: list[float], lower: float, upper: float, bits: int) -> NDArray[np.int64]:
    grid = _QuantileGrid.build(lower, upper, bits, "test")
    return np.sort(grid.offsets(np.asarray(x, dtype=float)))


# ----------------------------------------------------------------------------------------
# The grid
# ----------------------------------------------------------------------------------------


bound_pairs = st.tuples(
    st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False),
    st.floats(1e-6, 1e9, allow_nan=False, allow_infinity=False),
).map(lambda t: (t[0], t[0] + t[1]))


@given(bound_pairs)
@settings(max_examples=60)
def test_grid_is_a_power_of_two_fixed_by_the_bounds(bounds: tuple[float, float]) -> None:
    lower, upper = bounds
    if not lower < upper:
        return
    grid = _QuantileGrid.build(lower, upper, 32, "test")
    mantissa, _ = math.frexp(grid.spacing)
    assert mantissa == 0.5  # a power of two
    assert grid.spacing == 2.0 ** (math.floor(math.log2(upper - lower)) - 32)
    assert 2**32 - 1 <= grid.size <= 2**33 + 1
    assert grid.first * grid.spacing >= lower
    assert (grid.first + grid.size - 1) * grid.spacing <= upper
    ends = grid.values(np.array([0, grid.size - 1]))
    assert lower <= ends[0] <= ends[1] <= upper


def test_grid_rejects_bounds_it_cannot_represent() -> None:
    with pytest.raises(InputError, match="too far apart"):
        ExponentialQuantile(0.5, -1e308, 1e308, 1.0)
    with pytest.raises(InputError, match="too close"):
        ExponentialQuantile(0.5, 0.0, 1e-300, 1.0)


def test_rounding_is_to_the_nearest_grid_point_and_clips() -> None:
    grid = _QuantileGrid.build(0.0, 1.0, 4, "test")  # spacing 1/16, points 0..16
    x = np.array([-5.0, 0.0, 0.03, 0.04, 0.5, 0.99, 1.0, 7.0])
    assert grid.offsets(x).tolist() == [0, 0, 0, 1, 8, 16, 16, 16]


# ----------------------------------------------------------------------------------------
# Outputs: grid multiples within the bounds, on any data
# ----------------------------------------------------------------------------------------


@given(
    bound_pairs,
    st.lists(st.floats(-1e13, 1e13, allow_nan=False, allow_infinity=False), max_size=30),
    st.floats(0.05, 0.95),
)
@settings(max_examples=40)
def test_outputs_are_grid_multiples_within_the_bounds(
    bounds: tuple[float, float], x: list[float], p: float
) -> None:
    lower, upper = bounds
    if not lower < upper:
        return
    rng = SeededRandom(11)
    single = ExponentialQuantile(p, lower, upper, 1.0).release(x, rng)
    assert lower <= single.value <= upper
    assert (single.value / single.grid).is_integer()


def test_empty_data_is_uniform_over_the_grid() -> None:
    rng = SeededRandom(3)
    assert 0.0 <= exponential_quantile([], 0.5, lower=0.0, upper=1.0, epsilon=1.0, rng=rng) <= 1
    size = 9  # bits = 3 on [0, 1]
    samples = _sample_single(rng, np.empty(0, dtype=np.int64), size, 0.5, 1.0, 20_000)
    assert chisquare_pvalue(samples, np.full(size, -math.log(size))) > ALPHA


def test_a_million_records_run() -> None:
    # speed is measured in benchmarks/, not asserted here (DESIGN.md)
    x = np.random.default_rng(0).normal(size=1_000_000)
    value = exponential_quantile(x, 0.5, lower=-10, upper=10, epsilon=1.0, rng=SeededRandom(1))
    assert abs(value - np.quantile(x, 0.5)) < 0.01


# ----------------------------------------------------------------------------------------
# Exactness of the sampling distributions
# ----------------------------------------------------------------------------------------


def test_single_quantile_sampler_matches_the_exact_pmf() -> None:
    lower, upper, bits, p, eps = 0.0, 1.0, 5, 0.5, 1.0
    x = [0.2, 0.21, 0.7]
    _, values = grid_values(lower, upper, bits)
    samples = _sample_single(
        SeededRandom(20), sorted_offsets(x, lower, upper, bits), values.size, p, eps, DRAWS
    )
    assert chisquare_pvalue(samples, single_log_pmf(x, p, eps, values, 0.5)) > ALPHA
    wrong = single_log_pmf(x, p, 1.3 * eps, values, 0.5)
    assert chisquare_pvalue(samples, wrong) < ALPHA


def test_certified_path_alone_gives_the_same_distribution() -> None:
    """Every acceptance decided by interval arithmetic (the fallback), no float shortcut."""
    lower, upper, bits, p, eps = 0.0, 1.0, 3, 0.5, 1.0
    x = [0.2, 0.21, 0.7]
    _, values = grid_values(lower, upper, bits)
    samples = _sample_single(
        SeededRandom(22),
        sorted_offsets(x, lower, upper, bits),
        values.size,
        p,
        eps,
        20_000,
        _exact=True,
    )
    assert chisquare_pvalue(samples, single_log_pmf(x, p, eps, values, 0.5)) > ALPHA
    assert chisquare_pvalue(samples, single_log_pmf(x, p, 1.3 * eps, values, 0.5)) < ALPHA


def test_far_intervals_have_certified_positive_probability() -> None:
    """2000 records, eps = 2: interval 0 is e^-1000 times less likely than the median's.

    With floating-point Gumbel-max it had probability exactly 0 (a log-weight gap above 40
    is never bridged), which broke pure epsilon-DP; now its probability is bounded below by
    a positive certified rational.
    """
    n, eps = 2000, 2.0
    z = np.arange(1, n + 1, dtype=np.int64) * 3
    _, counts = _interval_edges(z, 3 * n + 5)
    choice = _single_choice(counts, 0.5, eps)
    for i in (0, 1, 30, n):
        bound = choice.probability_lower_bound(i)
        assert bound > 0
        if i == 30:
            assert float(bound) == pytest.approx(choice.pmf()[i], rel=1e-6)
    assert choice.pmf()[0] == 0.0  # in float64 it underflows: the bound is what certifies


def test_single_interval_weights_equal_the_brute_force_pmf() -> None:
    rs = np.random.default_rng(5)
    for _ in range(50):
        bits = int(rs.integers(2, 6))
        _, values = grid_values(0.0, 1.0, bits)
        x = rs.uniform(-0.2, 1.2, size=int(rs.integers(0, 8))).tolist()
        p, eps = float(rs.uniform(0.05, 0.95)), float(rs.uniform(0.1, 4.0))
        z = sorted_offsets(x, 0.0, 1.0, bits)
        edges = np.concatenate(([0], z, [values.size]))
        counts = np.diff(edges)
        pmf = _single_choice(counts, p, eps).pmf()
        per_point = np.repeat(pmf / np.maximum(counts, 1), counts)
        want = single_log_pmf(x, p, eps, values, 0.5)
        np.testing.assert_allclose(per_point, np.exp(want), rtol=1e-9, atol=1e-300)


# ----------------------------------------------------------------------------------------
# Privacy: brute-force log-ratios on all neighbours
# ----------------------------------------------------------------------------------------

UNIVERSE = [-0.5, 0.0, 0.3, 0.5, 0.9, 1.0, 1.7]
DATASETS = [[], [0.3], [0.3, 0.5, 0.9], [0.0, 0.0, 1.0], [0.5, 0.5, 0.5], [0.0, 0.3, 0.3, 1.7]]


def neighbours(x: list[float], relation: str = "both") -> list[list[float]]:
    """Add-remove and/or substitute neighbours over UNIVERSE."""
    out: list[list[float]] = []
    if relation in ("both", "add-remove"):
        out += [[*x, v] for v in UNIVERSE]
        out += [x[:i] + x[i + 1 :] for i in range(len(x))]
    if relation in ("both", "substitute"):
        out += [[*x[:i], v, *x[i + 1 :]] for i in range(len(x)) for v in UNIVERSE]
    return out


def worst_log_ratio(
    log_pmf: Callable[[list[float], float], NDArray[np.float64]],
    eps: float,
    relation: str = "both",
) -> float:
    worst = 0.0
    for x in DATASETS:
        base = log_pmf(x, eps)
        for y in neighbours(x, relation):
            worst = max(worst, float(np.max(np.abs(base - log_pmf(y, eps)))))
    return worst


def single_model(
    p: float, values: NDArray[np.float64], temperature: float
) -> Callable[[list[float], float], NDArray[np.float64]]:
    def log_pmf(x: list[float], eps: float) -> NDArray[np.float64]:
        return single_log_pmf(x, p, eps, values, temperature)

    return log_pmf


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_single_quantile_privacy_loss_is_at_most_epsilon(eps: float) -> None:
    _, values = grid_values(0.0, 1.0, 4)
    for p in (0.25, 0.5, 0.9):
        model = single_model(p, values, 0.5)
        worst = worst_log_ratio(model, eps)
        assert 0.4 * eps < worst <= eps + 1e-9  # the bound is checked, and nearly reached
        # add-remove alone moves each utility by at most max(p, 1 - p)
        add_remove = worst_log_ratio(model, eps, "add-remove")
        assert add_remove <= max(p, 1 - p) * eps + 1e-9
    # half the utility sensitivity (temperature eps instead of eps/2) must break the bound
    too_hot = worst_log_ratio(single_model(0.5, values, 1.0), eps)
    assert too_hot > eps


# ----------------------------------------------------------------------------------------
# Accuracy
# ----------------------------------------------------------------------------------------


def test_accuracy_on_normal_data() -> None:
    x = np.random.default_rng(10).normal(size=10_000)
    lower, upper = -5.0, 5.0
    tolerance = 0.01 * (upper - lower)
    xs = np.sort(x)
    for p in (0.1, 0.5, 0.9):
        truth = xs[max(1, math.ceil(p * x.size)) - 1]
        value = exponential_quantile(
            x, p, lower=lower, upper=upper, epsilon=1.0, rng=SeededRandom(int(p * 100))
        )
        assert abs(value - truth) < tolerance


def test_accuracy_bound_holds_where_the_ln_n_bound_fails() -> None:
    """A wide gap 30 ranks below the median takes almost all the probability."""
    n, below = 10_000, 4_970
    mech = ExponentialQuantile(0.5, 0.0, 1.0, 1.0)  # spacing 2^-32, grid offsets = k
    size = mech.grid_size
    offsets = np.concatenate([np.arange(below), size - (n - below) + np.arange(n - below)])
    x = offsets * mech.grid
    bound = mech.accuracy(n, beta=0.05)
    ln_n_bound = 2.0 / mech.epsilon * (math.log(n + 1) + math.log(1 / 0.05))
    rng = SeededRandom(13)
    errors = []
    for _ in range(20):
        value = mech.release(x, rng).value
        errors.append(abs(int(np.sum(x <= value)) - 0.5 * n))  # best achievable error is 0
    assert max(errors) <= bound
    assert sum(e > ln_n_bound for e in errors) >= 15


def test_accuracy_formula() -> None:
    mech = ExponentialQuantile(0.3, 0.0, 1.0, 2.0)
    expected = (math.log(mech.grid_size) + math.log(20.0)) / 1.0
    assert mech.accuracy(10**6, beta=0.05) == pytest.approx(expected)
    assert mech.accuracy(10) == pytest.approx(7.0)  # capped at max(p, 1 - p) n
    assert mech.accuracy(0) == 0.0
    assert mech.accuracy(10**6, beta=0.01) > mech.accuracy(10**6, beta=0.1)


# ----------------------------------------------------------------------------------------
# Randomness and results
# ----------------------------------------------------------------------------------------


def test_seeded_randomness_warns_and_is_marked() -> None:
    with pytest.warns(SeededRandomnessWarning):
        exponential_quantile([0.5], 0.5, lower=0.0, upper=1.0, epsilon=1.0, rng=5)
    with pytest.warns(SeededRandomnessWarning):
        result = ExponentialQuantile(0.5, 0.0, 1.0, 1.0).release([0.5], rng=5)
    assert result.seeded
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        secure = ExponentialQuantile(0.5, 0.0, 1.0, 1.0).release([0.5])
    assert not secure.seeded


def test_results_are_frozen_and_reproducible() -> None:
    x = [0.1, 0.4, 0.45, 0.9]
    mech = ExponentialQuantile(0.5, 0.0, 1.0, 1.0)
    a, b = mech.release(x, SeededRandom(4)), mech.release(x, SeededRandom(4))
    assert isinstance(a, QuantileResult)
    assert a == b
    assert a.mechanism == "exponential-quantile"
    assert a.epsilon == 1.0
    assert a.grid == 2.0**-32
    offset = _sample_single(
        SeededRandom(4), sorted_offsets(x, 0.0, 1.0, 32), mech.grid_size, 0.5, 1.0, 1
    )
    assert a.value == float(offset[0]) * 2.0**-32
    with pytest.raises(AttributeError):
        a.value = 0.0  # type: ignore[misc]


# ----------------------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"p": 0.0}, "'p' parameter"),
        ({"p": 1.0}, "'p' parameter"),
        ({"p": True}, "'p' parameter"),
        ({"epsilon": 0.0}, "'epsilon' parameter"),
        ({"epsilon": float("inf")}, "'epsilon' parameter"),
        ({"lower": None}, "'lower' parameter"),
        ({"lower": 2.0}, "lower < upper"),
        ({"upper": float("nan")}, "'upper' parameter"),
        ({"_grid_bits": 0}, "'_grid_bits' parameter"),
        ({"_grid_bits": 60}, "'_grid_bits' parameter"),
    ],
)
def test_single_quantile_validation(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = {"p": 0.5, "lower": 0.0, "upper": 1.0, "epsilon": 1.0}
    args.update(kwargs)
    with pytest.raises(InputError, match=match):
        exponential_quantile([0.5], rng=SeededRandom(0), **args)  # type: ignore[arg-type]


def test_joint_exp_is_withdrawn_with_the_alternative_named() -> None:
    for call in (
        lambda: joint_quantiles([0.5], [0.2, 0.8], lower=0.0, upper=1.0, epsilon=1.0),
        lambda: JointExponentialQuantiles((0.2, 0.8), 0.0, 1.0, 1.0),
    ):
        with pytest.raises(InputError, match="withdrawn") as info:
            call()
        assert "exponential_quantile" in str(info.value)
        assert "epsilon / m" in str(info.value)


@pytest.mark.parametrize(
    "x", [[123456.789, float("nan")], [[123456.789, 1.0]], ["123456.789", "abc"], 123456.789]
)
def test_bad_data_is_refused_without_echoing_values(x: object) -> None:
    with pytest.raises(InputError) as info:
        exponential_quantile(x, 0.5, lower=0.0, upper=1.0, epsilon=1.0)
    assert "123456" not in str(info.value)
