"""Every construct outside the SQL subset is refused, through ds.sql and ``dpsense sql``:
an InputError (exit 2, one line on stderr, no traceback) that names the construct and says
what to do instead, and quotes no data value."""

from __future__ import annotations

from pathlib import Path

import pytest

import dpsense as ds
from dpsense.cli import main

pd = pytest.importorskip("pandas")

SECRET = 987654.321  # a data value that no message may contain

# (query with {t} for the table, a word the message must contain, a word of the remedy)
REFUSED = [
    ("SELECT a, COUNT(*) FROM {t} JOIN u ON a = b GROUP BY a", "join condition", "a.col = b.col"),
    ("SELECT COUNT(*) FROM {t}, u", "without a condition", "JOIN ... ON"),
    ("SELECT COUNT(*) FROM (SELECT * FROM {t})", "subquery in FROM", "WHERE"),
    ("SELECT COUNT(*) FROM {t} WHERE a IN (SELECT a FROM {t})", "subquery in WHERE", "IN (1"),
    ("SELECT COUNT(*) FROM {t} WHERE EXISTS (SELECT 1 FROM u)", "subquery in WHERE", "IN (1"),
    ("SELECT (SELECT 1) AS s, COUNT(*) FROM {t}", "expression", "aggregates"),
    ("SELECT DISTINCT a FROM {t}", "DISTINCT", "GROUP BY"),
    ("SELECT COUNT(DISTINCT a) FROM {t}", "DISTINCT", "privacy_unit"),
    ("SELECT a, COUNT(*) FROM {t} GROUP BY a HAVING COUNT(*) > 3", "HAVING", "afterwards"),
    ("SELECT SUM(w) OVER (PARTITION BY a) FROM {t}", "window", "GROUP BY"),
    ("SELECT COUNT(*) FROM {t} QUALIFY ROW_NUMBER() OVER () = 1", "window", "GROUP BY"),
    ("SELECT MIN(w) FROM {t}", "MIN", "QUANTILE_CONT(col, 0.01)"),
    ("SELECT a, MAX(w) FROM {t} GROUP BY a", "MAX", "ds.private_bounds"),
    ("SELECT COUNT(*) FROM {t} UNION SELECT COUNT(*) FROM u", "UNION", "one query per"),
    ("WITH c AS (SELECT * FROM {t}) SELECT COUNT(*) FROM c", "WITH", "beforehand"),
    ("SELECT * FROM {t}", "SELECT *", "aggregates"),
    ("SELECT a, COUNT(*) FROM {t}", "without aggregating", "GROUP BY"),
    ("SELECT b, COUNT(*) FROM {t} GROUP BY a", "without aggregating", "GROUP BY"),
    ("SELECT MODE(w) FROM {t}", "MODE", "supported aggregates"),
    # an aggregate of a row-wise expression is released under its alias (docs/sql.md)
    ("SELECT AVG(w * 2) FROM {t}", "expression", "AS spend"),
    ("SELECT COUNT(*) + 1 FROM {t}", "expression", "afterwards"),
    ("SELECT COUNT(*) FROM {t} WHERE SQRT(w) > 1", "SQRT", "row-level"),
    ("SELECT COUNT(*) FROM {t} WHERE AVG(w) > 1", "aggregate AVG in WHERE", "row-level"),
    ("SELECT a, COUNT(*) FROM {t} GROUP BY a ORDER BY w", "ORDER BY", "released"),
    ("SELECT COUNT(*) FROM {t}; SELECT 1", "one SELECT", "one query"),
    ("DELETE FROM {t}", "not a SELECT", "SELECT"),
    ("SELEC COUNT(*) FROM {t}", "does not parse", "line 1"),
    ("SELECT a, COUNT(*) FROM {t} GROUP BY ALL", "GROUP BY ALL", "list the columns"),
    ("SELECT COUNT(*) FILTER (WHERE a > 1) FROM {t}", "FILTER", "WHERE"),
    ("SELECT COUNT(*), COUNT(*) FROM {t}", "two columns named", "AS"),
    ("SELECT a FROM {t} GROUP BY a", "no aggregate", "COUNT(*)"),
    ("SELECT COUNT(*) FROM {t} LIMIT ALL", "LIMIT", "LIMIT 10"),
]
IDS = [q.split(" FROM")[0][:40] + "|" + word for q, word, _ in REFUSED]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    frame = pd.DataFrame({"a": [1, 2, 2], "b": [0, 1, 0], "w": [SECRET, 1.0, 2.0]})
    path = tmp_path_factory.mktemp("sql") / "t.csv"
    frame.to_csv(path, index=False)
    return frame, path


@pytest.mark.parametrize(("query", "word", "remedy"), REFUSED, ids=IDS)
def test_refused_by_ds_sql(query: str, word: str, remedy: str, table: tuple[object, Path]) -> None:
    frame, _ = table
    with pytest.raises(ds.InputError) as info:
        ds.sql(
            query.format(t="t"),
            tables={"t": frame, "u": frame},
            epsilon=1.0,
            delta=1e-6,
            bounds={"w": (0, 10), "a": (0, 3)},
        )
    message = str(info.value)
    assert word in message
    assert remedy in message
    assert "987654" not in message
    assert "\n" not in message


@pytest.mark.parametrize(("query", "word", "remedy"), REFUSED, ids=IDS)
def test_refused_by_the_cli(
    query: str,
    word: str,
    remedy: str,
    table: tuple[object, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, path = table
    code = main(["sql", query.format(t=f"'{path}'"), "--epsilon", "1", "--bounds", "w=0:10,a=0:3"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert word in err
    assert "987654" not in err


def test_missing_bounds_point_to_private_bounds(
    table: tuple[object, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    frame, path = table
    with pytest.raises(ds.InputError, match=r"bounds='private'.*ds\.private_bounds"):
        ds.sql("SELECT MEDIAN(w) FROM t", tables={"t": frame}, epsilon=1.0)
    code = main(["sql", f"SELECT MEDIAN(w) FROM '{path}'", "--epsilon", "1"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "no bounds for the column 'w'" in err
    assert "--bounds w=LOWER:UPPER" in err
    assert "--bounds private" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--bounds", "w"], "COL=LOWER:UPPER"),
        (["--bounds", "w=a:b"], "with numbers"),
        (["--bounds", "private", "--bounds", "w=0:1"], "do not mix"),
        (["--keys", "a=1,2", "--bounds", "w=0:1"], "no GROUP BY"),
    ],
)
def test_cli_option_errors(
    args: list[str],
    fragment: str,
    table: tuple[object, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, path = table
    code = main(["sql", f"SELECT AVG(w) FROM '{path}'", "--epsilon", "1", *args])
    _, err = capsys.readouterr()
    assert code == 2
    assert fragment in err


def test_cli_from_needs_a_path(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sql", "SELECT COUNT(*) FROM males", "--epsilon", "1"])
    _, err = capsys.readouterr()
    assert code == 2
    assert "FROM 'males.parquet'" in err


def test_unknown_table_names_the_way_to_pass_it() -> None:
    with pytest.raises(ds.InputError, match=r"tables=\{'males': data\}"):
        ds.sql("SELECT COUNT(*) FROM males", tables={}, epsilon=1.0)


def test_accountant_must_be_an_accountant(table: tuple[object, Path]) -> None:
    frame, _ = table
    with pytest.raises(ds.InputError, match=r"'accountant' parameter of ds\.sql"):
        ds.sql(
            "SELECT COUNT(*) FROM t",
            tables={"t": frame},
            epsilon=1.0,
            accountant="budget.db",  # type: ignore[arg-type]
        )
