"""A local Spark session (2 cores) for the Spark engine's tests; skipped without PySpark or
Java. Spark test modules mark themselves ``spark`` (``pytest -m "not spark"`` leaves them
out); each xdist worker that runs one starts its own local session (the ``spark`` fixture
of tests/conftest.py)."""

from __future__ import annotations

import shutil
import warnings
from typing import Any

import pytest

from tests.spark_session import to_spark as to_spark
from tests.tables.panel import _quiet_seeds as _quiet_seeds
from tests.tables.panel import frame as frame

pd = pytest.importorskip("pandas")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pyspark_sql = pytest.importorskip("pyspark.sql")

if shutil.which("java") is None:  # pragma: no cover - CI installs Java
    pytest.skip(
        "Spark needs Java (apt-get install openjdk-17-jre-headless)", allow_module_level=True
    )


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Groups of more than 40 distinct values are held; every SparkGroups (histogram kept in
    Spark) and SparkRowGroups (rows kept in Spark, every row a unit) made is listed."""
    from dpsense.tables.engines.spark import groups as spark_groups
    from dpsense.tables.engines.spark.held import SparkRowGroups

    made: list[Any] = []
    monkeypatch.setattr(spark_groups, "STREAM_DISTINCT", 40)
    for cls in (spark_groups.SparkGroups, SparkRowGroups):

        def spy(self: Any, *args: Any, original: Any = cls.__init__) -> None:
            original(self, *args)
            made.append(self)

        monkeypatch.setattr(cls, "__init__", spy)
    return made
