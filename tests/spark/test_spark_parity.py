"""The Spark engine gives the same releases as pandas (through DuckDB) with the same seed,
for every statistic, grouped and not, with public keys and private selection, from a
shuffled copy too; and the same clear errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from tests.spark.conftest import to_spark
from tests.tables.helpers import HOURS_BY_YEAR, release_rows

pytestmark = pytest.mark.spark

STATS: dict[str, tuple[ds.Statistic, str | None]] = {
    "count": (ds.Count(), None),
    "sum": (ds.Sum(0, 40), "hours"),  # bounds that clip: clipping must agree too
    "mean": (ds.Mean(10, 60), "hours"),
    "median": (ds.Median(0, 80, resolution=1), "hours"),
    "median-continuous": (ds.Median(0.0, 4.0), "log_wage"),
    "quantile": (ds.Quantile(0.9, 0, 80), "hours"),
    "quantiles": (ds.Quantiles([0.1, 0.5, 0.9], 0.0, 4.0), "log_wage"),
}
GROUPINGS: dict[str, dict[str, Any]] = {
    "ungrouped": {},
    "public-keys": {"by": "year", "keys": [2019, 2020, 2021, 2022, 2023]},
    "private": {"by": "year", "delta": 1e-6},
    "two-columns-private": {"by": ["year", "region"], "delta": 1e-6},
}


@pytest.mark.parametrize("grouping", list(GROUPINGS))
@pytest.mark.parametrize("stat", list(STATS))
def test_a_shuffled_spark_copy_matches_pandas(
    spark: Any, frame: Any, stat: str, grouping: str
) -> None:
    statistic, column = STATS[stat]
    kwargs = {"column": column, "epsilon": 2.0, **GROUPINGS[grouping]}
    expected = ds.release(frame, statistic, rng=7, **kwargs)
    # a shuffled copy in three partitions: row order and partitioning change nothing
    shuffled = to_spark(spark, frame.sample(frac=1.0, random_state=4)).repartition(3)
    got = ds.release(shuffled, statistic, rng=7, **kwargs)
    assert release_rows(got) == release_rows(expected)
    if isinstance(expected, ds.GroupedRelease):
        assert got.selection == expected.selection
        assert got.parameters == expected.parameters


def test_privacy_unit_within_the_bounds_matches_pandas(spark: Any, frame: Any) -> None:
    """Bounds that drop nothing (at most 4 rows per person-year, 4 years): the bounded
    tables are equal, so the releases are."""
    kwargs: dict[str, Any] = {
        **HOURS_BY_YEAR,
        "max_rows_per_unit": 4,
        "max_groups_per_unit": 4,
        "epsilon": 4.0,
    }
    for statistic in (ds.Median(0, 80, resolution=1), ds.Mean(0, 80)):
        expected = ds.release(frame, statistic, rng=5, **kwargs)
        got = ds.release(to_spark(spark, frame), statistic, rng=5, **kwargs)
        assert release_rows(got) == release_rows(expected)


BOUNDING: dict[str, dict[str, Any]] = {
    "rows": {"max_rows_per_unit": 1, "max_groups_per_unit": 4, "keys": [2019, 2020, 2021]},
    "groups": {"max_rows_per_unit": 2, "max_groups_per_unit": 1, "keys": [2019, 2020, 2021]},
    "private": {"max_rows_per_unit": 1, "max_groups_per_unit": 2, "delta": 1e-6},
}


@pytest.mark.parametrize("person", ["integer", "text"])
@pytest.mark.parametrize("bounds", list(BOUNDING))
def test_bounds_that_drop_rows_keep_the_same_rows_as_pandas(
    spark: Any, frame: Any, bounds: str, person: str
) -> None:
    """Spark hashes with DuckDB's keyed hash, so bounds that drop rows and groups keep the
    same rows in both engines: the same releases for the same seed (integer and text
    person ids; years, and year and region as text, for groups)."""
    data = frame.copy()
    if person == "text":
        data["person"] = "p-" + data["person"].astype(str)
    by: Any = "year" if "keys" in BOUNDING[bounds] else ["year", "region"]
    kwargs = {"by": by, "privacy_unit": "person", "epsilon": 50.0, **BOUNDING[bounds]}
    shuffled = to_spark(spark, data.sample(frac=1.0, random_state=8)).repartition(3)
    for statistic, column in ((ds.Count(), None), (ds.Sum(0, 80), "hours")):
        expected = ds.release(data, statistic, column=column, rng=3, **kwargs)
        got = ds.release(shuffled, statistic, column=column, rng=3, **kwargs)
        assert release_rows(got) == release_rows(expected)
    # and the bounds did drop rows: the bounded count is below the table's rows
    counted = ds.release(data, ds.Count(), rng=3, **{**kwargs, "epsilon": 1e9})
    assert sum(rel.value for _, rel in counted) < len(data) - 50


def test_kept_values_are_the_persons_own(spark: Any) -> None:
    """Person 1 has 30 rows of distinct values, person 2 five: with m = 3 the sum is three
    of person 1's values plus three of person 2's, each a value they really have."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "person": [1] * 30 + [2] * 5,
            "g": ["a"] * 35,
            "v": [float(i) for i in range(30)] + [100.0] * 5,
        }
    )
    out = ds.release(
        to_spark(spark, frame),
        ds.Sum(0, 200),
        column="v",
        by="g",
        keys=["a"],
        privacy_unit="person",
        max_rows_per_unit=3,
        epsilon=1e8,
        rng=1,
    )
    total = out["a"].value - 300.0
    assert 0.0 + 1.0 + 2.0 - 0.01 <= total <= 27.0 + 28.0 + 29.0 + 0.01


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"column": "nope"}, "The column 'nope' is not in the Spark DataFrame.*as column="),
        ({"column": "region"}, "must be numeric"),
        ({"column": "hours", "by": "nope", "keys": [1]}, "The column 'nope' is not in .* as by="),
        ({"column": "hours", "by": "year"}, "needs delta > 0"),
        ({"column": "hours", "by": "year", "keys": ["x"]}, "cannot be read as values"),
    ],
)
def test_spark_errors_are_input_errors(
    spark: Any, frame: Any, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ds.InputError, match=message):
        ds.release(to_spark(spark, frame), ds.Mean(0, 80), epsilon=1.0, rng=1, **kwargs)


def test_nulls_need_nulls_drop_and_then_match_pandas(spark: Any, frame: Any) -> None:
    holes = frame.copy()
    holes.loc[holes.index[::7], "hours"] = np.nan
    sdf = to_spark(spark, holes)
    with pytest.raises(ds.InputError, match="nulls='drop'"):
        ds.release(sdf, ds.Mean(0, 80), column="hours", epsilon=1.0, rng=1)
    expected = ds.release(holes, ds.Mean(0, 80), column="hours", nulls="drop", epsilon=1.0, rng=1)
    got = ds.release(sdf, ds.Mean(0, 80), column="hours", nulls="drop", epsilon=1.0, rng=1)
    assert got.value == expected.value


def test_keys_of_other_types_are_cast_by_spark(spark: Any, frame: Any) -> None:
    """A date by-column: the keys are read by Spark's own cast; a key that is not a date is
    an InputError naming the column's type."""
    from pyspark.sql import functions as sf

    sdf = to_spark(spark, frame).withColumn(
        "day", sf.to_date(sf.concat(sf.col("year").cast("string"), sf.lit("-01-01")))
    )
    keys = ["2019-01-01", "2020-01-01", "2024-01-01"]
    out = ds.release(sdf, ds.Count(), by="day", keys=keys, epsilon=1e6, rng=1)
    counts = [rel.value for _, rel in out]
    assert counts[0] == pytest.approx(float((frame["year"] == 2019).sum()), abs=0.01)
    assert counts[2] == pytest.approx(0.0, abs=0.01)
    with pytest.raises(ds.InputError, match="day: date"):
        ds.release(sdf, ds.Count(), by="day", keys=["not a day"], epsilon=1.0, rng=1)


def test_accountant_releases_a_spark_frame_with_one_charge(spark: Any, frame: Any) -> None:
    acc = ds.Accountant(epsilon=2.0)
    out = acc.release(
        to_spark(spark, frame),
        ds.Median(0, 80, resolution=1),
        column="hours",
        by="year",
        keys=[2019, 2020],
        privacy_unit="person",
        max_groups_per_unit=2,
        epsilon=1.0,
        rng=3,
    )
    assert len(out) == 2
    assert acc.spent[0] == pytest.approx(1.0)


def test_private_bounds_of_a_spark_frame_match_pandas(spark: Any, frame: Any) -> None:
    expected = ds.private_bounds(frame, column="log_wage", epsilon=1.0, rng=9)
    got = ds.private_bounds(to_spark(spark, frame), column="log_wage", epsilon=1.0, rng=9)
    assert got.value == expected.value
