"""The benchmark guard's table (benchmarks/goals.py) is well formed, and the guard fails.

No timing here: the figures are measured by ``make bench-check``. These tests check that
every goal names a baseline, a margin and a benchmark function that exists, that no limit
is looser than today's figure (or the goal) plus its margin, and that a figure past its
limit makes the checker, and the guard's command, fail.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import goals  # noqa: E402
import guard  # noqa: E402


def defined(module: str, function: str) -> bool:
    path = BENCHMARKS / f"{module}.py"
    if not path.exists():
        return False
    tree = ast.parse(path.read_text())
    return any(isinstance(n, ast.FunctionDef) and n.name == function for n in tree.body)


@pytest.mark.parametrize("goal", goals.GOALS, ids=lambda g: g.name)
def test_goal_is_well_formed(goal: goals.Goal) -> None:
    assert goal.what
    assert goal.baseline
    assert goal.source, "say where today's figure and its margin came from"
    assert goal.better in ("lower", "higher")
    assert goal.margin >= 0
    assert all(math.isfinite(v) for v in (goal.goal, goal.margin, goal.limit, goal.today))
    module, function = goal.measured_by.split(".")
    assert defined(module, function), goal.measured_by
    script = goal.command.split()[0]
    assert (BENCHMARKS.parent / script).exists(), goal.command
    # the ratchet: never looser than today's figure (or the goal, once met) plus the margin
    if goal.better == "lower":
        assert goal.limit <= max(goal.today, goal.goal) + goal.margin + 1e-9
        assert goal.passes(goal.today)
    else:
        assert goal.limit >= min(goal.today, goal.goal) - goal.margin - 1e-9
        assert goal.passes(goal.today)


def test_names_are_unique_and_every_figure_is_measured() -> None:
    names = [g.name for g in goals.GOALS]
    assert len(set(names)) == len(names)
    # each goal's figure comes from one of the guard's parts (checked by name in its source)
    source = (BENCHMARKS / "guard.py").read_text()
    for name in names:
        assert f'"{name}"' in source, name


def test_a_figure_past_its_limit_fails() -> None:
    today = {g.name: g.today for g in goals.GOALS}
    lines, ok = goals.check(today)
    assert ok
    assert len(lines) == len(goals.GOALS)
    assert not any(line.endswith("FAIL") for line in lines)
    for goal in goals.GOALS:
        step = goal.margin + 1.0
        past = goal.limit + step if goal.better == "lower" else goal.limit - step
        lines, ok = goals.check({**today, goal.name: past})
        assert not ok, goal.name
        assert [line.split()[0] for line in lines if line.endswith("FAIL")] == [goal.name]
    # a figure that could not be measured fails too, and so does a missing one
    assert not goals.check({**today, goals.GOALS[0].name: math.nan})[1]
    assert not goals.check({})[1]


def test_a_line_prints_figure_goal_margin_limit_and_verdict() -> None:
    goal = dataclasses.replace(goals.GOALS[0], goal=1.0, margin=0.15, limit=1.5, today=1.35)
    line = goal.line(1.4)
    assert line.split() == [
        goal.name, "1.40x", "goal", "<=", "1.00x", "(+0.15)", "limit", "<=", "1.50x", "ok",
        "(goal", "not", "met)",
    ]  # fmt: skip
    assert goal.line(0.9).endswith("ok")
    assert goal.line(1.6).endswith("FAIL")


def test_the_guard_exits_non_zero_on_a_figure_past_its_limit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    worst = goals.GOALS[0]
    fake = {g.name: g.today for g in goals.GOALS}
    fake[worst.name] = worst.limit * 10 + 1
    monkeypatch.setattr(guard, "PARTS", {"fake": lambda size: fake})
    monkeypatch.setattr(sys, "argv", ["guard.py"])
    with pytest.raises(SystemExit) as exit_:
        guard.main()
    assert exit_.value.code == 1
    out = capsys.readouterr().out
    assert f"{worst.name} " in out
    assert "FAIL" in out
    fake[worst.name] = worst.today
    guard.main()  # today's figures pass: no exit
    # the full-size report never fails
    fake[worst.name] = worst.limit * 10 + 1
    monkeypatch.setattr(sys, "argv", ["guard.py", "--full"])
    guard.main()
    assert "misses goal" in capsys.readouterr().out
