"""Intervals on releases (docs/intervals.md): coverage over many draws, the exact privacy
of the quantile endpoints on neighbouring data, and the bounds they are built from."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from scipy import stats

import dpsense as ds
from dpsense.defaults import INTERVAL_SHARE
from dpsense.mechanisms.quantile import quantile_score
from dpsense.methods.quantile_interval import (
    INTERVAL_STEPS,
    endpoint_grid,
    endpoint_scores,
    interval_shift,
    pair_count,
)

DATA = np.random.default_rng(11).lognormal(2.0, 0.6, 1500)
LOWER, UPPER = 0.0, 64.0
CLIPPED = np.clip(DATA, LOWER, UPPER)


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        yield


def _truth(statistic: ds.Statistic, x: np.ndarray) -> float:
    if isinstance(statistic, ds.Count):
        return float(x.size)
    return float(statistic(np.clip(x, LOWER, UPPER)))


CASES = [
    ("count", ds.Count(), {}),
    ("sum", ds.Sum(LOWER, UPPER), {}),
    ("mean-ksw", ds.Mean(LOWER, UPPER), {"method": "ksw"}),
    ("mean-global", ds.Mean(LOWER, UPPER), {"method": "global"}),
    ("variance-global", ds.Variance(LOWER, UPPER), {"method": "global"}),
    ("median-exponential", ds.Median(LOWER, UPPER), {"method": "exponential"}),
    ("p90-exponential", ds.Quantile(0.9, LOWER, UPPER), {"method": "exponential"}),
    ("median-smooth-t", ds.Median(LOWER, UPPER), {"method": "smooth"}),
    ("variance-smooth-laplace", ds.Variance(LOWER, UPPER), {"method": "smooth", "delta": 1e-6}),
    ("std-smooth-cauchy", ds.Std(LOWER, UPPER), {"method": "smooth", "noise": "cauchy"}),
    ("mean-ptr", ds.Mean(LOWER, UPPER), {"method": "ptr", "bound": 1.0, "delta": 1e-6}),
    ("mean-bounded-ls", ds.Mean(LOWER, UPPER), {"method": "bounded-ls", "delta": 1e-6}),
    (
        "mean-bounded-ls-substitute",
        ds.Mean(LOWER, UPPER),
        {"method": "bounded-ls", "delta": 1e-6, "neighbours": "substitute"},
    ),
    ("median-adaptive", ds.Median(LOWER, UPPER), {"method": "adaptive"}),
    ("quantile-resolution", ds.Quantile(0.3, LOWER, UPPER, resolution=0.25), {}),
]


def _coverage(statistic: ds.Statistic, options: dict[str, Any], draws: int, x: Any) -> float:
    truth = _truth(statistic, x)
    hits = 0
    answered = 0
    for seed in range(draws):
        rel = ds.release(x, statistic, epsilon=0.5, rng=seed, **options)
        interval = rel.interval()
        if rel.refused:
            assert interval is None
            continue
        assert interval is not None, rel.method
        low, high = interval
        assert low <= high
        answered += 1
        hits += low <= truth <= high
    assert answered > draws // 2
    return hits / answered


@pytest.mark.parametrize(("name", "statistic", "options"), CASES, ids=[c[0] for c in CASES])
def test_every_method_covers_the_value_in_most_draws(
    name: str, statistic: ds.Statistic, options: dict[str, Any]
) -> None:
    """60 draws each: at least 52 cover (a 95% interval covers fewer than 52 of 60 with
    probability below 0.3%); a halved interval of the noise-law kinds misses about a
    fifth."""
    assert _coverage(statistic, options, 60, DATA) >= 52 / 60


@pytest.mark.slow
@pytest.mark.parametrize(("name", "statistic", "options"), CASES, ids=[c[0] for c in CASES])
def test_coverage_audit(name: str, statistic: ds.Statistic, options: dict[str, Any]) -> None:
    """1,000 draws on a small and a skewed table: the coverage is not significantly
    below 95% (one-sided binomial test at level 1e-4)."""
    small = np.random.default_rng(5).pareto(1.5, 120) * 4
    for x in (DATA[:400], small):
        rate = _coverage(statistic, options, 1000, x)
        p_value = stats.binomtest(round(rate * 1000), 1000, 0.95, alternative="less").pvalue
        assert p_value > 1e-4, (name, rate)


def test_count_interval_is_the_exact_discrete_laplace_half_width() -> None:
    """At epsilon 0.2 the count's noise is discrete Laplace of scale 5: P(|Z| > 15) =
    2 e^{-16/5} / (1 + e^{-1/5}) = 0.0449 <= 0.05 < P(|Z| > 14), so the interval is
    value ± 15."""
    rel = ds.release(DATA, ds.Count(), epsilon=0.2, rng=1)
    low, high = rel.interval()
    assert (rel.value - low, high - rel.value) == (15.0, 15.0)
    assert rel.interval(0.5) is not None
    assert rel.interval(0.5)[1] - rel.interval(0.5)[0] < 30.0


def test_the_shift_is_the_smallest_that_bounds_the_tail() -> None:
    """s is the least integer with P e^{-eta s} <= alpha over the P = G (G + 1) / 2 pairs
    of the joint draw (eta per row): the construction's coverage rests on it
    (docs/intervals.md §3)."""
    pairs = (INTERVAL_STEPS + 1) * (INTERVAL_STEPS + 2) // 2
    assert pair_count() == pairs
    for p, eps in ((0.5, 0.1), (0.9, 0.04), (0.25, 1.0)):
        s = interval_shift(p, eps, "add-remove", 0.05)
        score = quantile_score(p, eps, "add-remove", "test")
        per_row = score.eta * score.den
        tail = pairs * math.exp(-per_row * s)
        assert tail <= 0.05 * (1 + 1e-9)
        assert pairs * math.exp(-per_row * (s - 1)) > 0.05


@pytest.mark.parametrize("neighbours", ["add-remove", "substitute"])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_the_pair_is_epsilon_dp_on_neighbouring_data(neighbours: str, p: float) -> None:
    """The exact output distribution of the pair (P(j, k) ∝ exp(-eta max(u_lo(j),
    u_hi(k))), j <= k, over the padded scores) changes by at most e^epsilon when a record is
    added, removed or replaced: brute force over random small tables and every neighbour."""
    rng = np.random.default_rng(3)
    eps = 0.7
    grid = endpoint_grid(0.0, 10.0)
    score = quantile_score(p, eps, neighbours, "test")  # type: ignore[arg-type]
    shift = interval_shift(p, eps, neighbours, 0.05)  # type: ignore[arg-type]
    pad_low = -(-shift * score.den // (score.den - score.num))
    pad_high = -(-shift * score.den // score.num)
    j, k = np.triu_indices(grid.size)

    def log_pmf(x: np.ndarray) -> np.ndarray:
        below = np.searchsorted(np.sort(x), grid, side="left").astype(np.int64)
        lo = np.array(endpoint_scores(below, x.size, pad_low, 0, score), dtype=float)
        hi = np.array(endpoint_scores(below, x.size, 0, pad_high, score), dtype=float)
        z = -score.eta * np.maximum(lo[j], hi[k])
        return z - (z.max() + np.log(np.exp(z - z.max()).sum()))

    worst = 0.0
    for _ in range(40):
        x = np.round(rng.uniform(0, 10, rng.integers(1, 12)), 1)
        if neighbours == "add-remove":
            others = [np.append(x, rng.uniform(0, 10))] + [np.delete(x, i) for i in range(x.size)]
        else:
            others = [
                np.concatenate([np.delete(x, i), [rng.uniform(0, 10)]]) for i in range(x.size)
            ]
        base = log_pmf(x)
        for y in others:
            worst = max(worst, float(np.max(np.abs(base - log_pmf(y)))))
    assert worst <= eps + 1e-9
    assert worst > 0.5 * eps  # the bound is nearly reached: the test can see a leak


def test_a_quantile_interval_is_informative_on_a_large_group() -> None:
    """On 20,000 records at epsilon 1 the median's interval is a few percent wide and not
    flagged; on 50 records at epsilon 0.1 it spans the bounds and is flagged."""
    big = np.random.default_rng(2).lognormal(2.0, 0.6, 20_000)
    rel = ds.release(big, ds.Median(LOWER, UPPER), epsilon=1.0, rng=4)
    low, high = rel.interval()
    assert high - low < 0.1 * np.median(big) + 2 * UPPER / INTERVAL_STEPS
    assert not rel.unreliable()
    tiny = ds.release(big[:50], ds.Median(LOWER, UPPER), epsilon=0.1, rng=4)
    assert tiny.unreliable()
    spec = tiny.parameters["interval"]
    assert spec["share"] == INTERVAL_SHARE == 0.15
    assert spec["alpha"] == 0.05
    assert tiny.interval(0.01) is None  # released for alpha = 0.05 only
    assert tiny.interval(0.1) == tiny.interval(0.05)


def test_no_interval_where_none_is_built() -> None:
    refused = ds.release(
        DATA[:30], ds.Median(LOWER, UPPER), epsilon=0.1, delta=1e-6, method="ptr", bound=1e-9, rng=1
    )
    assert refused.refused
    assert refused.interval() is None
    assert not refused.unreliable()
    blocks = ds.sample_and_aggregate(
        DATA, np.median, blocks=10, lower=LOWER, upper=UPPER, epsilon=1.0, rng=1
    )
    assert blocks.interval() is None
    lln = ds.release(
        DATA, ds.Median(LOWER, UPPER), epsilon=1.0, delta=1e-6, method="smooth", noise="lln", rng=1
    )
    assert lln.interval() is None


def test_intervals_reach_every_table_of_results() -> None:
    frame = {"g": np.repeat(["a", "b"], 750), "v": DATA}
    grouped = ds.release(
        frame, ds.Median(LOWER, UPPER), column="v", by="g", keys=["a", "b"], epsilon=1.0, rng=2
    )
    for row in grouped.to_dicts():
        assert row["low"] <= row["value"] <= row["high"]
        assert isinstance(row["unreliable"], bool)
    query = ds.release(
        frame,
        {"n": ds.Count(), "m": ("v", ds.Mean(LOWER, UPPER))},
        by="g",
        keys=["a", "b"],
        epsilon=1.0,
        rng=2,
    )
    for row in query.to_dicts():
        for name in ("n", "m"):
            assert row[f"{name}_low"] <= row[name] <= row[f"{name}_high"]
    assert {"m_low", "m_high", "m_unreliable"} <= set(query.to_pandas().columns)


@pytest.mark.parametrize("noisy_count", [3, 40, 400])
@pytest.mark.parametrize("noisy_sum", [-900.0, 0.0, 350.0])
def test_the_ratio_interval_holds_every_mean_of_the_noise_box(
    noisy_sum: float, noisy_count: int
) -> None:
    """Brute force of docs/intervals.md §2: every centred sum S and count n >= 1 within
    their noise half-widths at alpha/2 of the released parts gives a mean c + S/n inside
    the interval (clipped to the bounds)."""
    from dpsense.mechanisms.accuracy import discrete_laplace_halfwidth, grid_halfwidth
    from dpsense.methods.intervals import ratio_interval, ratio_parts

    spec = ratio_parts(
        noisy_sum=noisy_sum, sum_scale=64.0, sum_grid=2.0**-10, noisy_count=noisy_count,
        count_scale=4.0, centre=32.0, value_error=0.0, span=(0.0, 64.0),
    )  # fmt: skip
    low, high = ratio_interval(spec, 0.05)
    a_s = grid_halfwidth("laplace", 64.0, 2.0**-10, 0.0, 0.025)
    a_n = discrete_laplace_halfwidth(4.0, 0.025)
    for s in np.linspace(noisy_sum - a_s, noisy_sum + a_s, 41):
        for n in range(max(1, noisy_count - a_n), noisy_count + a_n + 1):
            mean = min(max(32.0 + s / n, 0.0), 64.0)
            assert low <= mean <= high


def test_the_mean_interval_covers_where_the_count_noise_matters() -> None:
    """Few records near the upper bound: the centred sum is large, so the noisy count moves
    the quotient as much as the noisy sum does, and an interval that ignored it would cover
    too rarely (400 draws: at least 370 cover, a 95% interval misses that with probability
    below 1e-3)."""
    x = np.full(40, 60.0) + np.random.default_rng(8).uniform(-2, 2, 40)
    stat = ds.Mean(LOWER, UPPER)
    assert _coverage(stat, {"method": "global"}, 400, x) >= 370 / 400


def test_several_quantiles_have_an_interval_per_level() -> None:
    """Recursive halving for the values, two endpoints per level (a fifth of the budget
    over all of them): each level's interval covers its quantile in at least 112 of 120
    draws, and a declared resolution rounds the ends outward onto its grid."""
    ps = [0.1, 0.5, 0.9]
    truth = np.array([np.sort(DATA)[max(1, math.ceil(p * DATA.size)) - 1] for p in ps])
    hits = np.zeros(len(ps))
    for seed in range(120):
        rel = ds.release(DATA, ds.Quantiles(ps, LOWER, UPPER), epsilon=1.0, rng=seed)
        low, high = rel.interval()
        assert np.all(low <= rel.value)
        assert np.all(rel.value <= high)
        hits += (low <= truth) & (truth <= high)
    assert np.all(hits >= 112)
    on_grid = ds.release(DATA, ds.Quantiles([0.25, 0.75], LOWER, UPPER, resolution=0.5),
                         epsilon=1.0, rng=2)  # fmt: skip
    low, high = on_grid.interval()
    assert np.all(np.mod(np.concatenate([low, high]), 0.5) == 0)
    frame = {"v": DATA}
    row = ds.release(frame, {"q": ("v", ds.Quantiles(ps, LOWER, UPPER))}, epsilon=1.0,
                     rng=3).to_dicts()[0]  # fmt: skip
    assert len(row["q_low"]) == len(row["q_high"]) == 3


@pytest.mark.slow
def test_ratio_and_several_quantiles_coverage_audit() -> None:
    """1,000 draws each: the KSW ratio's interval and each level of several quantiles'."""
    hits = sum(
        lo <= 0.3 <= hi
        for lo, hi in (
            ds.private_ratio(30, 100, epsilon=0.5, rng=s).interval() for s in range(1000)
        )
    )
    assert stats.binomtest(hits, 1000, 0.95, alternative="less").pvalue > 1e-4
    ps = [0.2, 0.8]
    x = DATA[:400]
    truth = np.array([np.sort(x)[max(1, math.ceil(p * x.size)) - 1] for p in ps])
    covered = np.zeros(2)
    for seed in range(1000):
        low, high = ds.release(x, ds.Quantiles(ps, LOWER, UPPER), epsilon=1.0, rng=seed).interval()
        covered += (low <= truth) & (truth <= high)
    for level in covered:
        assert stats.binomtest(int(level), 1000, 0.95, alternative="less").pvalue > 1e-4


@pytest.mark.parametrize("spread", [False, True])
def test_a_smooth_interval_never_raises_on_extreme_scales(spread: bool) -> None:
    """Bounds near the largest double (a scale beyond every double when the data spread
    out) and bounds near the smallest (a scale below every double at a huge epsilon): the
    noisy log-scale is taken of the exact rational, so neither raises, whatever the data
    (an exception after the charge would tell the data apart)."""
    huge = np.r_[np.full(2500, -2e307), np.full(2500, 2e307)] if spread else np.zeros(5000)
    rel = ds.release(huge, ds.Median(-2e307, 2e307), epsilon=0.2, delta=1e-6, method="smooth",
                     rng=1)  # fmt: skip
    low, high = rel.interval()
    assert -2e307 <= low <= rel.value <= high <= 2e307
    tiny = np.r_[np.zeros(25), np.full(25, 1e-250)] if spread else np.zeros(50)
    rel = ds.release(tiny, ds.Median(0, 1e-250), epsilon=1e60, delta=1e-6, method="smooth",
                     rng=1)  # fmt: skip
    assert rel.interval() is not None


@pytest.mark.parametrize("n", [100, 3000])
def test_huge_padding_never_overflows(n: int) -> None:
    """A level near 1 at a tiny epsilon pads with about 10^13 records: the endpoints' scores
    are Python integers, so no size of the data makes them overflow (the interval is then
    the bounds)."""
    x = np.random.default_rng(0).uniform(0, 1, n)
    rel = ds.release(x, ds.Quantile(0.999999, 0, 1), epsilon=1e-7, method="exponential", rng=1)
    assert rel.interval() == (0.0, 1.0)


def test_a_smooth_release_refused_by_its_value_plan_is_refused_before_the_charge() -> None:
    """The value is planned at three quarters of epsilon: an epsilon too small for that
    plan is refused by the checks that run before anything is charged."""
    acct = ds.Accountant(epsilon=1.0)
    with pytest.raises(ds.InputError, match="too small"):
        acct.release(DATA, ds.Median(LOWER, UPPER), epsilon=8e-9, method="smooth", rng=1)
    assert acct.spent == (0.0, 0.0)


@pytest.mark.parametrize("p", [0.5, 0.9])
def test_the_endpoints_have_exactly_the_law_of_their_joint_draw(p: float) -> None:
    """The pair is one exponential-mechanism draw over the public grid's pairs, and nothing
    else: L is the grid point of j, H the grid point after k, with P(j, k) ∝ exp(-eta
    max(u_lo(j), u_hi(k))), j <= k, over the padded scores, computed here by brute force
    from the definition (each record at its cell, public records at a bound). 4,000
    intervals of one small table, compared with that law by a chi-square test over the
    pairs; an endpoint that is not a grid point (say, tightened to the data's own order
    statistics) fails at once."""
    from dpsense.methods.quantile_interval import quantile_endpoints
    from dpsense.noise.rng import resolve_rng

    lower, upper, eps = 0.0, 100.0, 0.8
    x = np.random.default_rng(5).uniform(30.0, 70.0, 40)
    grid = endpoint_grid(lower, upper)
    score = quantile_score(p, eps, "add-remove", "test")
    shift = interval_shift(p, eps, "add-remove", 0.05)
    pad_low = -(-shift * score.den // (score.den - score.num))
    pad_high = -(-shift * score.den // score.num)
    cells = grid[np.searchsorted(grid, x, side="right") - 1]  # each record at its cell

    def scores(pad: tuple[int, int]) -> np.ndarray:
        padded = np.concatenate([cells, np.full(pad[0], lower), np.full(pad[1], upper)])
        total = padded.size
        return np.array(
            [
                max(
                    0,
                    score.den * int(np.sum(padded < c)) - score.num * total,
                    score.den * int(np.sum(padded > c)) - (score.den - score.num) * total,
                )
                for c in grid
            ],
            dtype=float,
        )

    u_lo, u_hi = scores((pad_low, 0)), scores((0, pad_high))
    size = grid.size
    law = np.zeros((size, size))  # over (index of L, index of H)
    for j in range(size):
        for k in range(j, size):
            law[j, min(k + 1, INTERVAL_STEPS)] += math.exp(
                -float(score.eta) * max(u_lo[j], u_hi[k])
            )
    law /= law.sum()

    rng = resolve_rng(7)
    draws = 4000
    index = {float(c): j for j, c in enumerate(grid)}
    observed = np.zeros((size, size))
    for _ in range(draws):
        low, high, _ = quantile_endpoints(x, p, lower, upper, eps, "add-remove", 0.05, rng)
        assert low in index, "a lower endpoint is not a grid point"
        assert high in index, "an upper endpoint is not a grid point"
        observed[index[low], index[high]] += 1
    expected = law.reshape(-1) * draws
    got = observed.reshape(-1)
    keep = expected >= 5
    obs = np.append(got[keep], got[~keep].sum())
    exp_ = np.append(expected[keep], expected[~keep].sum())
    if exp_[-1] < 5:  # merge the rare cells into the largest kept one
        obs[np.argmax(exp_[:-1])] += obs[-1]
        exp_[np.argmax(exp_[:-1])] += exp_[-1]
        obs, exp_ = obs[:-1], exp_[:-1]
    assert obs.sum() == draws
    result = stats.chisquare(obs, exp_ * draws / exp_.sum())
    assert result.pvalue > 1e-4, (p, result)


def test_endpoint_scores_in_int64_equal_the_python_integers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The numpy path (``den * N < 2^62``) gives the integers of the Python loop, which
    serves larger paddings; both paths are compared on the same inputs."""
    from dpsense.methods import quantile_interval as qi

    rng = np.random.default_rng(3)
    cases = []
    for n in [0, 1, 7, 1000, 10**6, 10**9, 10**12]:
        below = np.sort(rng.integers(0, n + 1, qi.INTERVAL_STEPS + 1)).astype(np.int64)
        for p in [0.5, 0.9, 1e-6, 0.333333]:
            for nb in ["add-remove", "substitute"]:
                score = quantile_score(p, 1.0, nb, "test")
                for pads in [(0, 0), (5, 0), (0, 12), (10**9, 10**11)]:
                    cases.append((below, n, *pads, score))
    fast = [qi.endpoint_scores(*c) for c in cases]
    monkeypatch.setattr(qi, "_EXACT_INT64", 0)  # the Python loop for every case
    slow = [qi.endpoint_scores(*c) for c in cases]
    assert fast == slow
    assert all(type(v) is int for row in fast for v in row)
