"""Row-wise expressions in ds.sql (docs/sql.md): a computed column is what the same query
reads from a table that holds the column already, for a seed; every expression is total
(a NULL or NaN it gives drops its row, never an error that depends on the data); what is
refused is refused from the text."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from dpsense.cli import main
from dpsense.query.sql import parse_sql

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

DECADES = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]


def _people(n: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame(
        {
            "person": np.arange(n) // 3,
            "age": rng.integers(18, 80, n),
            "price": rng.uniform(0, 10, n).round(2),
            "qty": rng.integers(0, 5, n),
        }
    )


def _rows(query: str, frame: pd.DataFrame, **args: Any) -> list[dict[str, Any]]:
    base: dict[str, Any] = {"epsilon": 1.0, "privacy_unit": "person", "max_rows_per_unit": 2}
    return ds.sql(query, tables={"people": frame}, **{**base, **args, "rng": 4}).to_dicts()


@pytest.mark.parametrize("group_by", ["FLOOR(age / 10) * 10", "decade", "1"])
def test_a_histogram_of_bins_is_the_release_of_the_prepared_column(group_by: str) -> None:
    frame = _people()
    prepared = frame.assign(decade=np.floor(frame["age"] / 10) * 10)
    keys = {"decade": DECADES}
    got = _rows(
        f"SELECT FLOOR(age / 10) * 10 AS decade, COUNT(*) AS n FROM people GROUP BY {group_by}",
        frame,
        keys=keys,
        max_groups_per_unit=2,
    )
    want = _rows(
        "SELECT decade, COUNT(*) AS n FROM people GROUP BY decade",
        prepared,
        keys=keys,
        max_groups_per_unit=2,
    )
    assert got == want
    assert [r["decade"] for r in got] == DECADES


def test_a_case_when_grouping_and_an_aggregate_of_an_expression() -> None:
    frame = _people()
    band = np.where(frame["age"] < 40, "young", "old")
    prepared = frame.assign(band=band, spend=frame["price"] * frame["qty"])
    args: dict[str, Any] = {"keys": {"band": ["young", "old"]}, "bounds": {"spend": (0, 40)}}
    got = _rows(
        "SELECT CASE WHEN age < 40 THEN 'young' ELSE 'old' END AS band, COUNT(*) AS n, "
        "AVG(price * qty) AS spend FROM people GROUP BY band ORDER BY band",
        frame,
        **args,
    )
    want = _rows(
        "SELECT band, COUNT(*) AS n, AVG(spend) AS spend FROM people GROUP BY band ORDER BY band",
        prepared,
        **args,
    )
    assert got == want
    assert [r["band"] for r in got] == ["old", "young"]


def test_an_expression_that_fails_on_one_row_drops_that_row_under_nulls_error() -> None:
    """An overflow aimed at one person: no error (which would reveal them), their rows
    are dropped, exactly as if the table did not hold them."""
    frame = _people()
    query = (
        "SELECT COUNT(*) AS n, AVG(CASE WHEN person = 17 THEN age * 9223372036854775807 "
        "ELSE price END) AS p FROM people"
    )
    got = _rows(query, frame, bounds={"p": (0, 10)})
    without = _rows(query, frame[frame["person"] != 17], bounds={"p": (0, 10)})
    assert got == without


def test_a_failing_cast_and_an_overflow_are_dropped_rows_not_errors() -> None:
    frame = _people().assign(code=lambda f: np.where(f["person"] == 3, "n/a", "7"))
    query = (
        "SELECT COUNT(*) AS n, SUM(CAST(code AS INTEGER) * 9223372036854775807) AS big, "
        "SUM(CAST(code AS INTEGER)) AS c FROM people"
    )
    got = _rows(query, frame, bounds={"big": (0, 1), "c": (0, 10)})
    without = _rows(query, frame[frame["person"] != 3], bounds={"big": (0, 1), "c": (0, 10)})
    assert got == without


def test_count_of_an_expression_counts_around_its_nulls() -> None:
    frame = _people()
    got = _rows(
        "SELECT COUNT(*) AS n, COUNT(CASE WHEN age < 40 THEN 1 END) AS young FROM people",
        frame,
    )
    want = _rows(
        "SELECT COUNT(*) AS n, COUNT(y) AS young FROM people",
        frame.assign(y=np.where(frame["age"] < 40, 1.0, np.nan)),
    )
    assert got == want


def test_the_receipt_states_the_computed_columns() -> None:
    res = ds.sql(
        "SELECT FLOOR(age / 10) * 10 AS decade, COUNT(*) AS n FROM people GROUP BY 1",
        tables={"people": _people()},
        epsilon=1.0,
        keys={"decade": DECADES},
        rng=1,
    )
    assert res.parameters["computed"] == {"decade": "FLOOR(age / 10) * 10"}
    assert "where" not in res.parameters


def test_parse_names_each_expression_by_its_alias() -> None:
    spec = parse_sql(
        "SELECT CAST(p.age AS INTEGER) // 10 AS d, MEDIAN(p.price * 2) AS m FROM t AS p "
        "GROUP BY CAST(p.age AS INTEGER) // 10 ORDER BY CAST(p.age AS INTEGER) // 10"
    )
    assert spec.by == ("d",)
    assert dict(spec.computed) == {"d": "CAST(age AS INT) // 10", "m": "MEDIAN(price * 2)"[7:-1]}
    assert [a.column for a in spec.aggregates] == ["m"]
    assert [k.column for k in spec.order_by] == ["d"]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("SELECT FLOOR(age / 10) * 10, COUNT(*) FROM t GROUP BY 1", "with AS"),
        ("SELECT AVG(age * 2) FROM t", "AS spend"),
        ("SELECT FLOOR(age / 10) AS d, COUNT(*) FROM t GROUP BY d, age % 2", "does not name"),
        ("SELECT COUNT(*) FROM t GROUP BY FLOOR(age / 10)", "does not name"),
        ("SELECT SQRT(age) AS r, COUNT(*) FROM t GROUP BY r", "SQRT"),
        ("SELECT AVG(LN(age)) AS l FROM t", "LN"),
        ("SELECT FLOOR(age / 10) AS d, COUNT(*) FROM t", "without aggregating"),
        ("SELECT AVG(age) * 2 AS a FROM t", "afterwards"),
    ],
)
def test_refused_from_the_text(query: str, words: str) -> None:
    with pytest.raises(ds.InputError, match=words):
        parse_sql(query)


def test_an_alias_that_is_a_column_of_the_table_is_refused() -> None:
    with pytest.raises(ds.InputError, match="another alias"):
        ds.sql(
            "SELECT FLOOR(age / 10) * 10 AS age, COUNT(*) AS n FROM people GROUP BY 1",
            tables={"people": _people()},
            epsilon=1.0,
            keys={"age": DECADES},
        )


def test_an_expression_on_a_csv_reads_declared_columns_only(tmp_path: Path) -> None:
    path = tmp_path / "people.csv"
    _people(30).to_csv(path, index=False)
    query = "SELECT FLOOR(age / 10) * 10 AS d, COUNT(*) AS n FROM people GROUP BY d"
    with pytest.raises(ds.InputError, match="declare the type"):
        ds.sql(query, tables={"people": str(path)}, epsilon=1.0, keys={"d": DECADES})
    res = ds.sql(
        query,
        tables={"people": str(path)},
        epsilon=1.0,
        keys={"d": DECADES},
        schema={"age": "int"},
        rng=2,
    )
    assert [r["d"] for r in res.to_dicts()] == DECADES


def test_dpsense_sql_releases_a_histogram_of_bins(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "people.parquet"
    _people().to_parquet(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(
            [
                "sql",
                f"SELECT FLOOR(age / 10) * 10 AS decade, COUNT(*) AS n FROM '{path}' "
                "GROUP BY FLOOR(age / 10) * 10",
                "--epsilon",
                "1",
                "--keys",
                "decade=10,20,30,40,50,60,70",
                "--seed",
                "3",
                "--json",
            ]
        )
    assert code == 0
    import json

    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["decade"] for r in rows] == DECADES
