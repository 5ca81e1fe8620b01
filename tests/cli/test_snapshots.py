"""Snapshots of what the command line shows: every command's help and six receipts (a
seeded release, a seeded release by groups, two seeded queries by groups, seeded private
bounds, a plan), at a fixed width. A
change to any of them shows here as a diff to read; when it is meant, rewrite the files
with ``DPSENSE_UPDATE_SNAPSHOTS=1 pytest tests/cli/test_snapshots.py``."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from dpsense.cli import main

SNAPSHOTS = Path(__file__).parent / "snapshots"
CENSUS = Path(__file__).resolve().parents[2] / "src" / "dpsense" / "datasets" / "census.csv"

HELP = [
    "release", "analyze", "explore", "bounds", "ratio", "sql", "plan", "audit", "report",
    "budget init", "budget show", "lab", "demo", "caps",
]  # fmt: skip
RECEIPTS = {
    "release_median": [
        "release", "CENSUS", "-c", "age", "-s", "median", "--lower", "0", "--upper", "100",
        "--epsilon", "1", "--seed", "3",
    ],
    "sql_by_sex": [
        "sql", "SELECT sex, COUNT(*) AS n, AVG(hours_per_week) AS hours FROM 'CENSUS' "
        "GROUP BY sex", "--bounds", "hours_per_week=0:99", "--keys", "sex=Female,Male",
        "--epsilon", "1", "--seed", "3",
    ],
    "bounds_income": ["bounds", "CENSUS", "-c", "income", "--epsilon", "0.5", "--seed", "3"],
    "release_mean_by_sex": [
        "release", "CENSUS", "-c", "hours_per_week", "-s", "mean", "--lower", "0", "--upper",
        "99", "--by", "sex", "--keys", "sex=Female,Male", "--epsilon", "1", "--seed", "3",
    ],
    "sql_quantiles_by_sex": [
        "sql", "SELECT sex, MEDIAN(age) AS med, QUANTILE_CONT(income, 0.9) AS p90 FROM "
        "'CENSUS' GROUP BY sex", "--bounds", "age=0:100", "--bounds", "income=0:200000",
        "--keys", "sex=Female,Male", "--epsilon", "1", "--seed", "3",
    ],
    "plan_by_sex": [
        "plan", "SELECT sex, COUNT(*) AS n, MEDIAN(age) AS med, AVG(income) AS inc FROM "
        "'CENSUS' GROUP BY sex", "--bounds", "age=0:100", "--bounds", "income=0:200000",
        "--keys", "sex=Female,Male", "--epsilon", "1", "--rows-per-group", "3000",
    ],
}  # fmt: skip


def _shown(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 0
    out = capsys.readouterr()[0]
    out = out.replace(str(CENSUS), "census.csv")
    return re.sub(r"[ \t]+\n", "\n", out)  # trailing spaces are the table's padding


def _check(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("DPSENSE_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}: run with DPSENSE_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed (see the diff)"


@pytest.fixture(autouse=True)
def _fixed_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.mark.parametrize("command", HELP)
def test_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    _check("help_" + command.replace(" ", "_"), _shown([*command.split(), "--help"], capsys))


@pytest.mark.parametrize("name", sorted(RECEIPTS))
def test_receipt(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.replace("CENSUS", str(CENSUS)) for a in RECEIPTS[name]]
    _check(name, _shown(argv, capsys))
