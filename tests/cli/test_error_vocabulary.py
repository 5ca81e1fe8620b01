"""One message per cause: the same cause gives the same words from ``ds.*`` and from each
command that can meet it, in the caller's words (keyword names in Python, flags on the
command line), without a data value, on one line with exit code 2."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import dpsense as ds
from dpsense.cli import main

SECRET = "987654.25"

Python = Callable[[Path], Any]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "survey.csv"
    path.write_text(f"age,note,wage\n41,a,{SECRET}\n,b,12\n35,c,13\n")
    return path


def _py(call: Python, path: Path) -> str:
    with pytest.raises(ds.InputError) as info:
        call(path)
    return str(info.value)


def _cli(argv: list[str], path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    args = [a.replace("DATA", str(path)) for a in argv]
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    return err


REL = ["release", "DATA", "-s", "mean", "--epsilon", "1"]
SQL = ["sql", "--epsilon", "1"]

# cause -> (the words every caller uses, Python calls, command lines, Python-only words,
# command-line-only words)
CAUSES: dict[str, tuple[str, list[Python], list[list[str]], str, str]] = {
    "missing values": (
        "contains missing values (empty cells, nulls or NaN)|contain missing values "
        "(empty cells, nulls or NaN)",
        [
            lambda p: ds.release(p, ds.Mean(0, 99), column="age", epsilon=1.0),
            lambda p: ds.release(p, {"m": ("age", ds.Mean(0, 99))}, epsilon=1.0),
            lambda p: ds.sql(f"SELECT AVG(age) FROM '{p}'", bounds={"age": (0, 99)}, epsilon=1.0),
            lambda p: ds.private_bounds(p, column="age", epsilon=1.0),
        ],
        [
            [*REL, "-c", "age", "--lower", "0", "--upper", "99"],
            ["sql", "SELECT AVG(age) FROM 'DATA'", "--bounds", "age=0:99", "--epsilon", "1"],
            ["bounds", "DATA", "-c", "age", "--epsilon", "1"],
        ],
        "nulls='drop'",
        "--nulls drop",
    ),
    "text in a numeric column": (
        "must be numeric, but some entries are not numbers",
        [lambda p: ds.release(p, ds.Mean(0, 99), column="note", epsilon=1.0)],
        [[*REL, "-c", "note", "--lower", "0", "--upper", "99"]],
        "schema={'note': 'float'}",
        "--schema note=float",
    ),
    "a missing column": (
        "is not in",
        [
            lambda p: ds.release(p, ds.Mean(0, 99), column="agee", epsilon=1.0),
            lambda p: ds.private_bounds(p, column="agee", epsilon=1.0),
        ],
        [
            [*REL, "-c", "agee", "--lower", "0", "--upper", "99"],
            ["bounds", "DATA", "-c", "agee", "--epsilon", "1"],
        ],
        "column=...",
        "--column",
    ),
    "reversed bounds": (
        "must satisfy lower < upper",
        [lambda p: ds.release(p, ds.Mean(99, 0), column="age", epsilon=1.0)],
        [[*REL, "-c", "age", "--lower", "99", "--upper", "0"]],
        "lower=99",
        "--lower 99, --upper 0",
    ),
    "epsilon not positive": (
        "must be a float in (0, inf)",
        [
            lambda p: ds.release(p, ds.Mean(0, 99), column="age", epsilon=0.0),
            lambda p: ds.private_bounds(p, column="age", epsilon=-1.0),
        ],
        [
            [
                "release",
                "DATA",
                "-s",
                "mean",
                "-c",
                "age",
                "--lower",
                "0",
                "--upper",
                "9",
                "--epsilon",
                "0",
            ],
            ["bounds", "DATA", "-c", "age", "--epsilon", "-1"],
            # the column of these holds a missing value: the request's error comes first
            [
                "release",
                "DATA",
                "-s",
                "mean",
                "-c",
                "age",
                "--lower",
                "0",
                "--upper",
                "9",
                "--epsilon",
                "0",
                "--method",
                "sample-aggregate",
                "--blocks",
                "2",
            ],
        ],
        "The 'epsilon' parameter",
        "--epsilon",
    ),
    "delta outside [0, 1)": (
        "must be a float in [0, 1)",
        [lambda p: ds.release(p, ds.Mean(0, 99), column="age", epsilon=1.0, delta=2.0)],
        [[*REL, "-c", "age", "--lower", "0", "--upper", "9", "--delta", "2"]],
        "The 'delta' parameter",
        "--delta must be",
    ),
    "a quantile level outside (0, 1)": (
        "must be a float in (0, 1). Got 1.5",
        [lambda p: ds.release(p, ds.Quantile(1.5, 0, 99), column="age", epsilon=1.0)],
        [
            [
                *REL[:2],
                "-s",
                "quantile",
                "--p",
                "1.5",
                "-c",
                "age",
                "--lower",
                "0",
                "--upper",
                "99",
                "--epsilon",
                "1",
            ]
        ],
        "The 'p' parameter",
        "--p must be",
    ),
    "an unknown type in the schema": (
        "must be 'int', 'float', 'decimal(p,s)' (e.g. 'decimal(10,2)') or 'text'. Got 'integr'",
        [
            lambda p: ds.release(
                p, ds.Mean(0, 99), column="wage", epsilon=1.0, schema={"wage": "integr"}
            )
        ],
        [[*REL, "-c", "wage", "--lower", "0", "--upper", "99", "--schema", "wage=integr"]],
        "in the 'schema' parameter",
        "in --schema must be",
    ),
    "an unknown rule for missing values": (
        "must be 'error' or 'drop'. Got 'keep'",
        [lambda p: ds.release(p, ds.Mean(0, 99), column="age", epsilon=1.0, nulls="keep")],
        [[*REL, "-c", "age", "--lower", "0", "--upper", "99", "--nulls", "keep"]],
        "The 'nulls' parameter",
        "--nulls must be",
    ),
    "a missing file": (
        "file not found: ",
        [
            lambda p: ds.release(p.with_name("nope.csv"), ds.Mean(0, 9), column="a", epsilon=1.0),
            lambda p: ds.private_bounds(p.with_name("nope.csv"), column="a", epsilon=1.0),
        ],
        [
            [
                "release",
                "NOPE",
                "-s",
                "mean",
                "-c",
                "a",
                "--lower",
                "0",
                "--upper",
                "9",
                "--epsilon",
                "1",
            ],
            ["bounds", "NOPE", "-c", "a", "--epsilon", "1"],
        ],
        "",
        "",
    ),
}


@pytest.mark.parametrize("cause", sorted(CAUSES))
def test_one_cause_one_message_in_the_callers_words(
    cause: str, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words, calls, lines, python_words, cli_words = CAUSES[cause]
    pattern = re.compile("|".join(re.escape(w) for w in words.split("|")))
    nope = str(data.with_name("nope.csv"))
    for call in calls:
        message = _py(call, data)
        assert pattern.search(message), (cause, message)
        assert python_words in message, (cause, message)
        assert "\n" not in message
        assert SECRET not in message
        assert "987654" not in message
    for argv in lines:
        err = _cli([a.replace("NOPE", nope) for a in argv], data, capsys)
        assert pattern.search(err), (cause, err)
        assert cli_words in err, (cause, err)
        # the command line's words: no Python keyword assignment for an existing flag
        assert "nulls='drop'" not in err, err
        assert "column=..." not in err, err
        assert SECRET not in err
        assert "987654" not in err
