"""Transient progress bars on stderr, shown on a terminal only.

The loops a user waits on report through this module: the sensitivity explorer, the
histogram audit and the benchmark scripts. A bar is drawn by rich on stderr and erased
when the loop ends. ``progress=None`` (the default everywhere) draws one only when stderr
is a terminal, so tests, pipes and CI logs never see one; ``True`` forces a bar and
``False`` never draws one. While a bar runs, lines printed to stdout go above it when
stdout is a terminal too, and straight to stdout otherwise (a redirected stdout keeps
every line). One bar at a time: a loop that runs inside another's bar (the explorer
inside a benchmark, say) draws none.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sized
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar

__all__ = ["ProgressBar", "is_terminal", "show_progress", "track"]

T = TypeVar("T")

_on_screen = False
"""Whether a bar is being drawn (rich draws one live display at a time)."""


def is_terminal(stream: TextIO | None) -> bool:
    """Whether ``stream`` is an interactive terminal (False if it is missing or closed)."""
    if stream is None:
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # an object without isatty, or a closed file
        return False


def show_progress(progress: bool | None, *, large: bool = True) -> bool:
    """Whether to draw a bar: ``progress`` when given, else ``large`` and stderr a terminal."""
    if progress is not None:
        return bool(progress)
    return large and is_terminal(sys.stderr)


class ProgressBar:
    """A transient rich progress bar on stderr, or nothing.

    With ``auto_refresh=False`` the bar is redrawn only when it advances (no background
    thread), for loops that time their own work.
    """

    def __init__(self, show: bool, *, auto_refresh: bool = True) -> None:
        self.show = show
        self.auto_refresh = auto_refresh
        self._bar: Any = None
        self._task: Any = None

    @contextmanager
    def running(self) -> Iterator[ProgressBar]:
        global _on_screen
        if not self.show or _on_screen:
            yield self
            return
        from rich.console import Console
        from rich.progress import Progress

        with Progress(
            transient=True,
            console=Console(stderr=True, soft_wrap=True),
            auto_refresh=self.auto_refresh,
            redirect_stdout=is_terminal(sys.stdout),
        ) as bar:
            self._bar, _on_screen = bar, True
            try:
                yield self
            finally:
                self._bar, _on_screen = None, False

    def task(self, description: str, total: int | None) -> None:
        if self._bar is not None:
            self._task = self._bar.add_task(description, total=total)
            self._refresh()

    def advance(self, amount: int) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task, amount)
            self._refresh()

    def _refresh(self) -> None:
        if not self.auto_refresh:
            self._bar.refresh()


def track(
    items: Iterable[T],
    description: str,
    *,
    total: int | None = None,
    progress: bool | None = None,
    auto_refresh: bool = True,
) -> Iterator[T]:
    """Yield ``items``, advancing a transient bar by one after each (see :func:`show_progress`).

    ``total`` defaults to ``len(items)`` when ``items`` has a length.
    """
    if total is None and isinstance(items, Sized):
        total = len(items)
    bar = ProgressBar(show_progress(progress), auto_refresh=auto_refresh)
    with bar.running():
        bar.task(description, total)
        for item in items:
            yield item
            bar.advance(1)
