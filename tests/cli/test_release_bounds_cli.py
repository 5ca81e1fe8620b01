"""``dpsense release``: --bounds private, inline --keys, long group names, missing bounds."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

import dpsense as ds
import dpsense.cli.tables_io as tables_io
from dpsense._exact_budget import difference_down, product_down
from dpsense.cli import main
from dpsense.cli.tables_io import _key_value, keys_option
from dpsense.datasets import make_panel
from dpsense.query.bounds_step import BOUNDS_SHARE

pd = pytest.importorskip("pandas")

YEARS = (2020, 2021, 2022)
HOURS = ["--column", "hours", "--statistic", "median"]
PERSON = ["--privacy-unit", "person", "--max-rows-per-unit", "2", "--max-groups-per-unit", "3"]
LONG_NAMES = (
    "Agriculture, forestry, fishing and hunting of wild animals in the northern region",
    "Mining",
    "Manufacturing of durable goods for households, offices and public administrations",
)


@pytest.fixture(scope="module")
def panel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "panel.csv"
    pd.DataFrame(make_panel(people=3_000, years=YEARS, seed=4)).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def sectors(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("sectors")
    rs = np.random.default_rng(0)
    data = pd.DataFrame({"g": rs.choice(LONG_NAMES, 3_000), "v": rs.integers(0, 100, 3_000)})
    data.to_csv(folder / "sectors.csv", index=False)
    pd.DataFrame({"g": LONG_NAMES}).to_csv(folder / "keys.csv", index=False)
    return folder / "sectors.csv", folder / "keys.csv"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# -- --bounds private --------------------------------------------------------------------
def test_bounds_private_json(capsys: pytest.CaptureFixture[str], panel: Path) -> None:
    code, out, err = run(
        capsys, "release", str(panel), *HOURS, "--bounds", "private", "--epsilon", "4",
        "--seed", "1", "--json",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    eps_b = product_down(BOUNDS_SHARE, 4.0)
    assert payload["epsilon"] == 4.0
    bounds = payload["parameters"]["bounds"]
    assert bounds["source"] == "private"
    assert bounds["epsilon"] == eps_b
    assert payload["parameters"]["release"]["epsilon"] == difference_down(4.0, eps_b)
    assert bounds["lower"] <= payload["value"] <= bounds["upper"]
    # hours are 1..80: within the mechanism's width factor 2^5 of the data
    assert bounds["upper"] <= 128.0 * 2**5


def test_bounds_private_receipt_in_words(capsys: pytest.CaptureFixture[str], panel: Path) -> None:
    code, out, err = run(
        capsys, "release", str(panel), *HOURS, "--bounds", "private", "--bounds-share", "0.5",
        "--epsilon", "4", "--seed", "1",
    )  # fmt: skip
    assert code == 0, err
    assert "found privately with epsilon=2" in out
    assert "epsilon=4, delta=0" in out  # the guarantee is the total


def test_bounds_private_grouped_is_one_charge(
    capsys: pytest.CaptureFixture[str], panel: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "budget.db"
    assert main(["budget", "init", str(ledger), "--epsilon", "10"]) == 0
    code, out, err = run(
        capsys, "release", str(panel), *HOURS, *PERSON, "--bounds", "private",
        "--epsilon", "8", "--by", "year", "--keys", "year=2020,2021,2022",
        "--ledger", str(ledger), "--seed", "2",
    )  # fmt: skip
    assert code == 0, err
    assert "found privately over the whole column" in " ".join(out.split())
    code, out, err = run(capsys, "budget", "show", str(ledger), "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert [c["epsilon"] for c in shown["charges"]] == [8.0]
    assert shown["spent_epsilon"] == 8.0


def test_bounds_private_from_standard_input(
    capsys: pytest.CaptureFixture[str], panel: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Standard input is read once: both steps read the same copy of it."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(panel.read_bytes())))
    code, out, err = run(
        capsys, "release", "-", *HOURS, "--bounds", "private", "--epsilon", "4", "--seed", "1",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    code, again, err = run(
        capsys, "release", str(panel), *HOURS, "--bounds", "private", "--epsilon", "4",
        "--seed", "1", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["value"] == json.loads(again)["value"]


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        ([], ("--lower", "--upper", "--bounds private", "--bounds-share")),
        (["--lower", "0"], ("--upper is missing", "--bounds private")),
        (["--upper", "9"], ("--lower is missing", "--bounds private")),
        (["--bounds", "private", "--lower", "0"], ("--lower and --upper, or --bounds private",)),
        (["--bounds-share", "0.3"], ("--bounds-share", "--bounds private")),
        (["--bounds", "auto"], ("--bounds takes 'private'",)),
        (["--bounds", "private", "--bounds-share", "1.5"], ("--bounds-share", "(0, 1)")),
        (["--bounds", "private", "--method", "sample-aggregate"], ("--lower and --upper",)),
    ],
)
def test_bound_errors_name_the_options(
    capsys: pytest.CaptureFixture[str], panel: Path, extra: list[str], needles: tuple[str, ...]
) -> None:
    code, out, err = run(capsys, "release", str(panel), *HOURS, "--epsilon", "1", *extra)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err


def test_count_takes_no_bounds(capsys: pytest.CaptureFixture[str], panel: Path) -> None:
    count = ["-c", "hours", "-s", "count", "--epsilon", "1"]
    code, _, err = run(capsys, "release", str(panel), *count, "--bounds", "private")
    assert code == 2
    assert "needs no bounds: drop --bounds private" in err
    code, _, err = run(capsys, "release", str(panel), *count)
    assert code == 0, err


def test_analyze_names_the_missing_bound(capsys: pytest.CaptureFixture[str], panel: Path) -> None:
    code, _, err = run(capsys, "analyze", str(panel), *HOURS, "--lower", "0")
    assert code == 2
    assert "--upper is missing: pass --lower L --upper U" in err


# -- --keys inline -----------------------------------------------------------------------
def _groups(capsys: pytest.CaptureFixture[str], panel: Path, keys: str) -> list[dict[str, Any]]:
    code, out, err = run(
        capsys, "release", str(panel), *HOURS, "--lower", "0", "--upper", "80",
        "--epsilon", "1", "--by", "year", "--keys", keys, "--seed", "5", "--json",
    )  # fmt: skip
    assert code == 0, err
    groups: list[dict[str, Any]] = json.loads(out)["groups"]
    return groups


def test_inline_keys_equal_a_keys_file(
    capsys: pytest.CaptureFixture[str], panel: Path, tmp_path: Path
) -> None:
    file = tmp_path / "years.csv"
    file.write_text("year\n2022\n2020\n1999\n", encoding="utf-8")
    from_file = _groups(capsys, panel, str(file))
    named = _groups(capsys, panel, "year=2022,2020,1999")
    bare = _groups(capsys, panel, "2022, 2020, 1999")
    assert from_file == named == bare
    assert [g["year"] for g in named] == [2022, 2020, 1999]  # ints stay ints, in order
    assert all(isinstance(g["year"], int) for g in named)


def test_inline_text_keys(capsys: pytest.CaptureFixture[str], panel: Path) -> None:
    code, out, err = run(
        capsys, "release", str(panel), *HOURS, "--lower", "0", "--upper", "80",
        "--epsilon", "1", "--by", "region", "--keys", "region=north,south,mars", "--json",
    )  # fmt: skip
    assert code == 0, err
    groups = json.loads(out)["groups"]
    assert [g["region"] for g in groups] == ["north", "south", "mars"]
    assert all(g["value"] is not None for g in groups)  # absent groups are released too


def test_an_existing_file_wins(
    capsys: pytest.CaptureFixture[str], panel: Path, tmp_path: Path
) -> None:
    odd = tmp_path / "year=2020,2021"
    odd.write_text("year\n2022\n", encoding="utf-8")
    assert [g["year"] for g in _groups(capsys, panel, str(odd))] == [2022]


@pytest.mark.parametrize(
    ("keys", "by", "needle"),
    [
        ("years.csv", "year", "The keys file 'years.csv' does not exist"),
        ("2020", "year", "--keys year=A,B"),
        ("region=north,south", "year", "must have the group columns 'year'; it has 'region'"),
        ("year=2020,2021", "year,region", "several"),
        ("year=2020,,2021", "year", "empty value"),
        ("year=2020,2020", "year", "more than once"),
    ],
)
def test_inline_key_errors(
    capsys: pytest.CaptureFixture[str], panel: Path, keys: str, by: str, needle: str
) -> None:
    code, _, err = run(
        capsys, "release", str(panel), *HOURS, "--lower", "0", "--upper", "80",
        "--epsilon", "1", "--by", by, "--keys", keys,
    )  # fmt: skip
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1980", 1980),
        ("-3", -3),
        ("0", 0),
        ("2.5", 2.5),
        ("01980", "01980"),  # a code with a leading zero stays text
        ("2.50", "2.50"),
        ("1e3", "1e3"),
        ("north", "north"),
        ("nan", "nan"),
    ],
)
def test_inline_key_values_are_read_from_the_option_alone(text: str, value: object) -> None:
    got = _key_value(text)
    assert got == value
    assert type(got) is type(value)


def test_keys_option_reads_a_file(tmp_path: Path) -> None:
    file = tmp_path / "k.csv"
    file.write_text("g,other\na,1\nb,2\n", encoding="utf-8")
    assert keys_option(str(file), ("g",)) == [("a",), ("b",)]


# -- long group names ----------------------------------------------------------------------
def test_long_group_names_stay_on_one_line_in_a_pipe(
    capsys: pytest.CaptureFixture[str],
    sectors: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Written to a pipe with a narrow COLUMNS, every group is one line with its full name
    and its value: no wrapped part of a name on a line of its own (a phantom group)."""
    monkeypatch.setenv("COLUMNS", "60")
    data, keys = sectors
    code, out, err = run(
        capsys, "release", str(data), "-c", "v", "-s", "median", "--lower", "0", "--upper",
        "100", "--epsilon", "1", "--by", "g", "--keys", str(keys), "--seed", "1",
    )  # fmt: skip
    assert code == 0, err
    rows = [line for line in out.splitlines() if "exponential-mechanism" in line]
    assert len(rows) == len(LONG_NAMES)
    for name, row in zip(LONG_NAMES, rows, strict=True):
        assert name in row
    body = out.split("━")[-1].split("3 groups")[0]
    assert [line for line in body.splitlines() if line.strip()] == rows  # nothing else


def test_long_group_names_on_a_narrow_terminal_are_ruled_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a terminal narrower than the table, a name may wrap, but rows are ruled off: each
    block between rules holds one group, its whole name and one value."""
    frame = pd.DataFrame({"g": list(LONG_NAMES) * 200, "v": np.arange(600) % 100})
    with pytest.warns(ds.SeededRandomnessWarning):
        result = ds.release(
            frame, ds.Median(0, 100), column="v", by="g", keys=list(LONG_NAMES), epsilon=1.0, rng=1
        )
    assert isinstance(result, ds.GroupedRelease)
    screen = io.StringIO()

    def narrow() -> Console:
        return Console(
            file=screen, width=60, force_terminal=True, color_system=None, markup=False,
            highlight=False, emoji=False,
        )  # fmt: skip

    monkeypatch.setattr(tables_io, "_console", narrow)
    tables_io.emit_grouped(result, False, "v")
    text = screen.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 60
    table = text[: text.index("3 groups (public keys)")]
    lines = table.splitlines()
    header = next(i for i, line in enumerate(lines) if "value" in line)
    name_end = lines[header].index("value")  # the name column ends before the value's
    blocks: list[list[str]] = []
    for line in lines[header + 1 :]:
        if set(line.strip()) <= {"─"}:  # a rule (or blank): a new row begins
            blocks.append([])
        else:
            blocks[-1].append(line)
    blocks = [b for b in blocks if b]
    assert len(blocks) == len(LONG_NAMES)
    for name, block in zip(LONG_NAMES, blocks, strict=True):
        # the name cell of each line (other cells, e.g. "(95%)", may wrap too)
        cells = [line[:name_end].strip() for line in block]
        assert " ".join(cell for cell in cells if cell) == name
        assert sum(1 for line in block if "exponent" in line) == 1


# -- with the public schema ------------------------------------------------------------------
def test_bounds_private_with_a_declared_integer_type(
    capsys: pytest.CaptureFixture[str], panel: Path, tmp_path: Path
) -> None:
    """--bounds private with --schema hours=int on a CSV, and on a Parquet file whose
    column is BIGINT: the release is on the integers between the private bounds."""
    parquet = tmp_path / "panel.parquet"
    pd.read_csv(panel).to_parquet(parquet)
    for data, extra, where in (
        (panel, ["--schema", "hours=int"], "schema argument: int"),
        (parquet, [], "schema: BIGINT"),
    ):
        code, out, err = run(
            capsys, "release", str(data), *HOURS, *extra, "--bounds", "private",
            "--epsilon", "4", "--seed", "1", "--json",
        )  # fmt: skip
        assert code == 0, err
        payload = json.loads(out)
        assert payload["parameters"]["resolution"] == 1.0
        assert payload["parameters"]["resolution_source"] == where
        assert payload["parameters"]["bounds"]["source"] == "private"
        assert float(payload["value"]).is_integer()
