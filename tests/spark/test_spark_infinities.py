"""Infinities in a Spark DataFrame are clipped as in every other format: the release equals
pandas' release of the same column with the infinities replaced by the bounds (same seed),
for streamed groups, for groups held in Spark (their windows and exact decimal sums) and
for private bounds; NaN and nulls go through ``nulls=`` as in pandas."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.tables.engines.spark.held import SparkRowGroups
from tests.spark.conftest import to_spark
from tests.tables.helpers import PER_PERSON, infinities_to_bounds, release_rows, with_infinities

pytestmark = pytest.mark.spark

pd = pytest.importorskip("pandas")


def _with_infinities(frame: Any, column: str) -> Any:
    return frame.assign(**{column: with_infinities(frame[column])})


def _replaced(frame: Any, column: str, statistic: Any) -> Any:
    return frame.assign(**{column: infinities_to_bounds(frame[column].to_numpy(), statistic)})


@pytest.fixture(scope="module")
def infinite(frame: Any) -> Any:
    return _with_infinities(frame, "hours")


@pytest.mark.parametrize("text", [False, True], ids=["double", "text"])
def test_spark_clips_infinities_as_pandas_clips_the_bounds(
    spark: Any, infinite: Any, text: bool
) -> None:
    """Per person and by year, a column of doubles (or of text such as 'Infinity', which
    Spark's cast reads): the releases of every statistic kind equal pandas' on the
    column with the infinities replaced by the bounds."""
    from pyspark.sql import functions as sf

    sdf = to_spark(spark, infinite.sample(frac=1.0, random_state=2)).repartition(3)
    if text:
        sdf = sdf.withColumn("hours", sf.col("hours").cast("string"))
    statistics = [ds.Sum(0, 60), ds.Median(0, 60, resolution=1.0)]
    if not text:
        statistics.append(ds.Quantiles([0.1, 0.5, 0.9], 0, 60))
    for statistic in statistics:
        expected = ds.release(
            _replaced(infinite, "hours", statistic), statistic, epsilon=2.0, rng=7, **PER_PERSON
        )
        got = ds.release(sdf, statistic, epsilon=2.0, rng=7, **PER_PERSON)
        assert release_rows(got) == release_rows(expected), statistic.name


def test_held_groups_clip_infinities_before_their_sums_and_windows(
    spark: Any, held: list[Any]
) -> None:
    """Groups of more than 40 distinct values stay in Spark: the exact decimal sums (Sum's
    grid, KSW's quanta) and the quantile window are computed on clipped values."""
    rng = np.random.default_rng(12)
    table = _with_infinities(
        pd.DataFrame({"g": rng.integers(0, 2, 3000), "v": np.round(rng.normal(50, 15, 3000), 3)}),
        "v",
    )
    sdf = spark.createDataFrame(table).repartition(2)
    kwargs = {"column": "v", "by": "g", "keys": [0, 1], "epsilon": 1.5}
    for statistic, extra in (
        (ds.Sum(0.0, 80.0), {}),
        (ds.Mean(0.0, 100.0), {"method": "ksw"}),
        (ds.Mean(20.0, 70.0), {"method": "global"}),
        (ds.Quantile(0.9, 0.0, 100.0), {}),
    ):
        expected = ds.release(_replaced(table, "v", statistic), statistic, rng=5, **kwargs, **extra)
        got = ds.release(sdf, statistic, rng=5, **kwargs, **extra)
        assert release_rows(got) == release_rows(expected), statistic.name
        assert held  # the groups were held...
        # ...and Spark answered for them (every row a unit, the rows are held and the
        # sums come with the job that counts the groups; the window takes a job)
        assert isinstance(held[-1], SparkRowGroups)
        # a quantile: its window job (its interval's counts came with the first job)
        assert held[-1].jobs == (1 if isinstance(statistic, ds.Quantile) else 0)


def test_nan_and_nulls_with_infinities_match_pandas(spark: Any, infinite: Any) -> None:
    """Spark NaN (not only null), in the value column and in a double by-column, is a
    missing value: an error naming nulls='drop', or dropped, and then the release equals
    pandas'."""
    from pyspark.sql import functions as sf

    holes = infinite.assign(year=infinite["year"].astype(float))
    holes.loc[holes.index[3::11], "hours"] = np.nan
    holes.loc[holes.index[4::13], "year"] = np.nan
    sdf = to_spark(spark, holes)  # NaN arrives as null...
    nan_rows = sf.col("person") % 2 == 0  # ...and half of them made NaN again
    for column in ("hours", "year"):
        sdf = sdf.withColumn(
            column,
            sf.when(sf.col(column).isNull() & nan_rows, sf.lit(float("nan"))).otherwise(
                sf.col(column)
            ),
        )
    assert sdf.where(sf.isnan("hours")).count() > 0
    assert sdf.where(sf.isnan("year")).count() > 0
    statistic = ds.Mean(0, 60)
    with pytest.raises(ds.InputError, match="nulls='drop'"):
        ds.release(sdf, statistic, epsilon=2.0, rng=9, **PER_PERSON)
    nan_year_only = sdf.where(
        sf.col("hours").isNotNull() & ~sf.isnan("hours") & sf.col("year").isNotNull()
    )
    with pytest.raises(ds.InputError, match="nulls='drop'"):  # NaN in the key alone
        ds.release(nan_year_only, statistic, epsilon=2.0, rng=9, **PER_PERSON)
    expected = ds.release(holes, statistic, epsilon=2.0, rng=9, nulls="drop", **PER_PERSON)
    got = ds.release(sdf, statistic, epsilon=2.0, rng=9, nulls="drop", **PER_PERSON)
    assert release_rows(got) == release_rows(expected)


def test_private_bounds_count_infinities_as_pandas_does(spark: Any, frame: Any) -> None:
    infinite = _with_infinities(frame, "log_wage")
    expected = ds.private_bounds(
        infinite, column="log_wage", privacy_unit="person", max_rows_per_unit=2, epsilon=1.0, rng=9
    )
    got = ds.private_bounds(
        to_spark(spark, infinite),
        column="log_wage",
        privacy_unit="person",
        max_rows_per_unit=2,
        epsilon=1.0,
        rng=9,
    )
    assert got.value == expected.value
