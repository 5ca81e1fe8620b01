"""One message per cause: the same cause gives the same words from ``ds.*`` and from each
command that can meet it, in the caller's words (keyword names in Python, flags on the
command line), without a data value, on one line with exit code 2."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpsense as ds
from dpsense.cli import main
from dpsense.data import load_column
from dpsense.statistics import make_statistic

SECRET = "987654.25"

Python = Callable[[Path], Any]
Line = list[str] | tuple[list[str], str]
"""A command line, or a command line and its own words (a command without the option the
others name)."""


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "survey.csv"
    path.write_text(f"age,note,wage,y\n41,a,{SECRET},1\n,b,12,0\n35,c,13,1\n")
    return path


def _py(call: Python, path: Path) -> str:
    with pytest.raises(ds.DPSenseError) as info:
        call(path)
    return str(info.value)


def _cli(argv: list[str], path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    keys = path.with_name("keys.csv")
    keys.write_text("other\na\n")
    places = {
        "DATA": path,
        "NOLEDGER": path.with_name("nope.db"),
        "LEDGER": path.with_name("new.db"),
        "KEYS": keys,
        "OUT": path.with_name("r.html"),
    }
    args = list(argv)
    for word, place in places.items():
        args = [a.replace(word, str(place)) for a in args]
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    return err


REL = ["release", "DATA", "-s", "mean", "--epsilon", "1"]
ANALYZE = ["analyze", "DATA", "-s", "mean", "--lower", "0", "--upper", "99"]
EXPLORE = ["explore", "DATA", "--universe", "0,1,2"]
INLINE = ["--keys", "other=a"]
EPSILON_ZERO = [*REL[:4], "-c", "age", "--lower", "0", "--upper", "9", "--epsilon", "0"]
SQL_REST = ["--bounds", "wage=0:9", "--epsilon", "1"]
AUDIT = ["audit", "math:fabs", "--x", "DATA", "--x-prime", "DATA", "--epsilon", "1"]
SQL = ["sql", "--epsilon", "1"]

# cause -> (the words every caller uses, Python calls, command lines, Python-only words,
# command-line-only words)
CAUSES: dict[str, tuple[str, list[Python], list[Line], str, str]] = {
    "missing values": (
        "contains missing values (empty cells, nulls or NaN)|contain missing values "
        "(empty cells, nulls or NaN)",
        [
            lambda p: ds.release(p, ds.Mean(0, 99), column="age", epsilon=1.0),
            lambda p: ds.release(p, {"m": ("age", ds.Mean(0, 99))}, epsilon=1.0),
            lambda p: ds.sql(f"SELECT AVG(age) FROM '{p}'", bounds={"age": (0, 99)}, epsilon=1.0),
            lambda p: ds.private_bounds(p, column="age", epsilon=1.0),
            lambda p: load_column(p, "age"),
        ],
        [
            [*REL, "-c", "age", "--lower", "0", "--upper", "99"],
            ["sql", "SELECT AVG(age) FROM 'DATA'", "--bounds", "age=0:99", "--epsilon", "1"],
            ["bounds", "DATA", "-c", "age", "--epsilon", "1"],
            [*ANALYZE, "-c", "age"],
            [*EXPLORE, "-c", "age"],
            [*AUDIT, "-c", "age"],
        ],
        "nulls='drop'",
        "--nulls drop",
    ),
    "text in a numeric column": (
        "must be numeric, but some entries are not numbers",
        [
            lambda p: ds.release(p, ds.Mean(0, 99), column="note", epsilon=1.0),
            lambda p: load_column(p, "note"),
        ],
        [
            [*REL, "-c", "note", "--lower", "0", "--upper", "99"],
            # no --schema on these: the way out they cannot take is not offered
            ([*ANALYZE, "-c", "note"], "or choose a numeric column."),
            ([*EXPLORE, "-c", "note"], "or choose a numeric column."),
            ([*AUDIT, "-c", "note"], "or choose a numeric column."),
        ],
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
            [*ANALYZE, "-c", "agee"],
            [*EXPLORE, "-c", "agee"],
            [*AUDIT, "-c", "agee"],
            (["ratio", "DATA", "--numerator", "agee", "--epsilon", "1"], "--numerator ..."),
            (
                ["ratio", "DATA", "--numerator", "y", "--denominator", "agee", "--epsilon", "1"],
                "--denominator ...",
            ),
        ],
        "column=...",
        "--column ...",
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
            lambda p: ds.private_ratio(3, 10, epsilon=0.0),
            lambda p: ds.Accountant(epsilon=0.0, ledger=p.with_name("l.db")),
        ],
        [
            EPSILON_ZERO,
            ["bounds", "DATA", "-c", "age", "--epsilon", "-1"],
            [*ANALYZE, "-c", "wage", "--epsilon", "0"],
            ["audit", "math:fabs", "--x", "DATA", "--x-prime", "DATA", "--epsilon", "0"],
            ["budget", "init", "LEDGER", "--epsilon", "0"],
            # the column of these holds a missing value or text: the request's error first
            ["ratio", "DATA", "--numerator", "note", "--epsilon", "0"],
            [*EPSILON_ZERO, "--method", "sample-aggregate", "--blocks", "2"],
        ],
        "The 'epsilon' parameter",
        "--epsilon",
    ),
    "delta outside [0, 1)": (
        "must be a float in [0, 1)",
        [
            lambda p: ds.release(p, ds.Mean(0, 99), column="age", epsilon=1.0, delta=2.0),
            lambda p: ds.private_ratio(3, 10, epsilon=1.0, delta=2.0),
            lambda p: ds.Accountant(epsilon=1.0, delta=2.0, ledger=p.with_name("l.db")),
        ],
        [
            [*REL, "-c", "age", "--lower", "0", "--upper", "9", "--delta", "2"],
            ["ratio", "DATA", "--numerator", "note", "--epsilon", "1", "--delta", "2"],
            [*ANALYZE, "-c", "wage", "--delta", "2"],
            [
                "audit",
                "math:fabs",
                "--x",
                "DATA",
                "--x-prime",
                "DATA",
                "--epsilon",
                "1",
                "--delta",
                "2",
            ],
            ["budget", "init", "LEDGER", "--epsilon", "1", "--delta", "2"],
        ],
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
            ],
            [
                *ANALYZE[:2],
                "-s",
                "quantile",
                "--p",
                "1.5",
                "-c",
                "wage",
                "--lower",
                "0",
                "--upper",
                "99",
            ],
            [
                "explore",
                "--values",
                "1,2",
                "--universe",
                "0,1,2",
                "--statistics",
                "quantile",
                "--p",
                "1.5",
            ],
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
        [
            lambda p: ds.release(p, ds.Mean(0, 99), column="age", epsilon=1.0, nulls="keep"),
            lambda p: load_column(p, "age", nulls="keep"),
        ],
        [
            [*REL, "-c", "age", "--lower", "0", "--upper", "99", "--nulls", "keep"],
            [*ANALYZE, "-c", "age", "--nulls", "keep"],
            [*EXPLORE, "-c", "age", "--nulls", "keep"],
            [*AUDIT, "-c", "age", "--nulls", "keep"],
        ],
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
            ["ratio", "NOPE", "--numerator", "a", "--epsilon", "1"],
            ["analyze", "NOPE", "-s", "mean", "--lower", "0", "--upper", "9"],
            ["explore", "NOPE", "--universe", "0,1,2"],
            ["audit", "math:fabs", "--x", "NOPE", "--x-prime", "DATA", "--epsilon", "1"],
        ],
        "",
        "",
    ),
    "a missing ledger": (
        "No ledger file at ",
        [lambda p: ds.report(p.with_name("nope.db"), p.with_name("r.html"))],
        [
            [*REL, "-c", "wage", "--lower", "0", "--upper", "9", "--ledger", "NOLEDGER"],
            ["ratio", "DATA", "--numerator", "y", "--epsilon", "1", "--ledger", "NOLEDGER"],
            ["sql", "SELECT COUNT(*) FROM 'DATA'", "--epsilon", "1", "--ledger", "NOLEDGER"],
            ["budget", "show", "NOLEDGER"],
            ["report", "NOLEDGER", "-o", "OUT"],
        ],
        "ds.Accountant(ledger=",
        "'dpsense budget init ",
    ),
    "not an indicator": (
        "must hold one indicator per user (zeros and ones, true/false or yes/no)",
        [
            lambda p: ds.private_ratio([1.0, float("nan")], [1.0, 1.0], epsilon=1.0),
            lambda p: ds.private_ratio([1.0, 2.0], [1.0, 1.0], epsilon=1.0),
        ],
        [
            ["ratio", "DATA", "--numerator", "age", "--epsilon", "1"],  # a missing cell
            ["ratio", "DATA", "--numerator", "wage", "--epsilon", "1"],  # other numbers
            ["ratio", "DATA", "--numerator", "note", "--epsilon", "1"],  # text
        ],
        "",
        "",
    ),
    "a join without privacy units": (
        "A query that joins tables needs ",
        [
            lambda p: ds.sql(
                "SELECT COUNT(*) FROM a JOIN b ON a.y = b.y", tables={"a": p, "b": p}, epsilon=1.0
            )
        ],
        [
            [
                "sql",
                "SELECT COUNT(*) FROM a JOIN b ON a.y = b.y",
                "--table",
                "a=DATA",
                "--table",
                "b=DATA",
                "--epsilon",
                "1",
            ]
        ],
        "privacy_unit={'orders': 'customer_id', 'items': ('order_id', 'orders', 'order_id')}",
        "--privacy-unit orders=customer_id --privacy-unit items=order_id:orders.order_id",
    ),
    "an unknown statistic": (
        "must be one of count, sum, mean, variance, std, median, quantile, quantiles, "
        "trimmed-mean. Got 'meen' instead.",
        [lambda p: make_statistic("meen", 0, 99)],
        [
            ["release", "DATA", "-s", "meen", "-c", "wage", "--epsilon", "1"],  # no bounds
            ["analyze", "DATA", "-s", "meen", "-c", "wage"],
            ["explore", "--values", "1,2", "--universe", "0,1,2", "--statistics", "meen"],
        ],
        "The 'statistic' parameter",
        "--statistic",
    ),
    "a quantile without its level": (
        "statistic needs its level",
        [lambda p: make_statistic("quantile", lower=0, upper=99)],
        [
            [*REL[:2], "-s", "quantile", "-c", "wage", "--lower", "0", "--upper", "99", *REL[4:]],
            ["analyze", "DATA", "-s", "quantile", "-c", "wage", "--lower", "0", "--upper", "99"],
        ],
        "pass p=0.9",
        "pass --p 0.9",
    ),
    "a contribution bound without a privacy unit": (
        "what one privacy unit contributes: pass ",
        [
            lambda p: ds.release(
                p, ds.Mean(0, 99), column="wage", epsilon=1.0, max_rows_per_unit=2
            ),
            lambda p: ds.private_bounds(p, column="wage", epsilon=1.0, max_rows_per_unit=2),
        ],
        [
            [*REL, "-c", "wage", "--lower", "0", "--upper", "99", "--max-rows-per-unit", "2"],
            ["bounds", "DATA", "-c", "wage", "--epsilon", "1", "--max-rows-per-unit", "2"],
        ],
        "privacy_unit=...",
        "--privacy-unit ...",
    ),
    "a bounds share without private bounds": (
        "is the share of epsilon spent on private bounds: pass ",
        [
            lambda p: ds.release(p, ds.Mean(0, 99), column="wage", epsilon=1.0, bounds_share=0.5),
            lambda p: ds.sql(
                f"SELECT AVG(wage) FROM '{p}'",
                bounds={"wage": (0, 99)},
                epsilon=1.0,
                bounds_share=0.5,
            ),
        ],
        [
            [*REL, "-c", "wage", "--lower", "0", "--upper", "99", "--bounds-share", "0.5"],
            ["sql", "SELECT AVG(wage) FROM 'DATA'", *SQL_REST, "--bounds-share", "0.5"],
        ],
        "bounds='private' too, or drop it",
        "--bounds private too, or drop it",
    ),
    "keys without the group columns": (
        "must have the group columns 'note'; it has 'other'",
        [
            lambda p: ds.release(
                p,
                ds.Mean(0, 99),
                column="wage",
                by="note",
                keys=pd.DataFrame({"other": ["a"]}),
                epsilon=1.0,
            ),
            lambda p: ds.sql(
                f"SELECT note, AVG(wage) FROM '{p}' GROUP BY note",
                bounds={"wage": (0, 99)},
                keys={"other": ["a"]},
                epsilon=1.0,
            ),
        ],
        [
            (
                [*REL, "-c", "wage", "--lower", "0", "--upper", "9", "--by", "note", *INLINE],
                "--keys note=A,B",
            ),
            [*REL, "-c", "wage", "--lower", "0", "--upper", "9", "--by", "note", "--keys", "KEYS"],
            (
                ["sql", "SELECT note, AVG(wage) FROM 'DATA' GROUP BY note", *SQL_REST, *INLINE],
                "--keys note=A,B",
            ),
            [
                "plan",
                "SELECT note, AVG(wage) FROM 'DATA' GROUP BY note",
                "--bounds",
                "wage=0:9",
                "--epsilon",
                "1",
                "--rows-per-group",
                "50",
                "--keys",
                "KEYS",
            ],
        ],
        "",
        "The keys file ",
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
    for line in lines:
        argv, own = line if isinstance(line, tuple) else (line, cli_words)
        err = _cli([a.replace("NOPE", nope) for a in argv], data, capsys)
        assert pattern.search(err), (cause, err)
        assert own in err, (cause, err)
        # the command line's words: no Python keyword assignment for an existing flag
        assert "nulls='drop'" not in err, err
        assert "column=..." not in err, err
        assert SECRET not in err
        assert "987654" not in err
