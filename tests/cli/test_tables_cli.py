"""``dpsense release`` on tables: --by, --keys, --privacy-unit, --output, stdin, errors."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from dpsense.cli import main
from dpsense.datasets import make_panel

pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")

GROUP_KEYS = {"value", "refused"}


@pytest.fixture(scope="module")
def panel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "panel.csv"
    pd.DataFrame(make_panel(people=300, years=(2020, 2021, 2022), seed=4)).to_csv(path, index=False)
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


MEDIAN = ["--column", "hours", "--statistic", "median", "--lower", "0", "--upper", "80"]
PERSON = ["--privacy-unit", "person", "--max-rows-per-unit", "2", "--max-groups-per-unit", "3"]
BY_YEAR = [*MEDIAN, *PERSON, "--epsilon", "1", "--delta", "1e-6", "--by", "year"]
"""The panel's median hours by year, per person (m = 2 rows, g = 3 years)."""


def test_grouped_json_contract(capsys: pytest.CaptureFixture[str], panel: Path) -> None:
    # a CSV's undeclared by-column is grouped as text (its inferred type is not public)
    options = "--schema year=int --seed 3 --json"
    code, out, err = run(capsys, "release", str(panel), *BY_YEAR, *options.split())
    assert code == 0, err
    payload = json.loads(out)
    assert {"epsilon", "delta", "by", "groups"} <= set(payload)
    assert payload["by"] == ["year"]
    assert [g["year"] for g in payload["groups"]] == [2020, 2021, 2022]
    code, out, err = run(capsys, "release", str(panel), *BY_YEAR, "--seed", "3", "--json")
    assert code == 0, err
    assert [g["year"] for g in json.loads(out)["groups"]] == ["2020", "2021", "2022"]
    for group in payload["groups"]:
        assert set(group) >= GROUP_KEYS
        assert 0 <= group["value"] <= 80


def test_table_on_screen_and_keys_file(
    capsys: pytest.CaptureFixture[str], panel: Path, tmp_path: Path
) -> None:
    keys = tmp_path / "years.csv"
    keys.write_text("year\n2022\n2019\n")
    code, out, err = run(
        capsys,
        "release",
        str(panel),
        "--column",
        "hours",
        "--statistic",
        "count",
        "--epsilon",
        "1",
        "--by",
        "year",
        "--keys",
        str(keys),
        *PERSON,
        "--seed",
        "1",
    )
    assert code == 0, err
    assert out.index("2022") < out.index("2019")  # the keys file's order
    assert "public keys" in out
    assert "epsilon=0.5" in out  # two keys: each year gets half (not a third)


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".json"])
def test_output_file_written_whole(
    capsys: pytest.CaptureFixture[str], panel: Path, tmp_path: Path, suffix: str
) -> None:
    target = tmp_path / f"out{suffix}"
    options = "--resolution 1 --schema year=int --seed 5 --output"
    code, _, err = run(capsys, "release", str(panel), *BY_YEAR, *options.split(), str(target))
    assert code == 0, err
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary left
    if suffix == ".json":
        rows = json.loads(target.read_text())
    else:
        rows = duckdb.sql(f"SELECT * FROM '{target}'").df().to_dict("records")
    assert [r["year"] for r in rows] == [2020, 2021, 2022]
    assert all(0 <= r["value"] <= 80 for r in rows)


def test_standard_input(
    capsys: pytest.CaptureFixture[str], panel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(panel.read_bytes())))
    code, out, err = run(
        capsys,
        "release",
        "-",
        "--column",
        "hours",
        "--statistic",
        "mean",
        "--lower",
        "0",
        "--upper",
        "80",
        "--epsilon",
        "1",
        "--json",
    )
    assert code == 0, err
    assert 0 <= json.loads(out)["value"] <= 80


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--by", "year"], "delta"),
        (["--by", "county", "--delta", "1e-6"], "by"),
        (["--privacy-unit", "id"], "--privacy-unit"),
        (["--max-rows-per-unit", "2"], "privacy"),
        (["--privacy-unit", "person", "--max-rows-per-unit", "0"], "--max-rows-per-unit"),
        (["--by", "year", "--keys", "nope.csv"], "does not exist"),
        (["--nulls", "sometimes"], "nulls"),
        (["--by", "year", "--keys", "KEYS", "--neighbours", "substitute"], "add-remove"),
        (["--output", "out.txt", "--privacy-unit", "person"], "--output"),
    ],
)
def test_bad_table_options_exit_2(
    capsys: pytest.CaptureFixture[str], panel: Path, tmp_path: Path, extra: list[str], needle: str
) -> None:
    keys = tmp_path / "k.csv"
    keys.write_text("year\n2020\n")
    extra = [str(keys) if e == "KEYS" else e for e in extra]
    extra = [str(tmp_path / e) if e == "out.txt" else e for e in extra]
    code, _out, err = run(capsys, "release", str(panel), *MEDIAN, "--epsilon", "1", *extra)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err
    assert not list(tmp_path.glob("out*"))
