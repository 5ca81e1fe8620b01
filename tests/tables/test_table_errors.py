"""Bad input to a table release: one InputError naming the argument, no data in it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.noise.rng import SeededRandom

pd = pytest.importorskip("pandas")


def _frame() -> Any:
    return pd.DataFrame(
        {
            "person": [101, 101, 102, 103, 103, 104],
            "year": [2020, 2021, 2020, 2020, 2021, 2021],
            "hours": [37.5, 41.25, 12.75, 55.5, 61.0, 23.25],
            "note": ["a", "b", "c", "d", "e", "f"],
        }
    )


def _no_data_in(message: str) -> None:
    # neither the values, nor ids, nor row counts of the table
    for secret in ("37.5", "41.25", "12.75", "55.5", "61", "23.25", "101", "104", " 6 "):
        assert secret not in message, message
    assert not re.search(r"\b[0-9]+ rows?\b", message), message


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("missing column", {"column": "wage"}, "column"),
    ("missing by", {"column": "hours", "by": "region", "keys": ["x"]}, "by"),
    ("missing unit", {"column": "hours", "privacy_unit": "id"}, "privacy_unit"),
    (
        "rows < 1",
        {"column": "hours", "privacy_unit": "person", "max_rows_per_unit": 0},
        "max_rows_per_unit",
    ),
    (
        "groups < 1",
        {"column": "hours", "privacy_unit": "person", "max_groups_per_unit": 0},
        "max_groups_per_unit",
    ),
    ("bound without unit", {"column": "hours", "max_rows_per_unit": 3}, "privacy_unit"),
    (
        "substitute with groups",
        {"column": "hours", "by": "year", "keys": [2020], "neighbours": "substitute"},
        "add-remove",
    ),
    ("no keys, no delta", {"column": "hours", "by": "year"}, "delta"),
    ("strings", {"column": "note"}, "numeric"),
    ("several columns", {}, "column"),
    ("keys without by", {"column": "hours", "keys": [2020]}, "by"),
    ("bad nulls", {"column": "hours", "nulls": "keep"}, "nulls"),
]


@pytest.mark.parametrize(("label", "kwargs", "needle"), CASES, ids=[c[0] for c in CASES])
def test_bad_table_arguments(label: str, kwargs: dict[str, Any], needle: str) -> None:
    with pytest.raises(ds.InputError) as info:
        ds.release(_frame(), ds.Median(0, 100), epsilon=1.0, rng=1, **kwargs)
    message = str(info.value)
    assert needle in message
    _no_data_in(message)


def test_nulls_are_an_error_unless_dropped() -> None:
    frame = _frame()
    frame.loc[2, "hours"] = np.nan
    with pytest.raises(ds.InputError, match="nulls='drop'") as info:
        ds.release(frame, ds.Mean(0, 100), column="hours", epsilon=1.0, rng=1)
    _no_data_in(str(info.value))
    out = ds.release(frame, ds.Mean(0, 100), column="hours", nulls="drop", epsilon=1.0, rng=1)
    assert isinstance(out, ds.Release)
    # other columns may hold anything, nulls included
    frame = _frame()
    frame.loc[1, "note"] = None
    assert isinstance(
        ds.release(frame, ds.Mean(0, 100), column="hours", epsilon=1.0, rng=1), ds.Release
    )


def test_infinite_values_are_clipped_not_refused() -> None:
    """(tests/tables/test_infinities.py checks every format and statistic.)"""
    frame = _frame()
    frame.loc[0, "hours"] = np.inf
    frame.loc[3, "hours"] = -np.inf
    clipped = frame.assign(hours=frame["hours"].clip(0, 50))
    out = ds.release(frame, ds.Mean(0, 50), column="hours", epsilon=1.0, rng=1)
    assert isinstance(out, ds.Release)
    assert (
        out.value == ds.release(clipped, ds.Mean(0, 50), column="hours", epsilon=1.0, rng=1).value
    )


def test_keys_table_without_the_by_columns() -> None:
    keys = pd.DataFrame({"yr": [2020]})
    with pytest.raises(ds.InputError, match="must have the group columns 'year'; it has 'yr'"):
        ds.release(_frame(), ds.Count(), by="year", keys=keys, epsilon=1.0, rng=1)


def test_missing_file(tmp_path: Path) -> None:
    # the message of every reader of a file (load_column, the CLI) for a missing one
    with pytest.raises(ds.InputError, match=r"^file not found: .*nope\.parquet$"):
        ds.release(tmp_path / "nope.parquet", ds.Count(), epsilon=1.0, rng=1)


def test_empty_table_releases_every_public_key(tmp_path: Path) -> None:
    """A file with a header and no rows is data under add-remove: every key released."""
    path = tmp_path / "empty.csv"
    path.write_text("person,year,hours\n")
    out = ds.release(
        path,
        ds.Median(0, 100),
        column="hours",
        by="year",
        keys=[2020, 2021],
        privacy_unit="person",
        epsilon=1.0,
        rng=2,
    )
    assert [k for k, _ in out] == [2020, 2021]
    assert all(0.0 <= r.value <= 100.0 for _, r in out)


def test_keys_match_by_value_not_by_spelling() -> None:
    """Integer keys select the groups of a float column holding whole numbers."""
    frame = _frame().assign(year=lambda f: f["year"].astype(float))
    out = ds.release(frame, ds.Count(), by="year", keys=[2020, 2021], epsilon=1e6, rng=1)
    assert [r.value for _, r in out] == [3.0, 3.0]


def test_keys_of_the_wrong_type() -> None:
    with pytest.raises(ds.InputError, match=r"values of the group columns \(year: int\)"):
        ds.release(_frame(), ds.Count(), by="year", keys=["last year"], epsilon=1.0, rng=1)


# ---- the dead ends of a join (issue 47): each says its cause and its way out ----------


def _join_tables(tmp: Path, csv: bool) -> dict[str, Any]:
    """Batting seasons and salaries of players (both hold yearID), and the players."""
    rng = np.random.default_rng(0)
    ids = [f"p{i}" for i in range(60)]
    tables = {
        "people": pd.DataFrame({"playerID": ids, "country": rng.choice(["US", "DR"], 60)}),
        "batting": pd.DataFrame(
            {
                "playerID": rng.choice(ids, 200),
                "yearID": rng.integers(1960, 1980, 200),
                "HR": rng.integers(0, 50, 200),
            }
        ),
        "salaries": pd.DataFrame(
            {
                "playerID": rng.choice(ids, 120),
                "yearID": rng.integers(1960, 1980, 120),
                "salary": rng.integers(100_000, 900_000, 120),
            }
        ),
    }
    if not csv:
        return tables
    paths = {}
    for name, frame in tables.items():
        paths[name] = tmp / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    return {k: str(v) for k, v in paths.items()}


ON_SEASON = [("batting", "salaries", ["playerID", "yearID"]), ("batting", "people", "playerID")]
ON_PLAYER = [("batting", "people", "playerID")]

# (label, CSV files?, on, release arguments, a phrase the message has, one it must not have)
JOIN_CASES: list[tuple[str, bool, Any, dict[str, Any], str, str]] = [
    (
        "where= names a column of two tables",
        False,
        ON_SEASON,
        {"where": "yearID >= 1969"},
        "may qualify it (batting.yearID)",
        "could not be evaluated",
    ),
    (
        "where= qualifies a CSV file's join key, undeclared",
        True,
        ON_SEASON,
        {"where": "batting.yearID >= 1969"},
        "declare the type of each column the filter reads, e.g. schema={'yearID'",
        "could not be evaluated",
    ),
    (
        "where= names a table not joined",
        False,
        ON_PLAYER,
        {"where": "salaries.yearID >= 1969"},
        "which is not a table of the ds.join",
        "qualify",
    ),
    (
        "a join column missing from the left table",
        False,
        [("batting", "people", "playerId")],
        {},
        "The column 'playerId' of a join condition is not in the table 'batting'",
        "equate",
    ),
    (
        "a join column missing from the right table (two private tables)",
        False,
        [("batting", "salaries", "playerID", "player")],
        {},
        "The column 'player' of a join condition is not in the table 'salaries'",
        "equate",
    ),
]


@pytest.mark.parametrize(
    ("label", "csv", "on", "kwargs", "needle", "absent"),
    JOIN_CASES,
    ids=[c[0] for c in JOIN_CASES],
)
def test_join_dead_ends(
    tmp_path: Path,
    label: str,
    csv: bool,
    on: Any,
    kwargs: dict[str, Any],
    needle: str,
    absent: str,
) -> None:
    joined = ds.join(_join_tables(tmp_path, csv), on=on)
    with pytest.raises(ds.InputError) as info:
        ds.release(
            joined, ds.Count(), privacy_unit="playerID", max_rows_per_unit=5, epsilon=1.0, rng=1,
            **kwargs,
        )  # fmt: skip
    message = str(info.value)
    assert needle in message
    assert absent not in message
    assert not re.search(r"\b(19[0-9]{2}|p[0-9]+|[0-9]{6})\b", message.replace("1969", ""))


@pytest.mark.parametrize("csv", [False, True], ids=["frames", "csv"])
@pytest.mark.parametrize(
    "where", ["HR >= 3", "batting.yearID >= 1969", "salaries.yearID >= 1969 AND HR >= 3"]
)
def test_join_where_takes_a_column_or_table_dot_column(
    tmp_path: Path, csv: bool, where: str
) -> None:
    """An unambiguous column by its name, any column as table.column, as in ds.sql's
    WHERE; the same seeded answer as ds.sql's (a CSV file's columns declared)."""
    tables = _join_tables(tmp_path, csv)
    schema = {"yearID": "int", "HR": "int"} if csv else None
    args: dict[str, Any] = {
        "privacy_unit": "playerID", "max_rows_per_unit": 5, "epsilon": 1.0, "schema": schema,
    }  # fmt: skip
    out = ds.release(
        ds.join(tables, on=ON_SEASON), {"n": ds.Count()}, where=where, rng=SeededRandom(3),
        **args,
    )  # fmt: skip
    sql = ds.sql(
        "SELECT COUNT(*) AS n FROM batting JOIN salaries ON batting.playerID = "
        "salaries.playerID AND batting.yearID = salaries.yearID JOIN people ON "
        f"batting.playerID = people.playerID WHERE {where}",
        tables=tables, rng=SeededRandom(3), **args,
    )  # fmt: skip
    assert out["n"].value == sql["n"].value
