"""Private bounds: the noisy histogram's sensitivity by brute force, the noise scale, the
post-processing's coverage without noise, every input path, and bad input."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpsense as ds
from dpsense.bounds import bounds_from_counts, bounds_grid, bucket_counts
from dpsense.cli import main
from dpsense.noise.rng import SeededRandom
from dpsense.tables.grouped import bounded_values

pd = pytest.importorskip("pandas")
GRID = bounds_grid()


@pytest.fixture(autouse=True)
def _quiet() -> None:
    warnings.simplefilter("ignore")


@pytest.mark.parametrize("m", [1, 2, 3])
def test_removing_a_person_changes_the_histogram_by_at_most_m(m: int) -> None:
    """The privacy claim: the bucket counts of the bounded column have L1 sensitivity m
    under removing all rows of one person (same key, so others keep the same rows).
    Brute force over every person of 12 random tables."""
    rs = np.random.default_rng(m)
    for trial in range(12):
        n = int(rs.integers(5, 40))
        frame = pd.DataFrame(
            {
                "person": rs.integers(0, 8, n),
                "v": rs.choice([-3.0, -0.3, 0.0, 0.7, 1.5, 6.0, 100.0, 1e5], n),
            }
        )

        def counts(table: Any, seed: int = trial) -> np.ndarray:
            values = bounded_values(
                table,
                column="v",
                privacy_unit="person",
                max_rows_per_unit=m,
                nulls="error",
                rng=SeededRandom(seed),
            )
            return bucket_counts(values, GRID)

        full = counts(frame)
        for person in frame["person"].unique():
            without = counts(frame[frame["person"] != person])
            assert int(np.abs(full - without).sum()) <= m


def test_the_noise_scale_is_m_over_epsilon_rounded_up() -> None:
    frame = pd.DataFrame({"person": [1, 1, 2, 3], "v": [1.0, 2.0, 3.0, 4.0]})
    for m, eps in [(1, 1.0), (3, 0.7), (5, 0.1)]:
        out = ds.private_bounds(
            frame,
            column="v",
            privacy_unit="person",
            max_rows_per_unit=m,
            epsilon=eps,
            rng=1,
        )
        assert m / eps <= out.scale <= m / eps + 2**-19
        assert out.epsilon == eps
        assert out.delta == 0.0
        assert out.noise == "discrete-laplace"


@given(
    st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
        min_size=60,
        max_size=400,
    ),
    st.sampled_from([(0.02, 0.98), (0.1, 0.9), (0.0, 1.0)]),
)
def test_without_noise_the_bounds_cover_the_quantiles_within_a_grid_step(
    values: list[float], ps: tuple[float, float]
) -> None:
    """Post-processing on exact counts: lower <= the p_lo quantile and upper >= the p_hi
    quantile (as ranks), and no grid point between them would also do."""
    x = np.asarray(values)
    lower, upper = bounds_from_counts(bucket_counts(x, GRID), 0, GRID, *ps)
    n = x.size
    assert np.count_nonzero(x < lower) <= ps[0] * n
    assert np.count_nonzero(x >= upper) <= (1 - ps[1]) * n
    i_lo, i_hi = int(np.searchsorted(GRID, lower)), int(np.searchsorted(GRID, upper))
    if i_lo + 1 < GRID.size and GRID[i_lo + 1] < upper:
        assert np.count_nonzero(x < GRID[i_lo + 1]) > ps[0] * n
    if i_hi >= 1 and GRID[i_hi - 1] > lower:
        assert np.count_nonzero(x >= GRID[i_hi - 1]) > (1 - ps[1]) * n


@pytest.mark.parametrize(
    ("data", "truth"),
    [
        (np.random.default_rng(1).lognormal(3, 1.5, 20000), None),
        ((np.random.default_rng(2).pareto(1.2, 20000) + 1) * 100, None),
        (np.random.default_rng(3).standard_cauchy(20000) * 50, None),
    ],
)
def test_heavy_tailed_data_get_tight_covering_bounds(data: np.ndarray, truth: Any) -> None:
    q_lo, q_hi = np.quantile(data, [0.02, 0.98])
    for seed in range(5):
        lower, upper = ds.private_bounds(data, epsilon=1.0, rng=seed).value
        assert lower <= q_lo
        assert upper >= q_hi
        # within a factor 4 of the extreme quantiles in magnitude (one grid step and noise)
        assert abs(upper) <= 4 * max(abs(q_hi), 2**-30)
        assert abs(lower) <= 4 * max(abs(q_lo), 2**-30) or lower >= 0.0


def test_too_little_data_gives_the_whole_grid_and_empty_data_is_data() -> None:
    wide = (float(GRID[0]), float(GRID[-1]))
    assert ds.private_bounds(np.array([]), epsilon=1.0, rng=1).value == wide
    assert (
        ds.private_bounds(np.random.default_rng(0).normal(size=30), epsilon=1.0, rng=2).value
        == wide
    )


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
    q = np.quantile(table["income"], [0.02, 0.98])
    assert payload["lower"] <= q[0]
    assert payload["upper"] >= q[1]
    assert math.isclose(payload["epsilon"], 1.0)
    assert main(base) == 0
    assert "--lower" in capsys.readouterr().out
    assert main(["bounds", str(csv), "--column", "nope", "--epsilon", "1"]) == 2
    err = capsys.readouterr().err
    assert "'nope'" in err
    assert "Traceback" not in err


def test_infinities_fall_in_the_outermost_buckets() -> None:
    """+inf and -inf are counted in the last and first buckets, as values beyond the grid
    (2^70 and -2^70) are: the same release for the same seed, from an array or a table."""
    assert bucket_counts(np.array([np.inf, -np.inf, np.inf]), GRID).tolist() == [
        1,
        *([0] * (GRID.size - 1)),
        2,
    ]
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
