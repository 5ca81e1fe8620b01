"""Population intervals (``interval="privacy+sampling"``) on Spark: the seeded release of a
query's means and medians by group, with or without a privacy unit, equals pandas' value
for value, its interval columns included (the ingredients read the same records)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from tests.spark_session import to_spark

pytestmark = [
    pytest.mark.spark,
    pytest.mark.engines,
    pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning"),
]

pd = pytest.importorskip("pandas")


@pytest.mark.parametrize("unit", [False, True])
def test_spark_population_intervals_equal_pandas(spark: Any, unit: bool) -> None:
    rs = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "v": rs.uniform(0, 100, 3000),
            "g": rs.integers(0, 3, 3000),
            "person": rs.integers(0, 1200, 3000),
        }
    )
    query = {"m": ("v", ds.Mean(0, 100)), "med": ("v", ds.Median(0, 100))}
    kw: dict[str, Any] = {"by": "g", "keys": [0, 1, 2], "epsilon": 1.0, "rng": 4}
    if unit:
        kw |= {"privacy_unit": "person", "max_rows_per_unit": 2}
    local = ds.release(frame, query, interval="privacy+sampling", **kw).to_pandas()
    remote = ds.release(to_spark(spark, frame), query, interval="privacy+sampling", **kw)
    remote = remote.to_pandas()
    columns = ["g", "m", "m_low", "m_high", "med", "med_low", "med_high"]
    pd.testing.assert_frame_equal(local[columns], remote[columns])
    assert (local["m_high"] - local["m_low"]).min() > 0
