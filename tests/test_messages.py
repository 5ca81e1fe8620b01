"""Error messages on data paths reveal nothing about the data.

Under add-remove the number of records is private, and how many entries are bad is a
statistic of the data. Each failure below is provoked on data with a distinctive number of
records, of bad entries and of good ones, and with distinctive values; no digit sequence
of the message (file paths aside) may equal any of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import dpsense as ds
from dpsense.cli import main
from dpsense.data import load_column

ROWS, BAD = 37, 13  # records in the data, bad entries among them
VALUE = 4242.5  # every good record
FORBIDDEN = {str(ROWS), str(BAD), str(ROWS - BAD), "4242", "42", "0"}


def _numbers(message: str) -> set[str]:
    return set(re.findall(r"\d+", message))


def _assert_clean(message: str, path: Path | None = None) -> None:
    text = message.replace(str(path), "<path>") if path is not None else message
    leaked = _numbers(text) & FORBIDDEN
    assert not leaked, f"the message states {sorted(leaked)}: {message}"


def _mixed(bad: object) -> list[object]:
    return [VALUE] * (ROWS - BAD) + [bad] * BAD


def _raises(call: Callable[[], object]) -> str:
    with pytest.raises(ds.InputError) as info:
        call()
    return str(info.value)


MEDIAN = ds.Median(0.0, 10_000.0)

PYTHON_FAILURES: dict[str, Callable[[], object]] = {
    "text entries": lambda: ds.release(_mixed("n/a"), MEDIAN, epsilon=1.0),
    "missing entries": lambda: ds.release(_mixed(None), MEDIAN, epsilon=1.0),
    "NaN": lambda: ds.release(np.array(_mixed(np.nan), dtype=float), MEDIAN, epsilon=1.0),
    "NaN, pass nulls='drop'": lambda: ds.release(_mixed(np.nan), MEDIAN, epsilon=1.0),
    "infinite universe": lambda: ds.empirical_sensitivity(
        np.median, [VALUE] * ROWS, _mixed(np.inf)
    ),
    "substitute, empty": lambda: ds.release([], MEDIAN, epsilon=1.0, neighbours="substitute"),
    "two-dimensional": lambda: ds.release(np.ones((ROWS, 2)), MEDIAN, epsilon=1.0),
    "ksw, text": lambda: ds.release(_mixed("x"), ds.Mean(0, 1e4), epsilon=1.0, method="ksw"),
    "bounded-ls, NaN": lambda: ds.release(
        np.array(_mixed(np.nan)), ds.Mean(0, 1e4), epsilon=1.0, delta=1e-6, method="bounded-ls"
    ),
    "statistic, text": lambda: MEDIAN(_mixed("x")),
    "accountant, NaN": lambda: ds.Accountant(epsilon=1.0).release(
        np.array(_mixed(np.nan)), MEDIAN, epsilon=0.5
    ),
    "load_column, text": lambda: load_column({"age": _mixed("x")}, "age"),
    "load_column, empty, required": lambda: load_column({"age": []}, "age", allow_empty=False),
    "sample_and_aggregate, on_error withdrawn": lambda: ds.sample_and_aggregate(
        [VALUE] * ROWS,
        lambda block: float("nan"),
        blocks=BAD,
        lower=0,
        upper=1e4,
        epsilon=1.0,
        on_error="raise",
    ),
}


@pytest.mark.parametrize("case", list(PYTHON_FAILURES))
def test_python_errors_state_no_counts_or_values(case: str) -> None:
    _assert_clean(_raises(PYTHON_FAILURES[case]))


def _csv(tmp_path: Path, bad: str) -> Path:
    path = tmp_path / "data.csv"
    rows = [f"{VALUE},a"] * (ROWS - BAD) + [f"{bad},b"] * BAD
    path.write_text("age,name\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("bad", ["John Smith", "", "nan", "N/A"])
def test_csv_errors_state_no_counts_or_values(tmp_path: Path, bad: str) -> None:
    path = _csv(tmp_path, bad)
    _assert_clean(_raises(lambda: load_column(path, "age")), path)


def test_short_rows_are_not_counted(tmp_path: Path) -> None:
    path = tmp_path / "short.csv"
    path.write_text("name,age\n" + "a,1\n" * (ROWS - BAD) + "b\n" * BAD, encoding="utf-8")
    _assert_clean(_raises(lambda: load_column(path, "age")), path)


def test_a_malformed_csv_names_no_line(tmp_path: Path) -> None:
    path = tmp_path / "nul.csv"
    path.write_bytes(b"age\n" + b"1\n" * ROWS + b'"\x00\n')
    _assert_clean(_raises(lambda: load_column(path, "age")), path)


@pytest.mark.parametrize("bad", ["John Smith", "nan"])
@pytest.mark.parametrize("command", ["release", "ratio"])
def test_cli_errors_state_no_counts_or_values(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, bad: str, command: str
) -> None:
    path = _csv(tmp_path, bad)
    if command == "release":
        args = ["release", str(path), "--column", "age", "--statistic", "median"]
        args += ["--lower", "0", "--upper", "10000", "--epsilon", "1"]
    else:
        args = ["ratio", str(path), "--numerator", "age", "--epsilon", "1"]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2
    _assert_clean(err + out, path)
