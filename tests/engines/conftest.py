"""The engine under test: DuckDB always; Spark (the engines tier) when PySpark and Java
are there."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark.sql")
    if shutil.which("java") is None:  # pragma: no cover - CI installs Java
        pytest.skip("Spark needs Java (apt-get install openjdk-17-jre-headless)")
    from tests.spark_session import local_session

    session = local_session()
    yield session
    session.stop()
