"""A local Spark session (2 cores) for the Spark engine's tests; skipped without PySpark or
Java. Spark test modules mark themselves ``spark`` (``pytest -m "not spark"`` leaves them
out); each xdist worker that runs one starts its own local session (the ``spark`` fixture
of tests/conftest.py)."""

from __future__ import annotations

import shutil
import warnings
from typing import Any

import pytest

from dpsense.datasets import make_panel
from tests.spark_session import to_spark as to_spark

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
def frame() -> Any:
    return pd.DataFrame(PANEL)


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
