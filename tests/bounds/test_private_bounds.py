"""Private bounds: the scores' sensitivity by brute force, the exact output distribution
on neighbouring tables against e^epsilon, the sampler against that distribution, the
clipping guarantee (exact and simulated), usefulness at survey sizes, every input path,
and bad input."""

from __future__ import annotations

import json
import math
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import dpsense as ds
from dpsense.bounds import (
    BULK_SHARE,
    BULK_STEPS,
    K_LOW,
    WIDTH_SHARE,
    WIDTH_STEPS,
    bound_scores,
    bounds_eta,
    bounds_grid,
    ordered_pair,
)
from dpsense.cli import main
from dpsense.noise.rng import SeededRandom
from dpsense.tables.grouped import bounded_values

pd = pytest.importorskip("pandas")
GRID = bounds_grid()
T02 = Fraction(1, 50)


def _scores(x: np.ndarray, t: Fraction = T02) -> tuple[np.ndarray, np.ndarray]:
    lows, highs = bound_scores(np.asarray(x, dtype=np.float64), GRID, t, t)
    return np.array(lows, dtype=object), np.array(highs, dtype=object)


def _log_pmf(lows: np.ndarray, highs: np.ndarray, eta: float) -> np.ndarray:
    """log P(i, j) of the pair draw P(i, j) ∝ exp(-eta max(S_lo(i), S_hi(j))) as a G x G
    matrix, in float64 (scores are exact rationals)."""
    pair = np.maximum.outer(np.array([float(v) for v in lows]), np.array([float(v) for v in highs]))
    z = -float(eta) * pair
    return z - (z.max() + np.log(np.exp(z - z.max()).sum()))


def _bounded(frame: Any, m: int, seed: int) -> np.ndarray:
    return bounded_values(
        frame,
        column="v",
        privacy_unit="person",
        max_rows_per_unit=m,
        nulls="error",
        rng=SeededRandom(seed),
    )


def _release_eta(frame: Any, m: int, eps: float) -> float:
    """The multiplier eta the release reports it drew with."""
    out = ds.private_bounds(
        frame, column="v", privacy_unit="person", max_rows_per_unit=m, epsilon=eps, rng=1
    )
    return float(out.parameters["eta"])


def _random_table(rs: np.random.Generator) -> Any:
    n = int(rs.integers(5, 40))
    return pd.DataFrame(
        {
            "person": rs.integers(0, 8, n),
            "v": rs.choice([-3.0, -0.3, 0.0, 0.7, 1.5, 6.0, 100.0, 1e5, np.inf], n),
        }
    )


@pytest.fixture(autouse=True)
def _quiet() -> None:
    warnings.simplefilter("ignore")


@pytest.mark.parametrize("m", [1, 2, 3])
def test_removing_a_person_moves_every_score_by_at_most_m(m: int) -> None:
    """The privacy claim's sensitivity: both score vectors of the bounded column move by at
    most m (in sup norm) when all rows of one person are removed (same key, so the others
    keep the same rows). Brute force over every person of 12 random tables."""
    rs = np.random.default_rng(m)
    for trial in range(12):
        frame = _random_table(rs)
        lows, highs = _scores(_bounded(frame, m, trial))
        for person in frame["person"].unique():
            lows2, highs2 = _scores(_bounded(frame[frame["person"] != person], m, trial))
            assert max(abs(a - b) for a, b in zip(lows, lows2, strict=True)) <= m
            assert max(abs(a - b) for a, b in zip(highs, highs2, strict=True)) <= m


@pytest.mark.slow  # an exact distribution on every neighbour: the slow tier (make slow)
@pytest.mark.parametrize(("m", "eps"), [(1, 1.0), (2, 0.5), (3, 0.1)])
def test_the_exact_output_distribution_is_epsilon_dp_on_neighbouring_tables(
    m: int, eps: float
) -> None:
    """The claim itself: the pair (i, j) has probability P(i, j) ∝ exp(-eta max(S_lo(i),
    S_hi(j))) with the eta the release reports; over every person of the tables,
    log P(pair | D) - log P(pair | D - person) is at most eps for every one of the G^2
    pairs, both ways. The sorting of the pair is post-processing."""
    rs = np.random.default_rng(10 + m)
    # random tables, and tables near the worst case: one person with m far-out rows
    # among people at 1.0 (removing them moves the clip and width terms in opposite
    # directions)
    tables = (
        [_random_table(rs) for _ in range(8)]
        + [
            pd.DataFrame(
                {
                    "person": [*range(k), *[k] * m],
                    "v": [1.0] * k + [far] * m,
                }
            )
            for k in (10, 40)
            for far in (1e3, -1e3, 1e6, -1e6)
        ]
        + [
            # the half-of-the-non-zero-rows term binding: many exact zeros, and a person whose
            # m rows are far out or zero (removing them moves n0 and the counts differently)
            pd.DataFrame(
                {
                    "person": [*range(k + 4), *[k + 4] * m],
                    "v": [0.0] * k + [1.0] * 4 + [far] * m,
                }
            )
            for k in (10, 30)
            for far in (0.0, 1e3, -1e6)
        ]
    )
    worst = 0.0
    for trial, frame in enumerate(tables):
        eta = _release_eta(frame, m, eps)
        full = _log_pmf(*_scores(_bounded(frame, m, trial)), eta)
        for person in frame["person"].unique():
            less = _log_pmf(*_scores(_bounded(frame[frame["person"] != person], m, trial)), eta)
            worst = max(worst, float(np.max(np.abs(full - less))))
    assert worst <= eps * (1 + 1e-9)
    # not vacuous: the tables reach more than half of the budget, so a mechanism spending
    # twice its budget (noise halved, or m ignored) fails the bound above (the exponential
    # mechanism's 2 eta Delta needs scores moving by Delta both ways at once: here the
    # moves span at most 0.98 + 0.9 of the 2)
    assert worst >= 0.51 * eps


def test_the_sampler_draws_the_stated_distribution() -> None:
    """The released bounds follow the pair distribution with the eta the receipt reports
    (which the privacy test uses): 400 seeded releases on a small table;
    over the grid cut into 6 runs of about equal exact probability, the total variation
    distance between the empirical and the exact distribution of each end is below 0.1
    (sampling error about 0.04; a doubled eta moves it by more than 0.2)."""
    x = np.random.default_rng(7).lognormal(1.0, 1.0, 40)
    eps = 1.0
    eta = ds.private_bounds(x, epsilon=eps, rng=0).parameters["eta"]
    assert eta == bounds_eta(eps, 1)
    pair = np.exp(_log_pmf(*_scores(x), eta))
    # the pair is sorted (and equal draws widened): the exact distributions of its ends
    p_min, p_max = np.zeros(GRID.size), np.zeros(GRID.size)
    for i in range(GRID.size):
        for j in range(GRID.size):
            lower, upper = ordered_pair(GRID, i, j)
            p_min[np.searchsorted(GRID, lower)] += pair[i, j]
            p_max[np.searchsorted(GRID, upper)] += pair[i, j]
    trials = 400
    got = np.array([ds.private_bounds(x, epsilon=eps, rng=seed).value for seed in range(trials)])
    for exact_p, column in ((p_min, got[:, 0]), (p_max, got[:, 1])):
        cuts = np.searchsorted(np.cumsum(exact_p), np.arange(1, 6) / 6)
        bins = np.searchsorted(cuts, np.searchsorted(GRID, column), side="right")
        empirical = np.bincount(bins, minlength=6) / trials
        expected = np.array([exact_p[idx].sum() for idx in np.split(np.arange(GRID.size), cuts)])
        assert 0.5 * np.abs(empirical - expected).sum() < 0.1


@given(
    st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
        min_size=20,
        max_size=300,
    ),
    st.sampled_from([Fraction(1, 50), Fraction(1, 10), Fraction(0)]),
)
@example(values=[0.0] * 18 + [0.00390625, -1.0], t=Fraction(1, 50))  # tiny positive rows
@example(values=[0.0] * 19 + [2.093185612038767e-100], t=Fraction(1, 50))  # below the grid
def test_the_scores_are_the_documented_formula(values: list[float], t: Fraction) -> None:
    """The scores mean what docs/bounds.md says, recomputed here row by row: a lower
    (upper) bound v costs the rows it clips beyond t n and, when v lies on the outer side
    of 0, the width term: the mean over the levels j = 1..W of how far the rows on v's
    side of 0 with magnitude >= |v| / 2^j fall short of s times the larger of that side's
    rows and the rest, or how far the non-zero rows
    with magnitude >= |v| / 2^H fall short of h n0, whichever is larger. A zero score
    therefore clips at most t n rows; and beyond the data the width term grows by s n / W
    per doubling of v (up to W doublings), so a bound far beyond the data costs more
    than one near it."""
    x = np.asarray(values)
    n = x.size
    lows, highs = _scores(x, t)
    nonzero = np.count_nonzero(x)
    for i, v in enumerate(GRID):
        same_side = x[x > 0] if v > 0 else -x[x < 0]
        target = WIDTH_SHARE * max(same_side.size, n - same_side.size)
        levels = [
            max(Fraction(0), target - np.count_nonzero(same_side >= abs(v) / 2**j))
            for j in range(1, WIDTH_STEPS + 1)
        ]
        bulk = BULK_SHARE * nonzero - np.count_nonzero(np.abs(x) >= abs(v) / 2**BULK_STEPS)
        width = max(sum(levels, Fraction(0)) / WIDTH_STEPS, bulk)
        clip_low = np.count_nonzero(x < v) - t * n
        clip_high = np.count_nonzero(x > v) - t * n
        assert lows[i] == max(Fraction(0), clip_low, width if v < 0 else Fraction(0))
        assert highs[i] == max(Fraction(0), clip_high, width if v > 0 else Fraction(0))
        if lows[i] == 0:
            assert clip_low <= 0
        if highs[i] == 0:
            assert clip_high <= 0
    positive = x[x > 0]
    if positive.size and WIDTH_SHARE * n >= 1:
        # beyond the positive rows the upper bound's score never falls, and it rises with
        # each doubling while the bulk term does not dominate it
        near = 2.0 ** np.ceil(np.log2(positive.max()))
        i_near, i_far = np.searchsorted(GRID, [near, 4 * near])
        assert highs[i_far] >= highs[i_near]
        bulk_free = np.count_nonzero(np.abs(x) >= 4 * near / 2**BULK_STEPS) >= BULK_SHARE * nonzero
        on_grid = near >= 2.0**-K_LOW and near * 4 <= GRID[-1]  # both points on the grid
        if bulk_free and on_grid:
            assert highs[i_far] > highs[i_near]


@pytest.mark.parametrize(("m", "eps"), [(1, 1.0), (8, 0.5)])
def test_the_clipping_guarantee_holds_exactly(m: int, eps: float) -> None:
    """The utility theorem as docs/bounds.md states it, computed on the exact
    distribution: P(S >= OPT + ln(G^2 / beta) / eta) <= beta for the pair draw, and the
    clipped rows of each end of a pair with score S are at most t n + S."""
    rs = np.random.default_rng(4)
    beta = 0.05
    eta = bounds_eta(eps, m)
    for x in (rs.lognormal(3, 1.5, 500 * m), (rs.pareto(1.2, 300 * m) + 1) * 100):
        n = x.size
        lows, highs = _scores(x)
        p = np.exp(_log_pmf(lows, highs, eta))
        s = np.maximum.outer(
            np.array([float(v) for v in lows]), np.array([float(v) for v in highs])
        )
        cut = s.min() + math.log(GRID.size**2 / beta) / eta
        assert float(p[s >= cut].sum()) <= beta
        below = np.array([np.count_nonzero(x < v) for v in GRID])
        above = np.array([np.count_nonzero(x > v) for v in GRID])
        assert np.all(below[:, None] <= float(T02) * n + s + 1e-9)
        assert np.all(above[None, :] <= float(T02) * n + s + 1e-9)


@pytest.mark.parametrize(("kind", "per_person"), [("log-normal", False), ("pareto", True)])
def test_useful_from_500_people_at_epsilon_1(kind: str, per_person: bool) -> None:
    """The goal, seeded: 500 rows (or 500 people x 8 rows, m = 8) at epsilon 1, at least
    90% of 60 releases clip at most 10% of the rows with a width within 64 times
    M = max(|q_0.01|, |q_0.99|), and the mean clipped share stays below 5%."""
    rs = np.random.default_rng(21)
    size = 500 * (8 if per_person else 1)
    x = rs.lognormal(3, 1.5, size) if kind == "log-normal" else (rs.pareto(1.2, size) + 1) * 100
    frame = pd.DataFrame({"v": x, "person": np.repeat(np.arange(500), 8 if per_person else 1)})
    magnitude = float(np.max(np.abs(np.quantile(x, [0.01, 0.99]))))
    useful, clipped = 0, []
    for seed in range(60):
        if per_person:
            lower, upper = ds.private_bounds(
                frame, column="v", privacy_unit="person", max_rows_per_unit=8, epsilon=1.0, rng=seed
            ).value
        else:
            lower, upper = ds.private_bounds(x, epsilon=1.0, rng=seed).value
        share = float(np.mean((x < lower) | (x > upper)))
        clipped.append(share)
        useful += share <= 0.1 and upper - lower <= 64 * magnitude
    assert useful >= 54
    assert float(np.mean(clipped)) < 0.05


def _p_useful(x: np.ndarray, m: int, eps: float) -> float:
    """The exact probability that a release on the bounded column x is useful (finite,
    at most 10% clipped, width <= 64 M), sorting and widening included."""
    pair = np.exp(_log_pmf(*_scores(x), bounds_eta(eps, m)))
    magnitude = float(np.max(np.abs(np.quantile(x, [0.01, 0.99]))))
    ordered = np.sort(x)
    total = 0.0
    for i in range(GRID.size):
        for j in range(GRID.size):
            lower, upper = ordered_pair(GRID, i, j)
            below = np.searchsorted(ordered, lower, side="left")
            above = x.size - np.searchsorted(ordered, upper, side="right")
            if below + above <= 0.1 * x.size and upper - lower <= 64 * magnitude:
                total += pair[i, j]
    return total


@pytest.mark.parametrize(
    ("kind", "m", "eps", "least"),
    [("log-normal", 1, 0.1, 0.85), ("pareto", 8, 0.1, 0.85), ("zeros", 1, 1.0, 0.97)],
)
def test_useful_at_small_budgets_and_with_many_zeros(
    kind: str, m: int, eps: float, least: float
) -> None:
    """Exact probabilities of a useful release (no sampling): at epsilon 0.1, 500 rows
    (or 500 people x 8 rows) of log-normal or Pareto data are useful with probability at
    least 0.85 (the far grid points cost half the non-zero rows, not a tenth of the rows:
    0.3 without that term); and 500 rows of 0 (70%) and 1 at epsilon 1 with at least
    0.97 (counting the half against all rows would put a floor of 0.2 n under every
    positive upper bound, tying 2^6 and 2^7 (too wide) with 1: about 0.7)."""
    rs = np.random.default_rng(31)
    size = 500 * m
    if kind == "log-normal":
        x = rs.lognormal(3, 1.5, size)
    elif kind == "pareto":
        x = (rs.pareto(1.2, size) + 1) * 100
    else:
        x = (rs.random(size) >= 0.7).astype(np.float64)
    assert _p_useful(x, m, eps) >= least


@pytest.mark.parametrize(
    "data",
    [
        np.random.default_rng(1).lognormal(3, 1.5, 20000),
        (np.random.default_rng(2).pareto(1.2, 20000) + 1) * 100,
        np.random.default_rng(3).standard_cauchy(20000) * 50,
    ],
)
def test_heavy_tailed_data_get_tight_covering_bounds(data: np.ndarray) -> None:
    """At n = 20,000 and epsilon 1 each end clips at most 3% (target 2%, plus the noise
    and the trade against width where the tail is heavier than the width terms allow: a
    Pareto tail of index 1.2 clips 2.6%) and each bound is within a factor 2 of
    M = max(|q_0.01|, |q_0.99|) (it was 2^6 before the width levels)."""
    magnitude = float(np.max(np.abs(np.quantile(data, [0.01, 0.99]))))
    for seed in range(5):
        lower, upper = ds.private_bounds(data, epsilon=1.0, rng=seed).value
        assert np.mean(data < lower) <= 0.03
        assert np.mean(data > upper) <= 0.03
        assert max(abs(lower), abs(upper)) <= 2 * magnitude


def test_it_always_answers_finite_ordered_grid_points() -> None:
    """Empty or tiny data still give two grid points, lower < upper (n is private: the
    mechanism cannot say the data are empty)."""
    for data in (np.array([]), np.random.default_rng(0).normal(size=30), np.array([5.0] * 7)):
        for seed in range(5):
            lower, upper = ds.private_bounds(data, epsilon=1.0, rng=seed).value
            assert lower < upper
            assert lower in GRID
            assert upper in GRID


def test_every_input_path_and_the_accountant(tmp_path: Path) -> None:
    rs = np.random.default_rng(5)
    frame = pd.DataFrame({"person": rs.integers(0, 3000, 9000), "v": rs.lognormal(2, 1, 9000)})
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    a = ds.private_bounds(frame, column="v", epsilon=1.0, rng=4).value
    b = ds.private_bounds(str(path), column="v", epsilon=1.0, rng=4).value
    c = ds.private_bounds(frame.sample(frac=1.0, random_state=1), column="v", epsilon=1.0, rng=4)
    assert a == b == c.value
    assert a == ds.private_bounds(frame["v"].to_numpy(), epsilon=1.0, rng=4).value
    acc = ds.Accountant(epsilon=1.0)
    out = acc.private_bounds(
        frame, column="v", privacy_unit="person", max_rows_per_unit=3, epsilon=0.4, rng=4
    )
    assert out.value[0] < out.value[1]
    assert acc.spent[0] == pytest.approx(0.4)


def test_bounds_then_median_spends_one_budget() -> None:
    x = np.random.default_rng(8).lognormal(4, 1, 50000)
    acc = ds.Accountant(epsilon=1.0)
    lower, upper = acc.private_bounds(x, epsilon=0.3, rng=1).value
    median = acc.release(x, ds.Median(lower, upper), epsilon=0.7, rng=2)
    assert acc.spent[0] == pytest.approx(1.0)
    assert abs(median.value - np.median(x)) < 0.05 * np.median(x)
    with pytest.raises(ds.BudgetExceededError):
        acc.private_bounds(x, epsilon=0.1, rng=3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": 1.0, "delta": 1e-6}, "pure epsilon-DP"),
        ({"epsilon": 1.0, "quantiles": (0.9, 0.1)}, "0 <= low < high <= 1"),
        ({"epsilon": 1.0, "max_rows_per_unit": 3}, "what one privacy unit contributes"),
    ],
)
def test_bad_arguments_are_one_clear_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ds.InputError, match=message):
        ds.private_bounds([1.0, 2.0, 3.0], rng=1, **kwargs)


def test_nan_needs_nulls_drop_and_missing_bounds_point_here() -> None:
    with pytest.raises(ds.InputError, match="NaN"):
        ds.private_bounds([1.0, float("nan")], epsilon=1.0, rng=1)
    assert ds.private_bounds([1.0, float("nan")], epsilon=1.0, nulls="drop", rng=1).value
    with pytest.raises(ds.InputError, match="private_bounds"):
        ds.Median(None, 10)  # type: ignore[arg-type]


def test_cli_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rs = np.random.default_rng(6)
    csv = tmp_path / "incomes.csv"
    table = pd.DataFrame(
        {"income": rs.lognormal(10, 1, 8000), "person": rs.integers(0, 4000, 8000)}
    )
    table.to_csv(csv, index=False)
    base = ["bounds", str(csv), "--column", "income", "--epsilon", "1"]
    assert main([*base, "--seed", "3", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"lower", "upper", "epsilon", "delta"}
    income = table["income"].to_numpy()
    assert np.mean(income < payload["lower"]) <= 0.03
    assert np.mean(income > payload["upper"]) <= 0.03
    assert math.isclose(payload["epsilon"], 1.0)
    assert main(base) == 0
    assert "--lower" in capsys.readouterr().out
    assert main(["bounds", str(csv), "--column", "nope", "--epsilon", "1"]) == 2
    err = capsys.readouterr().err
    assert "'nope'" in err
    assert "Traceback" not in err


def test_infinities_fall_in_the_outermost_buckets() -> None:
    """+inf and -inf count as values beyond every grid point, as 2^70 and -2^70 do: the
    same scores, and the same release for the same seed, from an array or a table."""
    lows, highs = _scores(np.array([np.inf, -np.inf, np.inf]))
    beyond_lows, beyond_highs = _scores(np.array([2.0**70, -(2.0**70), 2.0**70]))
    assert list(lows) == list(beyond_lows)
    assert list(highs) == list(beyond_highs)
    rs = np.random.default_rng(8)
    x = rs.normal(100.0, 10.0, 3000)
    x[::40], x[7::50] = np.inf, -np.inf
    beyond = np.where(np.isposinf(x), 2.0**70, np.where(np.isneginf(x), -(2.0**70), x))
    expected = ds.private_bounds(beyond, epsilon=1.0, rng=3).value
    assert ds.private_bounds(x, epsilon=1.0, rng=3).value == expected
    frame = pd.DataFrame({"v": x, "person": np.arange(x.size) // 2})
    assert ds.private_bounds(frame, column="v", epsilon=1.0, rng=3).value == expected
    per_person = ds.private_bounds(
        frame, column="v", privacy_unit="person", max_rows_per_unit=2, epsilon=1.0, rng=3
    ).value
    assert per_person == ds.private_bounds(
        frame.assign(v=beyond), column="v", privacy_unit="person", max_rows_per_unit=2,
        epsilon=1.0, rng=3,
    ).value  # fmt: skip
