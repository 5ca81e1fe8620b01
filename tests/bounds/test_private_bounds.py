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
from hypothesis import given
from hypothesis import strategies as st

import dpsense as ds
from dpsense.bounds import WIDTH_SHARE, WIDTH_STEPS, bound_scores, bounds_eta, bounds_grid
from dpsense.cli import main
from dpsense.noise.rng import SeededRandom
from dpsense.tables.grouped import bounded_values

pd = pytest.importorskip("pandas")
GRID = bounds_grid()
T02 = Fraction(1, 50)


def _scores(x: np.ndarray, t: Fraction = T02) -> tuple[np.ndarray, np.ndarray]:
    lows, highs = bound_scores(np.asarray(x, dtype=np.float64), GRID, t, t)
    return np.array(lows, dtype=object), np.array(highs, dtype=object)


def _log_pmf(scores: np.ndarray, eta: float) -> np.ndarray:
    """log P(i) of the draw P(i) ∝ exp(-eta s_i), in float64 (scores are exact rationals)."""
    z = -float(eta) * np.array([float(v) for v in scores])
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


def _release_eta(frame: Any, m: int, eps: float) -> tuple[float, float]:
    """The multipliers (eta_lo, eta_hi) the release reports it drew with."""
    out = ds.private_bounds(
        frame, column="v", privacy_unit="person", max_rows_per_unit=m, epsilon=eps, rng=1
    )
    eta_lo, eta_hi = out.parameters["eta"]
    return float(eta_lo), float(eta_hi)


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


@pytest.mark.parametrize(("m", "eps"), [(1, 1.0), (2, 0.5), (3, 0.1)])
def test_the_exact_output_distribution_is_epsilon_dp_on_neighbouring_tables(
    m: int, eps: float
) -> None:
    """The claim itself: the pair (lower draw, upper draw) has probability
    P_lo(i) P_hi(j) with P(i) ∝ exp(-eta S(i)) and the eta the release reports; over every
    person of 8 random tables, log P(pair | D) - log P(pair | D - person) is at most eps
    for every pair (the max over pairs is the max over i plus the max over j), both ways.
    The sorting of the pair is post-processing."""
    rs = np.random.default_rng(10 + m)
    # random tables, and tables near the worst case: one person with m far-out rows
    # among people at 1.0 (removing them moves the clip and width terms in opposite
    # directions)
    tables = [_random_table(rs) for _ in range(8)] + [
        pd.DataFrame(
            {
                "person": [*range(k), *[k] * m],
                "v": [1.0] * k + [far] * m,
            }
        )
        for k in (10, 40)
        for far in (1e3, -1e3, 1e6, -1e6)
    ]
    worst = 0.0
    for trial, frame in enumerate(tables):
        eta_lo, eta_hi = _release_eta(frame, m, eps)
        lows, highs = _scores(_bounded(frame, m, trial))
        full = (_log_pmf(lows, eta_lo), _log_pmf(highs, eta_hi))
        for person in frame["person"].unique():
            lows2, highs2 = _scores(_bounded(frame[frame["person"] != person], m, trial))
            less = (_log_pmf(lows2, eta_lo), _log_pmf(highs2, eta_hi))
            for sign in (1.0, -1.0):
                ratio = sum(float(np.max(sign * (a - b))) for a, b in zip(full, less, strict=True))
                worst = max(worst, ratio)
    assert worst <= eps * (1 + 1e-9)
    # not vacuous: the tables reach more than half of the budget, so a mechanism spending
    # twice its budget (noise halved, or m ignored) fails the bound above (the exponential
    # mechanism's 2 eta Delta needs scores moving by Delta both ways at once: here the
    # moves span at most 0.98 + 0.9 of the 2)
    assert worst >= 0.51 * eps


def test_the_sampler_draws_the_stated_distribution() -> None:
    """The released bounds follow P_lo and P_hi with the eta the receipt reports (which the
    privacy test uses): 400 seeded releases on a small table;
    over the grid cut into 6 runs of about equal exact probability, the total variation
    distance between the empirical and the exact distribution of each end is below 0.1
    (sampling error about 0.04; a doubled eta moves it by more than 0.2)."""
    x = np.random.default_rng(7).lognormal(1.0, 1.0, 40)
    eps = 1.0
    lows, highs = _scores(x)
    eta_lo, eta_hi = ds.private_bounds(x, epsilon=eps, rng=0).parameters["eta"]
    assert eta_lo == eta_hi == bounds_eta(eps, 1)
    p_lo, p_hi = np.exp(_log_pmf(lows, eta_lo)), np.exp(_log_pmf(highs, eta_hi))
    # the pair is sorted: the exact distributions of its ends, from the product
    cum_lo, cum_hi = np.cumsum(p_lo), np.cumsum(p_hi)
    below = 1 - (1 - np.concatenate([[0.0], cum_lo[:-1]])) * (
        1 - np.concatenate([[0.0], cum_hi[:-1]])
    )
    p_min = np.diff(np.concatenate([below, [1.0]]))
    p_max = np.diff(np.concatenate([[0.0], cum_lo * cum_hi]))
    # equal draws are widened by a step: rare here
    assert float(np.sum(p_lo * p_hi)) < 0.01
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
def test_a_zero_score_clips_at_most_the_target_and_is_not_too_wide(
    values: list[float], t: Fraction
) -> None:
    """The scores mean what docs/bounds.md says: a grid point scores 0 as a lower
    (upper) bound exactly when it clips at most t n rows below (above) it and, if negative
    (positive), a tenth of the data reach |v| / 2^W; and on data with n >= 20 some grid
    point scores 0 on each side when the data's tails are no heavier than that."""
    x = np.asarray(values)
    n = x.size
    lows, highs = _scores(x, t)
    reach = np.array([np.count_nonzero(np.abs(x) >= abs(v) / 2**WIDTH_STEPS) for v in GRID])
    wide = reach < WIDTH_SHARE * n
    for i, v in enumerate(GRID):
        low_ok = np.count_nonzero(x < v) <= t * n and not (v < 0 and wide[i])
        high_ok = np.count_nonzero(x > v) <= t * n and not (v > 0 and wide[i])
        assert (lows[i] == 0) == low_ok
        assert (highs[i] == 0) == high_ok
    magnitude = np.quantile(np.abs(x), 0.9)
    if magnitude > 2.0**-20 and np.max(np.abs(x)) <= 2**WIDTH_STEPS * magnitude:
        assert min(lows) == 0
        assert min(highs) == 0


@pytest.mark.parametrize(("m", "eps"), [(1, 1.0), (8, 0.5)])
def test_the_clipping_guarantee_holds_exactly(m: int, eps: float) -> None:
    """The utility theorem as docs/bounds.md states it, computed on the exact
    distribution: P(S >= OPT + ln(G / beta) / eta) <= beta for each draw, and the clipped
    rows of a draw with score S are at most t n + S (for each end)."""
    rs = np.random.default_rng(4)
    beta = 0.05
    eta = bounds_eta(eps, m)
    for x in (rs.lognormal(3, 1.5, 500 * m), (rs.pareto(1.2, 300 * m) + 1) * 100):
        n = x.size
        for side, scores in enumerate(_scores(x)):
            p = np.exp(_log_pmf(scores, eta))
            s = np.array([float(v) for v in scores])
            cut = s.min() + math.log(GRID.size / beta) / eta
            assert float(p[s >= cut].sum()) <= beta
            clipped = np.array(
                [np.count_nonzero(x < v) if side == 0 else np.count_nonzero(x > v) for v in GRID]
            )
            assert np.all(clipped <= float(T02) * n + s + 1e-9)


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


@pytest.mark.parametrize(
    "data",
    [
        np.random.default_rng(1).lognormal(3, 1.5, 20000),
        (np.random.default_rng(2).pareto(1.2, 20000) + 1) * 100,
        np.random.default_rng(3).standard_cauchy(20000) * 50,
    ],
)
def test_heavy_tailed_data_get_tight_covering_bounds(data: np.ndarray) -> None:
    """At n = 20,000 and epsilon 1 each end clips at most 2.5% (target 2% plus the noise)
    and each bound is within 2^6 of M = max(|q_0.01|, |q_0.99|)."""
    magnitude = float(np.max(np.abs(np.quantile(data, [0.01, 0.99]))))
    for seed in range(5):
        lower, upper = ds.private_bounds(data, epsilon=1.0, rng=seed).value
        assert np.mean(data < lower) <= 0.025
        assert np.mean(data > upper) <= 0.025
        assert max(abs(lower), abs(upper)) <= 64 * magnitude


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
        ({"epsilon": 1.0, "max_rows_per_unit": 3}, "needs a privacy unit"),
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
