"""Shared test configuration: deterministic hypothesis profiles, progress-bar fixtures."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Spark and browser tests form the engines tier (``make test-engines``): each starts
    a JVM or a browser, so the quick tier (``make test``) leaves them out."""
    for item in items:
        if item.get_closest_marker("spark") or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.engines)


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
