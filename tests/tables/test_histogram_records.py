"""A group handed to the methods as its histogram (distinct values and counts) answers
every question as the array of its records does: the same quantile windows, counts and
exact sums, and so the same draws from both quantile samplers for the same seed. The
histogram pass that aggregates every row (no per-row key test) builds the same
histograms as the one that tests each row's key."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.mechanisms._permute_flip import sample_permute_and_flip
from dpsense.mechanisms._quantile_sampler import sample_quantile_indices
from dpsense.mechanisms.quantile import quantile_score
from dpsense.methods.ksw import QUANTA
from dpsense.noise.rng import SeededRandom
from dpsense.statistics._exact import RecordGrid
from dpsense.statistics._grid import PowerOfTwoGrid, ResolutionGrid
from dpsense.tables import grouped
from dpsense.tables.engines.duckdb import held_scan
from dpsense.tables.rows.windows import HistogramRecords
from tests.tables.windows_check import assert_windows_equal_the_arrays

pd = pytest.importorskip("pandas")


def _data(kind: str) -> np.ndarray:
    rng = np.random.default_rng(5)
    if kind == "tied":  # a few dozen distinct values, long runs of ties
        return np.minimum(np.rint(rng.gamma(2.0, 4.0, 5000)), 40.0)
    if kind == "continuous":
        return np.round(rng.gamma(2.0, 4.0, 5000), 2)
    return np.full(300, 7.0)  # one value


def _histogram(x: np.ndarray) -> HistogramRecords:
    values, counts = np.unique(x, return_counts=True)
    return HistogramRecords(values, counts.astype(np.int64))


KINDS = ["tied", "continuous", "one value"]


@pytest.mark.parametrize("kind", KINDS)
def test_windows_counts_and_sums_equal_the_arrays(kind: str) -> None:
    x = _data(kind)
    h = _histogram(x)
    assert h.size == x.shape[0]
    assert np.array_equal(h.sorted_values(), np.sort(x))
    levels = [
        (num, den, w) for num, den in [(1, 2), (9, 10), (1, 10), (1, 3)] for w in (1, 3, 50, 400)
    ]
    assert_windows_equal_the_arrays(h, x, levels)
    points = np.concatenate([np.unique(x)[:20], [-1.0, 0.5, 3.3, 7.0, 12.0, 41.0, 1e9]])
    for v in points.tolist():
        assert h.count_below(v) == int(np.count_nonzero(x < v))
        assert h.count_above(v) == int(np.count_nonzero(x > v))
    for lower, upper in [(0.0, 40.0), (2.0, 9.5), (-3.0, 1e-3)]:
        xc = np.clip(x, lower, upper)
        hc = _histogram(xc)
        grid = RecordGrid.for_bounds(lower, upper)
        assert hc.grid_sum(grid) == grid.integer_sum(xc)
        unit = np.clip((xc - lower) / (upper - lower), 0.0, 1.0)
        assert hc.quanta_sum(lower, upper, QUANTA) == int(np.rint(unit * QUANTA).sum())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("sampler", ["exponential", "permute-and-flip"])
def test_both_samplers_draw_the_same_from_the_histogram(kind: str, sampler: str) -> None:
    """A forced narrow window makes the tail step (its counts asked of the histogram)
    likely; the draws equal the array's, tail steps included."""
    x = _data(kind)
    for level in (0.5, 0.9):
        score = quantile_score(level, 1.0, "add-remove", "test")
        for window in (2, 40, None):
            if sampler == "exponential":
                grid: Any = PowerOfTwoGrid.build(0.0, 64.0, "test")
                a = sample_quantile_indices(
                    SeededRandom(3), x.copy(), grid, score, 16, _window=window
                )
                b = sample_quantile_indices(
                    SeededRandom(3), _histogram(x), grid, score, 16, _window=window
                )
            else:
                grid = ResolutionGrid.build(0.0, 64.0, 0.25, "test")
                a = sample_permute_and_flip(
                    SeededRandom(3), x.copy(), grid, score, 16, _window=window
                )
                b = sample_permute_and_flip(
                    SeededRandom(3), _histogram(x), grid, score, 16, _window=window
                )
            assert np.array_equal(a, b)


def _rows(result: ds.GroupedRelease) -> list[Any]:
    return [(key, np.asarray(rel.value).tolist(), rel.refused) for key, rel in result]


@pytest.mark.parametrize(
    "statistic",
    [
        ds.Median(0.0, 40.0, resolution=1.0),
        ds.Quantile(0.8, 0.0, 64.0),
        ds.Mean(0.0, 30.0),
        ds.Sum(0.0, 30.0),
        ds.Count(),
    ],
    ids=["median-pf", "quantile-em", "mean", "sum", "count"],
)
@pytest.mark.parametrize("unit", [None, "person"])
def test_grouped_releases_from_histograms_equal_releases_from_arrays(
    statistic: Any, unit: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tied groups reach the methods as histograms; each group's release equals the
    method's release of the group's array for the same seed. Rows outside the public keys
    (few of them) are aggregated for nothing by the histogram pass, which must not change
    a group's records."""
    rng = np.random.default_rng(8)
    n = 9000
    g = rng.integers(0, 4, n)  # group 3 is outside the keys
    v = np.minimum(np.rint(rng.gamma(2.0, 4.0, n)), 45.0)
    frame = pd.DataFrame({"g": g, "v": v, "person": rng.integers(0, 2000, n)})
    keys = [0, 1, 2, 5]
    column = None if isinstance(statistic, ds.Count) else "v"
    kwargs: dict[str, Any] = {"column": column, "by": "g", "keys": keys, "epsilon": 1.0}
    if unit is not None:
        kwargs.update(privacy_unit=unit, max_rows_per_unit=3)
    seen.clear()
    for seed in range(3):
        got = _rows(ds.release(frame, statistic, rng=seed, **kwargs))
        monkeypatch.setattr(held_scan, "_FEW_OUTSIDE", -1)  # the per-row key test
        tested = _rows(ds.release(frame, statistic, rng=seed, **kwargs))
        monkeypatch.undo()
        assert got == tested
        monkeypatch.setattr(grouped, "held_or_values", _as_array)  # the arrays, as before
        by_array = _rows(ds.release(frame, statistic, rng=seed, **kwargs))
        monkeypatch.undo()
        assert got == by_array
    if unit is not None or isinstance(statistic, ds.Quantile):  # (sums are held in DuckDB)
        assert any(seen)  # some group came to the method as a histogram


seen: list[int] = []
_held_or_values = grouped.held_or_values


def _as_array(values: Any, statistic: Any, method: str) -> Any:
    if not isinstance(values, HistogramRecords):  # a group held in DuckDB
        return _held_or_values(values, statistic, method)
    seen.append(values.size)
    return values.sorted_values()
