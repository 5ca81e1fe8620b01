"""Quantile mechanisms (docs/quantile_mechanisms.md): exactness, support and privacy.

* The sampling distribution is checked against the pmf computed by brute force from the
  definition (every grid value, tie-aware score): chi-square at alpha = 0.001 accepts the
  true pmf and rejects one with a 30% wrong epsilon, on the full-sort path, the window path,
  the window path with a tiny window (the tail's rejection step runs often), the certified
  path alone, and on a declared resolution grid.
* Support: a block e^-1000 times less likely than the best has a certified positive
  probability.
* Privacy: on every neighbour (add, remove, substitute) of small datasets the log-ratio of
  the brute-force pmfs never exceeds epsilon under the relation the mechanism is built
  for, which checks the sensitivity claims (max(p, 1 - p) under add-remove, 1 under
  substitute); a mechanism with half the sensitivity fails the same check.
* JointExp is withdrawn and says what to use instead.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy import stats
from scipy.special import logsumexp

from dpsense.errors import InputError
from dpsense.mechanisms._quantile_sampler import (
    _full_blocks,
    sample_quantile_indices,
)
from dpsense.mechanisms.quantile import (
    ExponentialQuantile,
    JointExponentialQuantiles,
    QuantileResult,
    exponential_quantile,
    joint_quantiles,
    quantile_score,
)
from dpsense.noise.choice import ExponentialChoice
from dpsense.noise.rng import SeededRandom, SeededRandomnessWarning
from dpsense.statistics._grid import CandidateGrid, PowerOfTwoGrid, ResolutionGrid

ALPHA = 0.001
DRAWS = 200_000


# ----------------------------------------------------------------------------------------
# Brute force from the definitions
# ----------------------------------------------------------------------------------------


def grid_values(lower: float, upper: float, bits: int) -> NDArray[np.float64]:
    """The multiples of gamma = 2^(floor(log2(upper - lower)) - bits) in [lower, upper]."""
    spacing = 2.0 ** (math.floor(math.log2(upper - lower)) - bits)
    ks = np.arange(math.ceil(lower / spacing), math.floor(upper / spacing) + 1)
    return np.asarray(ks * spacing, dtype=np.float64)


def log_pmf(
    x: list[float],
    p: float,
    epsilon: float,
    values: NDArray[np.float64],
    neighbours: str = "add-remove",
    sensitivity_factor: float = 1.0,
) -> NDArray[np.float64]:
    """log P(v) ∝ -eps u(v) / (2 Delta), u(v) = max(0, #{x < v} - pn, #{x > v} - (1-p)n)
    (the tie-aware score), in exact rationals for the score; Delta = max(p, 1-p)
    (add-remove) or 1 (substitute)."""
    q = Fraction(p).limit_denominator(1_000_000)
    xs = np.clip(np.asarray(x, dtype=float), values[0], values[-1])
    n = xs.shape[0]
    u = np.array(
        [
            float(max(Fraction(0), int(np.sum(xs < v)) - q * n, int(np.sum(xs > v)) - (1 - q) * n))
            for v in values
        ]
    )
    delta = float(max(q, 1 - q)) if neighbours == "add-remove" else 1.0
    log_w = -epsilon * u / (2 * delta * sensitivity_factor)
    return np.asarray(log_w - logsumexp(log_w))


def chisquare_pvalue(samples: NDArray[np.int64], log_p: NDArray[np.float64]) -> float:
    """Chi-square goodness of fit; cells with expected count below 5 are pooled."""
    observed = np.bincount(samples, minlength=log_p.size).astype(float)
    expected = np.exp(log_p) * samples.size
    small = expected < 5
    if small.any():
        observed = np.append(observed[~small], observed[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    expected *= observed.sum() / expected.sum()
    return float(stats.chisquare(observed, expected).pvalue)


def draw(
    x: list[float],
    p: float,
    eps: float,
    grid: CandidateGrid,
    count: int,
    seed: int,
    neighbours: str = "add-remove",
    **private: object,
) -> NDArray[np.int64]:
    score = quantile_score(p, eps, neighbours, "test")  # type: ignore[arg-type]
    xc = np.clip(np.asarray(x, dtype=float), grid.lower, grid.upper)
    return sample_quantile_indices(SeededRandom(seed), xc, grid, score, count, **private)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------
# The grids
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
    grid = PowerOfTwoGrid.build(lower, upper, "test")
    mantissa, _ = math.frexp(grid.spacing)
    assert mantissa == 0.5  # a power of two
    assert grid.spacing >= 2.0 ** (math.floor(math.log2(upper - lower)) - 32)
    assert grid.size <= 2**33 + 1
    assert grid.first * grid.spacing >= lower
    assert (grid.first + grid.size - 1) * grid.spacing <= upper
    assert grid.first + grid.size - 1 < 2**53  # every grid value is an exact double
    ends = grid.values(np.array([0, grid.size - 1]))
    assert lower <= ends[0] <= ends[1] <= upper


def test_grid_rejects_bounds_it_cannot_represent() -> None:
    with pytest.raises(InputError, match="too far apart"):
        ExponentialQuantile(0.5, -1e308, 1e308, 1.0)
    with pytest.raises(InputError, match="too close"):
        ExponentialQuantile(0.5, 0.0, 1e-300, 1.0)
    with pytest.raises(InputError, match="too fine"):
        ExponentialQuantile(0.5, 0.0, 1e6, 1.0, resolution=1e-12)
    with pytest.raises(InputError, match="resolution"):
        ExponentialQuantile(0.5, 0.0, 1.0, 1.0, resolution=0.0)


def brute_counts(
    grid: CandidateGrid, x: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    values = grid.values(np.arange(grid.size))
    below = np.array([int(np.sum(values < v)) for v in x])
    at_most = np.array([int(np.sum(values <= v)) for v in x])
    return below, at_most


@pytest.mark.parametrize(
    "grid",
    [
        PowerOfTwoGrid.build(0.0, 1.0, "test", 4),
        PowerOfTwoGrid.build(-3.3, 2.9, "test", 5),
        PowerOfTwoGrid.build(-1e-300, 1e-300, "test", 3),
        PowerOfTwoGrid.build(-2.0, 1e6, "test", 6),
        ResolutionGrid.build(0.0, 10.0, 1.0, "test"),
        ResolutionGrid.build(-1.0, 1.05, 0.1, "test"),
        ResolutionGrid.build(0.5, 7.25, 0.75, "test"),
        ResolutionGrid.build(1e15, 1e15 + 40.0, 0.5, "test"),
    ],
)
def test_grid_counts_equal_brute_force(grid: CandidateGrid) -> None:
    values = grid.values(np.arange(grid.size))
    assert np.all(np.diff(values) >= 0)
    assert grid.lower <= values[0]
    assert values[-1] <= grid.upper
    rs = np.random.default_rng(1)
    x = np.concatenate(
        [
            values,
            np.nextafter(values, np.inf),
            np.nextafter(values, -np.inf),
            rs.uniform(grid.lower - 1, grid.upper + 1, 200),
            [grid.lower, grid.upper, 0.0, -0.0, 5e-324, -5e-324],
        ]
    )
    below, at_most = brute_counts(grid, x)
    np.testing.assert_array_equal(grid.count_below(x), below)
    np.testing.assert_array_equal(grid.count_at_most(x), at_most)
    near = grid.nearest(x)
    assert np.all(np.isin(near, values))
    best = np.min(np.abs(values[None, :] - x[:, None]), axis=1)
    np.testing.assert_array_equal(np.abs(near - x), best)


# ----------------------------------------------------------------------------------------
# Outputs: grid values within the bounds, on any data
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


def test_outputs_on_a_resolution_grid_are_grid_values() -> None:
    mech = ExponentialQuantile(0.5, 0.5, 7.25, 0.3, resolution=0.75)
    values = set(mech._grid.values(np.arange(mech.grid_size)).tolist())
    rng = SeededRandom(2)
    x = np.random.default_rng(2).uniform(0, 8, 50)
    for _ in range(50):
        assert mech.release(x, rng).value in values


def test_empty_data_is_uniform_over_the_grid() -> None:
    rng = SeededRandom(3)
    assert 0.0 <= exponential_quantile([], 0.5, lower=0.0, upper=1.0, epsilon=1.0, rng=rng) <= 1
    grid = PowerOfTwoGrid.build(0.0, 1.0, "test", 3)  # 9 points
    samples = draw([], 0.5, 1.0, grid, 20_000, 3)
    assert chisquare_pvalue(samples, np.full(grid.size, -math.log(grid.size))) > ALPHA
    with pytest.raises(InputError, match="substitute"):
        ExponentialQuantile(0.5, 0.0, 1.0, 1.0, neighbours="substitute").release([])


def test_a_million_records_run() -> None:
    # speed is measured in benchmarks/, not asserted here (DESIGN.md)
    x = np.random.default_rng(0).normal(size=1_000_000)
    value = exponential_quantile(x, 0.5, lower=-10, upper=10, epsilon=1.0, rng=SeededRandom(1))
    assert abs(value - np.quantile(x, 0.5)) < 0.01


def test_tied_integer_data_with_a_resolution_gives_the_exact_median() -> None:
    x = np.random.default_rng(4).permutation(np.repeat([3.0, 5.0, 7.0], [600, 800, 601]))
    truth = 5.0
    mech = ExponentialQuantile(0.5, 0.0, 100.0, 0.5, resolution=1.0)
    rng = SeededRandom(5)
    assert all(mech.release(x, rng).value == truth for _ in range(20))


# ----------------------------------------------------------------------------------------
# Exactness of the sampling distribution
# ----------------------------------------------------------------------------------------

SMALL = PowerOfTwoGrid.build(0.0, 1.0, "test", 5)  # 33 points
CASES = {
    "spread": [0.2, 0.21, 0.7],
    "ties-on-grid": [0.25, 0.25, 0.25, 0.5, 0.8],
    "ties-off-grid": [0.3, 0.3, 0.3, 0.3, 0.61],
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("neighbours", ["add-remove", "substitute"])
def test_full_path_matches_the_exact_pmf(case: str, neighbours: str) -> None:
    x, p, eps = CASES[case], 0.5, 1.0
    values = SMALL.values(np.arange(SMALL.size))
    samples = draw(x, p, eps, SMALL, DRAWS, 20, neighbours, _full=True)
    assert chisquare_pvalue(samples, log_pmf(x, p, eps, values, neighbours)) > ALPHA
    wrong = log_pmf(x, p, 1.3 * eps, values, neighbours)
    assert chisquare_pvalue(samples, wrong) < ALPHA


@pytest.mark.parametrize("window", [None, 1, 3])
def test_window_path_and_its_tail_step_match_the_exact_pmf(window: int | None) -> None:
    """40 records at eps = 6 (the default window is 7 ranks each side, so the window path
    runs); with a forced window of 1 or 3 ranks the tail is chosen often and its rejection
    step decides many draws."""
    rs = np.random.default_rng(6)
    x = np.round(rs.uniform(0.1, 0.9, 40), 2).tolist()
    p, eps = 0.4, 6.0
    values = SMALL.values(np.arange(SMALL.size))
    samples = draw(x, p, eps, SMALL, 100_000, 21, _window=window)
    truth = log_pmf(x, p, eps, values)
    assert chisquare_pvalue(samples, truth) > ALPHA
    assert chisquare_pvalue(samples, log_pmf(x, p, 1.3 * eps, values)) < ALPHA


@pytest.mark.parametrize(
    ("n", "kind", "eps"),
    [(5000, "normal", 0.5), (200_001, "normal", 0.01), (200_001, "integers", 0.002)],
)
def test_window_path_is_taken_and_agrees_with_the_full_path(n: int, kind: str, eps: float) -> None:
    """The default window covers a few thousand ranks, selected by partition (n = 5000) or
    by the sampled bracket (n >= 2^17); both give the full path's distribution
    (two-sample chi-square on the released grid indices)."""
    rs = np.random.default_rng(7)
    x = rs.normal(0.5, 0.1, n) if kind == "normal" else rs.integers(0, 50, n) / 50
    x = np.clip(x, 0.0, 1.0)
    grid = PowerOfTwoGrid.build(0.0, 1.0, "test", 12)
    score = quantile_score(0.5, eps, "add-remove", "test")
    assert 2 * score.window(grid.size) + 2 < x.size
    a = sample_quantile_indices(SeededRandom(8), x.copy(), grid, score, 20_000)
    b = sample_quantile_indices(SeededRandom(9), x.copy(), grid, score, 20_000, _full=True)
    edges = np.unique(np.quantile(np.concatenate([a, b]), np.linspace(0, 1, 21)))
    if edges.size < 3:  # concentrated on one or two grid points: compare their counts
        edges = np.unique(np.concatenate([a, b]))
        edges = np.append(edges, edges[-1] + 1)
    ca, _ = np.histogram(a, bins=edges)
    cb, _ = np.histogram(b, bins=edges)
    assert stats.chi2_contingency(np.vstack([ca, cb]))[1] > ALPHA


def test_certified_path_alone_gives_the_same_distribution() -> None:
    """Every acceptance decided by interval arithmetic (the fallback), no float shortcut."""
    grid = PowerOfTwoGrid.build(0.0, 1.0, "test", 3)
    x, p, eps = [0.2, 0.21, 0.7], 0.5, 1.0
    values = grid.values(np.arange(grid.size))
    samples = draw(x, p, eps, grid, 20_000, 22, _exact=True)
    assert chisquare_pvalue(samples, log_pmf(x, p, eps, values)) > ALPHA
    assert chisquare_pvalue(samples, log_pmf(x, p, 1.3 * eps, values)) < ALPHA


def test_resolution_grid_matches_the_exact_pmf() -> None:
    grid = ResolutionGrid.build(0.0, 12.0, 1.0, "test")
    x = [3.0, 3.0, 4.0, 4.0, 4.0, 5.0, 9.0, 2.0]
    p, eps = 0.3, 0.8
    values = grid.values(np.arange(grid.size))
    samples = draw(x, p, eps, grid, DRAWS, 23)
    assert chisquare_pvalue(samples, log_pmf(x, p, eps, values)) > ALPHA
    assert chisquare_pvalue(samples, log_pmf(x, p, 1.3 * eps, values)) < ALPHA


def test_far_blocks_have_certified_positive_probability() -> None:
    """2000 records, eps = 2: the block below the minimum is e^-1000 times less likely than
    the median's. With floating-point Gumbel-max it had probability exactly 0, which broke
    pure epsilon-DP; here its probability has a positive certified lower bound."""
    n, eps = 2000, 2.0
    grid = PowerOfTwoGrid.build(0.0, 1.0, "test", 20)
    x = (np.arange(1, n + 1) * 3 * grid.spacing + 0.1).astype(float)
    score = quantile_score(0.5, eps, "add-remove", "test")
    blocks = _full_blocks(x.copy(), grid, score)
    choice = ExponentialChoice(blocks.count.astype(float), blocks.score.astype(float), score.eta)
    first = int(np.flatnonzero(blocks.start == 0)[0])  # below the minimum: a = 0, b = n
    assert blocks.count[first] > 0
    assert blocks.score[first] == n
    bound = choice.probability_lower_bound(first)
    assert bound > 0
    assert choice.pmf()[first] == 0.0  # in float64 it underflows: the bound certifies


# ----------------------------------------------------------------------------------------
# Privacy: brute-force log-ratios on all neighbours
# ----------------------------------------------------------------------------------------

UNIVERSE = [-0.5, 0.0, 0.3, 0.5, 0.9, 1.0, 1.7]
DATASETS = [[], [0.3], [0.3, 0.5, 0.9], [0.0, 0.0, 1.0], [0.5, 0.5, 0.5], [0.0, 0.3, 0.3, 1.7]]


def neighbours_of(x: list[float], relation: str) -> list[list[float]]:
    """Add-remove or substitute neighbours over UNIVERSE."""
    if relation == "add-remove":
        return [[*x, v] for v in UNIVERSE] + [x[:i] + x[i + 1 :] for i in range(len(x))]
    return [[*x[:i], v, *x[i + 1 :]] for i in range(len(x)) for v in UNIVERSE]


def worst_log_ratio(model: Callable[[list[float]], NDArray[np.float64]], relation: str) -> float:
    worst = 0.0
    for x in DATASETS:
        if relation == "substitute" and not x:
            continue
        base = model(x)
        for y in neighbours_of(x, relation):
            worst = max(worst, float(np.max(np.abs(base - model(y)))))
    return worst


@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.parametrize("relation", ["add-remove", "substitute"])
def test_privacy_loss_is_at_most_epsilon(eps: float, relation: str) -> None:
    values = grid_values(0.0, 1.0, 4)
    for p in (0.25, 0.5, 0.9):

        def model(x: list[float], p: float = p) -> NDArray[np.float64]:
            return log_pmf(x, p, eps, values, relation)

        worst = worst_log_ratio(model, relation)
        assert 0.4 * eps < worst <= eps + 1e-9  # the bound is checked, and nearly reached

    def too_hot(x: list[float]) -> NDArray[np.float64]:  # half the utility sensitivity
        return log_pmf(x, 0.5, eps, values, relation, sensitivity_factor=0.5)

    assert worst_log_ratio(too_hot, relation) > eps


def test_the_sampler_uses_the_sensitivity_of_its_relation() -> None:
    """The sampler's eta is eps / (2 Delta) for the relation: a sampler that used the
    add-remove score under substitute would be caught by the pmf test (1.3x wrong eps is
    rejected above; here the two relations' multipliers differ by 2x for the median)."""
    ar = quantile_score(0.5, 1.0, "add-remove", "test")
    sub = quantile_score(0.5, 1.0, "substitute", "test")
    assert ar.eta * ar.den == pytest.approx(1.0)  # eps / (2 * 1/2)
    assert sub.eta * sub.den == pytest.approx(0.5)  # eps / (2 * 1)
    assert Fraction(ar.eta) <= Fraction(1, 2)
    assert Fraction(sub.eta) <= Fraction(1, 4)


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
    """A wide gap 15 ranks below the median takes almost all the probability."""
    n, below = 10_000, 4_985
    mech = ExponentialQuantile(0.5, 0.0, 1.0, 1.0)  # spacing 2^-32, grid values k 2^-32
    size = mech.grid_size
    offsets = np.concatenate([np.arange(below), size - (n - below) + np.arange(n - below)])
    x = offsets * mech.grid
    bound = mech.accuracy(n, beta=0.05)
    ln_n_bound = 2 * 0.5 / mech.epsilon * (math.log(n + 1) + math.log(1 / 0.05))
    rng = SeededRandom(13)
    errors = []
    for _ in range(20):
        value = mech.release(x, rng).value
        # the symmetric score; its best achievable value is 0
        errors.append(abs(0.5 * int(np.sum(x < value)) - 0.5 * int(np.sum(x > value))))
    assert max(errors) <= bound
    assert sum(e > ln_n_bound for e in errors) >= 15


def test_accuracy_formula() -> None:
    mech = ExponentialQuantile(0.3, 0.0, 1.0, 2.0)
    expected = 0.7 * (math.log(mech.grid_size) + math.log(20.0))  # 2 Delta / eps = 0.7
    assert mech.accuracy(10**6, beta=0.05) == pytest.approx(expected)
    sub = ExponentialQuantile(0.3, 0.0, 1.0, 2.0, neighbours="substitute")
    assert sub.accuracy(10**6, beta=0.05) == pytest.approx(expected / 0.7)
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
    grid = PowerOfTwoGrid.build(0.0, 1.0, "test")
    index = draw(x, 0.5, 1.0, grid, 1, 4)
    assert a.value == float(index[0]) * 2.0**-32
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
