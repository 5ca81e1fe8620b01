"""Messages a newcomer meets first, from Python and from the command line: the missing
column named as such (not as a missing bound or an undeclared type), reversed bounds in
the caller's words, a bounds typo pointed out, a SQL syntax error without the parser's
internals, text in a numeric column with the way out (``--schema``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import dpsense as ds
from dpsense.cli import main

SECRET = "987654.321"


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "air.csv"
    path.write_text(f"Ozone,Temp,name\n41,67,a\n,72,b\n12,74,c\n18,{SECRET},d\n")
    return path


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    assert SECRET not in err
    assert "987654" not in err
    return err


def py(call: object) -> str:
    with pytest.raises(ds.InputError) as info:
        call()  # type: ignore[operator]
    message = str(info.value)
    assert "987654" not in message
    assert "\n" not in message
    return message


def test_a_missing_column_in_sql_is_named_as_a_column(
    csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = f"SELECT AVG(wag) FROM '{csv}'"
    err = cli(["sql", query, "--epsilon", "1", "--bounds", "wag=0:1"], capsys)
    assert "reads the column 'wag', which is not in" in err
    assert "--column" not in err  # sql has no --column
    message = py(lambda: ds.sql(query, epsilon=1.0, bounds={"wag": (0, 1)}))
    assert "reads the column 'wag', which is not in" in message


def test_a_where_typo_is_a_missing_column_not_an_undeclared_type(
    csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = f"SELECT AVG(Temp) FROM '{csv}' WHERE Tmp > 3"
    err = cli(["sql", query, "--epsilon", "1", "--bounds", "Temp=0:100"], capsys)
    assert "'Tmp', which is not in" in err
    assert "inferred" not in err
    message = py(
        lambda: ds.release(csv, {"t": ("Temp", ds.Mean(0, 100))}, where="Tmp > 3", epsilon=1)
    )
    assert "The 'where' filter reads the column 'Tmp', which is not in" in message
    assert "where=..." not in message


def test_reversed_bounds_in_the_callers_words(
    csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = f"SELECT AVG(Temp) FROM '{csv}'"
    err = cli(["sql", query, "--epsilon", "1", "--bounds", "Temp=50:0"], capsys)
    assert "--bounds Temp=50:0 must have LOWER < UPPER" in err
    assert "--bounds Temp=0:50" in err
    assert "--lower" not in err
    message = py(lambda: ds.sql(query, epsilon=1.0, bounds={"Temp": (50, 0)}))
    assert "The bounds of 'Temp' in the 'bounds' parameter of ds.sql" in message
    assert "swap them" in message


def test_a_bounds_typo_is_pointed_out(csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = f"SELECT AVG(Temp) FROM '{csv}'"
    err = cli(["sql", query, "--epsilon", "1", "--bounds", "Tmp=0:100"], capsys)
    assert "no bounds for the column 'Temp'" in err
    assert "it names 'Tmp': a typo?" in err
    message = py(lambda: ds.sql(query, epsilon=1.0, bounds={"Tmp": (0, 100)}))
    assert "it names 'Tmp': a typo?" in message


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("SELECT AVG(Temp) FROM t WHERE", "something is missing after 'WHERE'"),
        ("SELECT AVG(Temp FROM t", "expecting ) before 'FROM'"),
        ("SELEC Temp FROM t", "unexpected 'FROM'"),
        ("SELECT 'abc FROM t", "an unclosed quote"),
    ],
)
def test_a_syntax_error_says_where_without_the_parsers_internals(
    query: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = cli(["sql", query, "--epsilon", "1"], capsys)
    assert words in err
    assert "<class" not in err
    assert "sqlglot" not in err
    assert words in py(lambda: ds.sql(query, epsilon=1.0))


def test_text_in_a_numeric_column_shows_the_way_out(
    csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["release", str(csv), "-c", "name", "-s", "mean", "--lower", "0", "--upper", "9"]
    err = cli([*argv, "--epsilon", "1"], capsys)
    assert "--schema name=float" in err
    assert main([*argv, "--epsilon", "1", "--schema", "name=float"]) == 0  # every row dropped


@pytest.mark.parametrize(
    "call",
    [
        lambda: ds.release([1.0, 2.0, 3.0], ds.Mean(0, 5), epsilon=50.0),
        lambda: ds.Accountant(epsilon=100.0).release([1.0, 2.0], ds.Count(), epsilon=20.0),
        lambda: ds.private_bounds(np.arange(100.0), epsilon=11.0),
        lambda: ds.private_ratio(3, 10, epsilon=12.0),
        lambda: ds.sample_and_aggregate(
            np.arange(30.0), np.mean, blocks=3, lower=0, upper=30, epsilon=1e9
        ),
    ],
)
def test_a_large_epsilon_warns_once(call: object) -> None:
    with pytest.warns(ds.LargeEpsilonWarning) as seen:
        call()  # type: ignore[operator]
    assert len([w for w in seen if issubclass(w.category, ds.LargeEpsilonWarning)]) == 1
    assert "above 10" in str(seen[0].message)


def test_epsilon_ten_is_quiet() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds.release([1.0, 2.0, 3.0], ds.Mean(0, 5), epsilon=10.0, rng=None)


def test_the_command_line_prints_the_warning_and_releases(
    csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["release", str(csv), "-c", "Temp", "-s", "mean", "--lower", "0", "--upper", "99"]
    assert main([*argv, "--epsilon", "1e9"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("warning: --epsilon is 1e+09, above 10")
    assert err.count("\n") == 1
    assert "Private mean" in out
    assert main([*argv, "--epsilon", "1"]) == 0
    assert capsys.readouterr()[1] == ""


def test_an_audit_that_finds_nothing_says_what_more_draws_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "x.csv").write_text("x\n1\n2\n3\n")
    (tmp_path / "y.csv").write_text("x\n1\n2\n3\n4\n")
    (tmp_path / "quiet_mech.py").write_text(
        "import numpy as np\ndef count(x):\n    return len(x) + np.random.laplace(0, 1.0)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["audit", "quiet_mech:count", "--x", "x.csv", "--x-prime", "y.csv", "--epsilon", "1"]
    assert main([*argv, "--draws", "1000", "--seed", "3"]) == 0
    out = " ".join(capsys.readouterr()[0].split())
    assert "drew 1000 outputs on each dataset" in out
    assert "--draws 10000" in out


@pytest.mark.parametrize(
    ("command", "argument"),
    [
        (["release"], "{DATA}"),
        (["analyze"], "{DATA}"),
        (["explore"], "[DATA]"),
        (["bounds"], "{DATA}"),
        (["ratio"], "{DATA}"),
        (["sql"], "{QUERY}"),
        (["plan"], "{QUERY}"),
        (["report"], "{LEDGER}"),
        (["budget", "show"], "{LEDGER}"),
    ],
)
def test_help_names_the_data_argument_alike(
    command: list[str], argument: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--help"]) == 0
    first = capsys.readouterr()[0].strip().splitlines()[0]
    assert first == f"Usage: dpsense {' '.join(command)} [OPTIONS] {argument}"


@pytest.mark.parametrize("command", ["release", "analyze", "explore", "bounds", "audit"])
def test_every_column_option_has_c(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    assert "-c, --column" in capsys.readouterr()[0]


def test_power_of_two_shows_what_private_bounds_are() -> None:
    from dpsense.cli.receipt import power_of_two

    assert power_of_two(2.0**-26) == "2^-26"
    assert power_of_two(-(2.0**30)) == "-2^30"
    assert power_of_two(128.0) == "128"  # small powers read as easily in decimals
    assert power_of_two(0.0) == "0"
    assert power_of_two(3.0) == "3"
    assert power_of_two(0.3) == "0.3"


def test_the_receipt_shows_words_not_internals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "v.csv"
    path.write_text("v\n" + "\n".join(str(i % 97) for i in range(3000)) + "\n")
    argv = ["release", str(path), "-c", "v", "-s", "median", "--bounds", "private"]
    assert main([*argv, "--epsilon", "1", "--seed", "2"]) == 0
    out = capsys.readouterr()[0]
    assert "resolution_source" not in out
    assert "None" not in out
    assert "found privately with epsilon=0.3" in out
    bounds_line = next(line for line in out.splitlines() if "found privately" in line)
    assert "2^" in bounds_line or "(0, 128)" in bounds_line  # powers of two, as they are
    argv = ["release", str(path), "-c", "v", "-s", "mean", "--lower", "0", "--upper", "100"]
    assert main([*argv, "--epsilon", "1"]) == 0
    out = capsys.readouterr()[0]
    assert "scale_units" not in out
    assert "on the bounds rescaled to [0, 1]" in out


def test_an_empty_selection_says_what_a_group_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "many.csv"
    path.write_text("p,g,v\n" + "\n".join(f"{i},{i % 1000},1" for i in range(3000)) + "\n")
    argv = ["release", str(path), "-c", "v", "-s", "count", "--by", "g", "--privacy-unit", "p"]
    assert main([*argv, "--delta", "1e-6", "--epsilon", "1", "--seed", "1"]) == 0
    out = " ".join(capsys.readouterr()[0].split())
    assert "0 groups" in out
    assert "reaches 30: groups of fewer than about 30 people rarely appear" in out
    assert "No group reached it" in out
    assert "--keys" in out
    query = f"SELECT g, COUNT(*) AS n FROM '{path}' GROUP BY g"
    sql = ["sql", query, "--privacy-unit", "p", "--delta", "1e-6", "--epsilon", "1"]
    assert main([*sql, "--seed", "1"]) == 0
    out = " ".join(capsys.readouterr()[0].split())
    assert "0 rows" in out
    assert "No group reached it" in out


def test_bounds_found_far_out_warn() -> None:
    x = np.r_[np.arange(100.0), [1e17] * 300]  # a sentinel value
    with pytest.warns(ds.FarBoundsWarning, match="infinities or sentinel values"):
        ds.release(x, ds.Mean(), epsilon=1.0, bounds="private", rng=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds.private_bounds(np.arange(1000.0), epsilon=1.0)  # an ordinary column: quiet


def test_receipt_numbers_carry_the_digits_their_accuracy_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    path = tmp_path / "h.csv"
    path.write_text("h\n" + "\n".join(str(20 + (i * 7) % 41) for i in range(5000)) + "\n")
    argv = ["release", str(path), "-c", "h", "-s", "mean", "--lower", "0", "--upper", "80"]
    assert main([*argv, "--epsilon", "1", "--seed", "4"]) == 0
    rows = {
        line.strip()[:12].strip(): line.strip()[12:].strip()
        for line in capsys.readouterr()[0].splitlines()
        if line.strip().startswith(("value", "95% interval"))
    }
    assert main([*argv, "--epsilon", "1", "--seed", "4", "--json"]) == 0
    payload = json.loads(capsys.readouterr()[0])
    low, high = payload["interval"]
    decimals = 1 - int(np.floor(np.log10((high - low) / 2)))  # two digits of the half-width
    assert rows["value"].strip() == f"{round(payload['value'], decimals):.{decimals}f}"
    assert len(repr(payload["value"])) > len(rows["value"].strip())  # --json keeps them all
    shown_low, shown_high = (
        float(v) for v in rows["95% interval"].split("]")[0].strip(" [").split(",")
    )
    assert shown_low <= low
    assert shown_high >= high  # rounded outward: the interval shown holds the released one
    argv = ["release", str(path), "-c", "h", "-s", "count", "--epsilon", "1", "--seed", "4"]
    assert main(argv) == 0
    out = capsys.readouterr()[0]
    value_line = next(line for line in out.splitlines() if line.strip().startswith("value"))
    assert "." not in value_line  # a count stays whole


def test_no_internal_name_reaches_a_message(
    csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The type checker's sentences, sqlglot's node names, DuckDB's exception classes and
    a query's internal column names stay out of messages: each says what to do in words."""
    base = ["release", str(csv), "-c", "Temp", "-s", "mean", "--lower", "0", "--upper", "99"]
    err = cli([*base, "--epsilon", "abc"], capsys)
    assert "give a number" in err
    assert "Input should" not in err
    err = cli([*base, "--epsilon", "1", "--seed", "1.5"], capsys)
    assert "give a whole number" in err
    query = f"SELECT AVG(Temp) FROM '{csv}' WHERE Temp >> 3 = 1"
    err = cli(
        ["sql", query, "--epsilon", "1", "--bounds", "Temp=0:99", "--schema", "Temp=int"], capsys
    )
    assert "uses >> in WHERE" in err
    assert "BITWISE" not in err
    broken = tmp_path / "broken.parquet"
    broken.write_text("not a parquet file\n")
    err = cli(["release", str(broken), "-c", "a", "-s", "count", "--epsilon", "1"], capsys)
    assert "Could not read the file 'broken.parquet'" in err
    assert "Exception" not in err
    err = cli(["sql", f"SELECT COUNT(DISTINCT name) FROM '{csv}'", "--epsilon", "1"], capsys)
    assert "counts distinct values of 'name', which is not the privacy unit" in err
    assert "people_" not in err
