"""Progress bars (dpsense._progress): drawn on a terminal only, never on stdout."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable

import pytest

from dpsense._progress import ProgressBar, is_terminal, show_progress, track
from tests.conftest import FakeTerminal


class Closed(io.StringIO):
    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


def test_is_terminal() -> None:
    assert is_terminal(FakeTerminal())
    assert not is_terminal(io.StringIO())
    assert not is_terminal(None)
    assert not is_terminal(Closed())


def test_show_progress_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert not sys.stderr.isatty()
    assert not show_progress(None)
    assert show_progress(True)
    assert not show_progress(False)


def test_show_progress_on_a_terminal(terminal: Callable[[], FakeTerminal]) -> None:
    terminal()
    assert show_progress(None)
    assert not show_progress(None, large=False)
    assert not show_progress(False)


def test_track_draws_nothing_off_a_terminal(
    capsys: pytest.CaptureFixture[str], rich_tasks: list[str]
) -> None:
    assert list(track(range(5), "Counting")) == [0, 1, 2, 3, 4]
    assert rich_tasks == []
    assert capsys.readouterr() == ("", "")


def test_track_draws_a_bar_on_a_terminal(
    terminal: Callable[[], FakeTerminal], rich_tasks: list[str]
) -> None:
    stderr = terminal()
    assert list(track(range(5), "Counting")) == [0, 1, 2, 3, 4]
    assert rich_tasks == ["Counting"]
    assert "Counting" in stderr.getvalue()


def test_track_without_background_refresh(
    terminal: Callable[[], FakeTerminal], rich_tasks: list[str]
) -> None:
    stderr = terminal()
    assert list(track(iter("abc"), "Letters", total=3, auto_refresh=False)) == ["a", "b", "c"]
    assert rich_tasks == ["Letters"]
    assert "Letters" in stderr.getvalue()


def test_forced_bar_uses_rich_but_not_stdout(
    capsys: pytest.CaptureFixture[str], rich_tasks: list[str]
) -> None:
    assert list(track(range(3), "Forced", progress=True)) == [0, 1, 2]
    assert rich_tasks == ["Forced"]
    assert capsys.readouterr().out == ""


def test_redirected_stdout_keeps_its_lines(
    capsys: pytest.CaptureFixture[str], terminal: Callable[[], FakeTerminal]
) -> None:
    # stderr is a terminal, stdout is not (a file): printed lines must reach stdout
    stderr = terminal()
    for i in track(range(3), "Printing"):
        print(f"line {i}")
    assert capsys.readouterr().out == "line 0\nline 1\nline 2\n"
    assert "line" not in stderr.getvalue()
    assert "Printing" in stderr.getvalue()


def test_a_hidden_bar_ignores_calls() -> None:
    bar = ProgressBar(False)
    with bar.running() as same:
        same.task("Nothing", 3)
        same.advance(3)
    assert bar._bar is None


def test_one_bar_at_a_time(terminal: Callable[[], FakeTerminal], rich_tasks: list[str]) -> None:
    stderr = terminal()
    for _ in track(range(2), "Outer"):
        assert list(track(range(3), "Inner")) == [0, 1, 2]
    assert rich_tasks == ["Outer"]
    assert "Inner" not in stderr.getvalue()
    assert list(track(range(1), "After")) == [0]  # the screen is free again
    assert rich_tasks == ["Outer", "After"]
