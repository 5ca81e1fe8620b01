"""Shared test configuration: deterministic hypothesis profiles, the local Spark session,
progress-bar fixtures."""

from __future__ import annotations

import io
import os
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "dpsense",
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
# scripts/mutation_check.py: a failing example is enough, shrinking it only costs time
settings.register_profile(
    "mutation",
    parent=settings.get_profile("dpsense"),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
settings.load_profile(os.environ.get("DPSENSE_HYPOTHESIS_PROFILE", "dpsense"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Spark and browser tests form the engines tier (``make test-engines``): each starts
    a JVM or a browser, so the quick tier (``make test``) leaves them out. Every Spark
    test runs in one xdist worker (``--dist loadgroup``): one JVM per run. Without xdist
    (``-p no:xdist``) its ``xdist_group`` marker is not registered, and not added."""
    grouped = config.pluginmanager.hasplugin("xdist")
    for item in items:
        if item.get_closest_marker("spark") or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.engines)
        if grouped and item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The local Spark session (tests/spark_session.py), for tests marked ``spark``;
    skipped without PySpark or Java."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pytest.importorskip("pyspark.sql")
    if shutil.which("java") is None:  # pragma: no cover - CI installs Java
        pytest.skip("Spark needs Java (apt-get install openjdk-17-jre-headless)")
    from tests.spark_session import local_session

    session = local_session()
    yield session
    session.stop()


class FakeTerminal(io.StringIO):
    """A text stream that says it is a terminal, and keeps what was written to it."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Callable[[], FakeTerminal]:
    """Call it in the test body to make ``sys.stderr`` a terminal for the rest of the test.

    (pytest puts its own capture back on ``sys.stderr`` between the setup of the fixtures
    and the test, so the fixture cannot replace the stream itself.) rich draws on the fake
    terminal as on a real one.
    """
    for name in ("TTY_COMPATIBLE", "FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm")

    def install() -> FakeTerminal:
        stream = FakeTerminal()
        monkeypatch.setattr(sys, "stderr", stream)
        return stream

    return install


@pytest.fixture
def rich_tasks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The descriptions of the rich progress-bar tasks started during the test."""
    from rich.progress import Progress

    seen: list[str] = []
    original: Callable[..., Any] = Progress.add_task

    def add_task(self: Progress, description: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(description))
        return original(self, description, *args, **kwargs)

    monkeypatch.setattr(Progress, "add_task", add_task)
    return seen
