"""What the table tests of both engines share: the panel's release arguments, the
infinities written into a column and the same column clipped by hand, and a release as
plain rows to compare (no PySpark or DuckDB imported here)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds

YEARS = [2019, 2020, 2021, 2022]
# the panel's hours by year, per person
HOURS_BY_YEAR: dict[str, Any] = {
    "column": "hours",
    "by": "year",
    "keys": YEARS,
    "privacy_unit": "person",
}
PER_PERSON: dict[str, Any] = {**HOURS_BY_YEAR, "max_rows_per_unit": 2, "max_groups_per_unit": 4}


def with_infinities(values: Any) -> np.ndarray:
    """The values as floats, some of them +inf and -inf (some persons have both)."""
    h = np.asarray(values, dtype=np.float64).copy()
    h[::17] = np.inf
    h[5::23] = -np.inf
    return h


def infinities_to_bounds(values: np.ndarray, statistic: ds.Statistic) -> np.ndarray:
    """``values`` with +inf replaced by the upper bound and -inf by the lower one (a count
    has no bounds: any finite stand-in)."""
    lower = getattr(statistic, "lower", 0.0)
    upper = getattr(statistic, "upper", 0.0)
    return np.where(np.isposinf(values), upper, np.where(np.isneginf(values), lower, values))


def release_value(rel: ds.Release) -> Any:
    """The released value, an array as a tuple (comparable with ``==``)."""
    return tuple(rel.value.tolist()) if isinstance(rel.value, np.ndarray) else rel.value


def release_rows(result: Any) -> Any:
    """A release as (key, value, refused) rows, or (value, refused) without groups."""
    if isinstance(result, ds.GroupedRelease):
        return [(key, release_value(rel), rel.refused) for key, rel in result]
    return (release_value(result), result.refused)


# the engines a table test runs on: DuckDB (pandas frames) in the quick tier, Spark in the
# engines tier
ENGINES = ["duckdb", pytest.param("spark", marks=pytest.mark.spark)]


def on_engine(engine: str, frame: Any, request: pytest.FixtureRequest) -> Any:
    """The pandas ``frame`` as the engine reads it: itself for DuckDB, a typed Spark
    DataFrame of its rows (the session of the ``spark`` fixture) for Spark."""
    if engine == "duckdb":
        return frame
    from tests.spark_session import to_spark

    return to_spark(request.getfixturevalue("spark"), frame)
