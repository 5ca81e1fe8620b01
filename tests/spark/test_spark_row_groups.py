"""Every row a unit on the benchmarks' hard tables at 2e5 rows: large groups stay in Spark as
rows (``tables.spark_held``), and the releases equal DuckDB's and pandas' for the same seed,
whether the sampled brackets hold their windows, miss them, or the data are tied integers.

``STREAM_DISTINCT`` is lowered so that the groups (about 2000 rows each) are held; the
counters of ``SparkRowGroups`` show what Spark was asked and what reached the driver.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.mechanisms.quantile import quantile_score
from dpsense.methods.exponential import interval_budget
from dpsense.tables.engines.spark import groups as spark_groups
from dpsense.tables.engines.spark import held as spark_held
from dpsense.tables.engines.spark.held import PAD, SparkRowGroups
from tests.tables.test_hard_table_parity import GROUPS, hard_table
from tests.tables.test_hard_table_parity import hard as hard

pytestmark = pytest.mark.spark

pd = pytest.importorskip("pandas")

STATS = {
    "median": ds.Median(0.0, 1000.0),
    "quantile": ds.Quantile(0.9, 0.0, 1000.0),
    "mean": ds.Mean(0.0, 1000.0),
    "sum": ds.Sum(0.0, 500.0),  # bounds that clip
}


@pytest.fixture(scope="module")
def hard_int(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The ``hard-int`` table: v = round(gamma(2, 150) / 10), heavily tied integers."""
    return hard_table("hard-int", tmp_path_factory.mktemp("hard-int"))


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[SparkRowGroups]:
    """Groups of more than 500 rows are held; every SparkRowGroups made is listed."""
    got: list[SparkRowGroups] = []
    monkeypatch.setattr(spark_groups, "STREAM_DISTINCT", 500)
    original = SparkRowGroups.__init__

    def spy(self: SparkRowGroups, *args: Any) -> None:
        original(self, *args)
        got.append(self)

    monkeypatch.setattr(SparkRowGroups, "__init__", spy)
    return got


def _release(data: Any, statistic: Any, **kwargs: Any) -> list[tuple[Any, Any]]:
    kwargs = {"by": "g", "keys": list(range(GROUPS)), **kwargs}
    got = ds.release(data, statistic, column="v", epsilon=1.0, rng=3, **kwargs)
    if isinstance(got, ds.GroupedRelease):
        return [(key, rel.value) for key, rel in got]
    return [((), got.value)]


def _three(spark: Any, table: tuple[Path, Any], statistic: Any, **kwargs: Any) -> Any:
    """The release from Spark (reading the Parquet file), asserted equal to DuckDB's and
    pandas'."""
    path, frame = table
    got = _release(spark.read.parquet(str(path)), statistic, **kwargs)
    assert got == _release(path, statistic, **kwargs)
    assert got == _release(frame, statistic, **kwargs)
    assert all(value is not None and np.isfinite(value) for _, value in got)
    return got


@pytest.mark.parametrize("stat", list(STATS))
def test_rows_kept_in_spark_release_what_duckdb_and_pandas_release(
    spark: Any, hard: tuple[Path, Any], made: list[SparkRowGroups], stat: str
) -> None:
    statistic = STATS[stat]
    _three(spark, hard, statistic)
    assert len(made) == 1
    groups = made[0]
    assert len(groups.sizes) == GROUPS
    # no histogram of the continuous values was built: the brackets held every window
    assert groups.histograms == 0
    assert groups.fallbacks == 0
    if isinstance(statistic, ds.Quantile):
        # one window job for every group; the intervals' counts came with the first job
        assert groups.jobs == 1
        point = interval_budget(1.0)[0]  # the value's share (the rest: the interval's)
        w = quantile_score(statistic.p, point, "add-remove", "test").window(2**33)
        # a slice of 2w + 2 ranks and w + PAD more each side per group
        assert 0 < groups.rows_collected <= GROUPS * (4 * w + 2 * PAD + 5)
    else:  # the exact sums came with the job that counted the groups
        assert groups.jobs == 0
        assert groups.rows_collected == 0


@pytest.mark.parametrize("stat", ["median", "quantile"])
def test_a_missed_bracket_falls_back_to_the_exact_histogram(
    spark: Any,
    hard: tuple[Path, Any],
    made: list[SparkRowGroups],
    monkeypatch: pytest.MonkeyPatch,
    stat: str,
) -> None:
    want = _three(spark, hard, STATS[stat])
    # no margin: the sample's estimate alone, which misses about half the windows
    monkeypatch.setattr(spark_held, "margin", lambda n, sampled, union, w: 0.0)
    assert _three(spark, hard, STATS[stat]) == want
    assert 0 < made[-1].fallbacks < GROUPS
    assert made[-1].histograms == made[-1].fallbacks
    # the window job, one histogram job for the misses (the intervals' counts came with
    # the first job)
    assert made[-1].jobs == 2
    # a margin of minus n: every bracket is empty and misses
    monkeypatch.setattr(spark_held, "margin", lambda n, sampled, union, w: -float(n))
    assert _three(spark, hard, STATS[stat]) == want
    assert made[-1].fallbacks == GROUPS


@pytest.mark.parametrize("stat", ["median", "quantile"])
@pytest.mark.parametrize("grouped", [True, False])
def test_tied_integers_held_in_spark_release_the_same(
    spark: Any,
    hard_int: tuple[Path, Any],
    made: list[SparkRowGroups],
    monkeypatch: pytest.MonkeyPatch,
    stat: str,
    grouped: bool,
) -> None:
    # every group held however few its distinct values (by default, groups with few
    # distinct values in the sample get their small histogram instead)
    monkeypatch.setattr(spark_groups, "STREAM_DISTINCT", 0)
    kwargs: dict[str, Any] = {} if grouped else {"by": None, "keys": None}
    _three(spark, hard_int, STATS[stat], **kwargs)
    assert len(made) == 1
    assert len(made[0].sizes) == (GROUPS if grouped else 1)
    # grouped, the runs of ties (tens of copies of a value) fit in the slice's PAD;
    # ungrouped, the run of the target value (thousands of copies) is longer, the window's
    # neighbour falls outside the slice and the group is answered from its histogram
    assert made[0].histograms == made[0].fallbacks == (0 if grouped else 1)
