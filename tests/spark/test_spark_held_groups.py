"""Large groups stay in Spark: only the window of order statistics and exact sums reach the
driver, and the releases equal pandas' with the same seed.

``STREAM_DISTINCT`` is lowered so that the small test tables have "large" groups; the
driver-side counters of ``SparkGroups`` show what crossed over.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.data.source import connection
from dpsense.mechanisms._quantile_sampler import sample_quantile_indices
from dpsense.mechanisms.quantile import quantile_score
from dpsense.methods.exponential import interval_budget
from dpsense.methods.ksw import QUANTA
from dpsense.noise.rng import SeededRandom
from dpsense.statistics._exact import RecordGrid
from dpsense.statistics._grid import PowerOfTwoGrid
from dpsense.tables.engines.spark import groups as spark_groups
from dpsense.tables.engines.spark.held import PAD, SparkRowGroups
from tests.tables.helpers import release_rows
from tests.tables.windows_check import assert_windows_equal_the_arrays

pytestmark = pytest.mark.spark

pd = pytest.importorskip("pandas")
N = 4000


@pytest.fixture(scope="module")
def table() -> Any:
    rng = np.random.default_rng(11)
    return pd.DataFrame(
        {
            "g": rng.integers(0, 3, N),
            "v": np.round(rng.normal(50.0, 15.0, N), 3),  # a few ties among continuous values
            "person": rng.integers(0, N, N),
        }
    )


STATS = {
    "median": (ds.Median(0.0, 100.0), {}),
    "quantile": (ds.Quantile(0.9, 0.0, 100.0), {}),
    "sum": (ds.Sum(0.0, 80.0), {}),  # bounds that clip
    "mean-ksw": (ds.Mean(0.0, 100.0), {}),
    "mean-global": (ds.Mean(20.0, 70.0), {"method": "global"}),
}
GROUPINGS: dict[str, dict[str, Any]] = {
    "ungrouped": {},
    "public-keys": {"by": "g", "keys": [0, 1, 2, 7]},
    "private": {"by": "g", "delta": 1e-6},
}


@pytest.mark.parametrize("grouping", list(GROUPINGS))
@pytest.mark.parametrize("stat", list(STATS))
def test_held_groups_release_what_pandas_releases_without_theirrelease_rows(
    spark: Any, table: Any, held: list[Any], stat: str, grouping: str
) -> None:
    statistic, extra = STATS[stat]
    kwargs = {"column": "v", "epsilon": 2.0, **extra, **GROUPINGS[grouping]}
    expected = ds.release(table, statistic, rng=5, **kwargs)
    shuffled = spark.createDataFrame(table.sample(frac=1.0, random_state=3)).repartition(3)
    got = ds.release(shuffled, statistic, rng=5, **kwargs)
    assert release_rows(got) == release_rows(expected)
    assert len(held) == 1
    assert len(held[0].sizes) >= 1
    # ...and what reached the driver is a window or one sum per group, not the rows
    rows_kept = isinstance(held[0], SparkRowGroups)  # every row a unit, grouped by key
    assert rows_kept == (grouping != "private")
    if isinstance(statistic, ds.Quantile):
        grouped = isinstance(got, ds.GroupedRelease)
        eps = got.parameters["per_group"]["epsilon"] if grouped else 2.0
        # the value's share of epsilon (the rest: its interval's endpoints)
        score = quantile_score(statistic.p, interval_budget(eps)[0], "add-remove", "test")
        w = score.window(2**33)
        # rows kept in Spark: a slice of the window's ranks and PAD more each side; and one
        # row of the interval's counts per group
        per_group = (4 * w + 2 * PAD + 4 if rows_kept else 2 * w + 6) + 1
        assert 0 < held[0].rows_collected <= len(held[0].sizes) * per_group
    elif rows_kept:  # the sums came with the job that counted the groups
        assert held[0].rows_collected == 0
        assert held[0].jobs == 0
    else:
        assert 0 < held[0].rows_collected <= len(held[0].sizes)
    if rows_kept:
        assert held[0].fallbacks == 0
        assert held[0].histograms == 0
    else:
        assert held[0].rows_collected < N // 4


def test_methods_that_read_every_record_still_match(
    spark: Any, table: Any, held: list[Any]
) -> None:
    cases = [
        (ds.Median(0.0, 100.0), {"method": "smooth"}),
        (ds.Quantiles([0.25, 0.5, 0.75], 0.0, 100.0), {}),
        (ds.Median(0.0, 100.0, resolution=0.5), {}),  # permute-and-flip reads them all
    ]
    frame = spark.createDataFrame(table).repartition(2)
    for statistic, extra in cases:
        kwargs = {"column": "v", "epsilon": 1.0, "by": "g", "keys": [0, 1, 2], **extra}
        expected = ds.release(table, statistic, rng=9, **kwargs)
        got = ds.release(frame, statistic, rng=9, **kwargs)
        assert [(k, np.asarray(r.value).tolist()) for k, r in got] == [
            (k, np.asarray(r.value).tolist()) for k, r in expected
        ]
    assert all(groups.rows_collected >= 1000 for groups in held)  # read in full


def test_privacy_unit_groups_are_held_too(spark: Any, table: Any, held: list[Any]) -> None:
    # epsilon large enough that the window (which grows as epsilon per row = eps/3/5
    # shrinks) is a small part of each group of about 1300 rows
    kwargs = {"column": "v", "epsilon": 30.0, "by": "g", "keys": [0, 1, 2]}
    kwargs |= {"privacy_unit": "person", "max_rows_per_unit": 5, "max_groups_per_unit": 3}
    expected = ds.release(table, ds.Median(0.0, 100.0), rng=2, **kwargs)  # bounds drop none
    got = ds.release(spark.createDataFrame(table), ds.Median(0.0, 100.0), rng=2, **kwargs)
    assert release_rows(got) == release_rows(expected)
    assert held
    assert held[0].rows_collected < N // 4


@pytest.fixture(scope="module")
def one_group(spark: Any) -> tuple[spark_groups.SparkGroups, np.ndarray]:
    rng = np.random.default_rng(4)
    x = np.concatenate(
        [
            rng.normal(0.3, 1.0, 3000),
            np.full(40, 0.5),  # a tie
            [-2.5, -1.5, 2.5, 0.5 + 2**-30, -(2**-1074), 3.0, -3.0, 1.5, -0.5],  # halves
        ]
    )
    x = np.clip(x, -3.0, 3.0)
    values, counts = np.unique(x, return_counts=True)
    hist = spark.createDataFrame(
        [(0, float(v), int(c)) for v, c in zip(values, counts, strict=True)],
        "gid long, v double, c long",
    ).repartition(3)
    sizes, distinct = {0: int(x.shape[0])}, {0: int(values.shape[0])}
    return spark_groups.SparkGroups(hist, sizes, distinct, connection()), np.sort(x)


def test_exact_sums_equal_numpy(one_group: tuple[spark_groups.SparkGroups, np.ndarray]) -> None:
    groups, x = one_group
    g = groups.group(0)
    for lower, upper in [(-3.0, 3.0), (-1.0, 2.0), (-0.1, 0.1), (-3.0, 1e-3)]:
        grid = RecordGrid.for_bounds(lower, upper)
        xc = np.clip(x, lower, upper)
        assert g.grid_sum(grid) == int(grid.integers(xc).sum())
        unit = np.clip((xc - lower) / (upper - lower), 0.0, 1.0)
        assert g.quanta_sum(lower, upper, QUANTA) == int(np.rint(unit * QUANTA).sum())


def test_rint_halves_to_even_like_numpy(spark: Any) -> None:
    from pyspark.sql import functions as sf

    xs = [
        -2.5,
        -1.5,
        -0.5,
        0.5,
        1.5,
        2.5,
        0.49999999999999994,
        2.5000000000000004,
        -3.7,
        1e15 + 0.5,
    ]
    frame = spark.createDataFrame([(x,) for x in xs], "x double")
    got = [r[0] for r in frame.select(spark_groups._rint(sf, sf.col("x"))).collect()]
    assert got == [int(v) for v in np.rint(xs)]


def test_counts_and_windows_equal_the_arrays(
    one_group: tuple[spark_groups.SparkGroups, np.ndarray],
) -> None:
    groups, x = one_group
    g = groups.group(0)
    for v in (-3.0, -0.7, 0.5, 0.5 + 2**-30, 3.0, 9.0):
        assert g.count_below(v) == int(np.count_nonzero(x < v))
        assert g.count_above(v) == int(np.count_nonzero(x > v))
    assert np.array_equal(g.sorted_values(), x)
    assert_windows_equal_the_arrays(g, x, [(1, 2, 5), (9, 10, 30), (1, 100, 3), (1, 2, 1600)])


def test_the_sampler_draws_the_same_from_spark_and_from_the_array(spark: Any) -> None:
    """A narrow forced window on a few records makes the tail step (its two counts asked
    of Spark) likely; the draws equal the array's, tail steps included."""
    x = np.sort(np.array([-2.0, -1.1, -0.4, -0.4, 0.0, 0.3, 0.35, 0.9, 1.2, 1.7, 2.2, 2.9, 3.0]))
    values, counts = np.unique(x, return_counts=True)
    hist = spark.createDataFrame(
        [(0, float(v), int(c)) for v, c in zip(values, counts, strict=True)],
        "gid long, v double, c long",
    )
    groups = spark_groups.SparkGroups(
        hist, {0: int(x.shape[0])}, {0: int(values.shape[0])}, connection()
    )
    grid = PowerOfTwoGrid.build(-3.0, 3.0, "test")
    score = quantile_score(0.5, 1.0, "add-remove", "test")
    for window in (2, None):
        jobs = groups.jobs
        a = sample_quantile_indices(SeededRandom(1), x.copy(), grid, score, 12, _window=window)
        b = sample_quantile_indices(
            SeededRandom(1), groups.group(0), grid, score, 12, _window=window
        )
        assert np.array_equal(a, b)
        if window == 2:  # the tail step ran, answered by Spark
            assert groups.jobs - jobs > 2
