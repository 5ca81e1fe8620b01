"""A local Spark session (2 cores) for the Spark engine's tests; skipped without PySpark or
Java. Spark test modules mark themselves ``spark`` (``pytest -m "not spark"`` leaves them
out); each xdist worker that runs one starts its own local session."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from dpsense.datasets import make_panel
from tests.spark_session import local_session

pd = pytest.importorskip("pandas")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pyspark_sql = pytest.importorskip("pyspark.sql")

if shutil.which("java") is None:  # pragma: no cover - CI installs Java
    pytest.skip(
        "Spark needs Java (apt-get install openjdk-17-jre-headless)", allow_module_level=True
    )

PANEL = make_panel(people=300, years=(2019, 2020, 2021, 2022), seed=5)


@pytest.fixture(autouse=True)
def _quiet_seeds() -> None:
    warnings.simplefilter("ignore")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = local_session()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def frame() -> Any:
    return pd.DataFrame(PANEL)


def to_spark(spark: Any, frame: Any) -> Any:
    """The pandas frame as a Spark DataFrame with an explicit schema (no pandas round trip)."""
    from pyspark.sql import types as st

    kinds = {"i": st.LongType(), "f": st.DoubleType()}
    fields = [
        st.StructField(str(c), kinds.get(frame[c].dtype.kind, st.StringType()))
        for c in frame.columns
    ]
    rows = [
        tuple(None if pd.isna(v) else (v.item() if hasattr(v, "item") else v) for v in row)
        for row in frame.itertuples(index=False)
    ]
    return spark.createDataFrame(rows, st.StructType(fields))
