"""Row filters and schema casts cannot fail on a value: the outcome of a request never
depends on whether one person is in the data (docs/entry_points.md).

Each test runs the same request on D and on D plus one person, with the same seed, and
checks that the kind of outcome, its text and the release are what the person's absence
or a dropped row gives."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from dpsense.tables.row_filter import parse_row_filter, total_sql

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# each would raise in DuckDB on the person's row if evaluated as written
PARTIAL = (
    "CASE WHEN id = 17 THEN age % 0 = 1 ELSE TRUE END",
    "CASE WHEN id = 17 THEN age // 0 = 1 ELSE TRUE END",
    "CASE WHEN id = 17 THEN age * 9223372036854775807 > 0 ELSE TRUE END",
    "CASE WHEN id = 17 THEN -(age - 9223372036854775807 - 100) > 0 ELSE TRUE END",
    "CASE WHEN id = 17 THEN ABS(age * 4611686018427387904) > 0 ELSE TRUE END",
    "CASE WHEN id = 17 THEN CAST(name AS INTEGER) > 0 ELSE TRUE END",
    "CASE WHEN id = 17 THEN CAST(age * 1e300 AS INTEGER) > 0 ELSE TRUE END",
)
# total, but not an error on the person's row (inf compares): released on both neighbours
NO_RAISE = ("CASE WHEN id = 17 THEN ROUND(age * 1e308 * 10) > 0 ELSE TRUE END",)


def _tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(3)
    base = pd.DataFrame(
        {
            "id": np.arange(1, 17, dtype=np.int64),
            "age": rng.integers(18, 90, 16).astype(np.int64),
            "name": [f"n{i}" for i in range(16)],
            "g": rng.choice(["a", "b"], 16),
        }
    )
    person = pd.DataFrame({"id": [17], "age": [40], "name": ["x"], "g": ["a"]})
    return base, pd.concat([base, person], ignore_index=True)


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call()
    except ds.DPSenseError as exc:
        return type(exc).__name__, str(exc)
    return "release", result


def test_the_issue_reproductions_release_on_both_neighbours() -> None:
    base, plus = _tables()
    for text in PARTIAL + NO_RAISE:
        for data in (base, plus):
            query = f"SELECT g, COUNT(*) AS n FROM t WHERE {text} GROUP BY g"
            kind, result = _outcome(
                lambda d=data, q=query: ds.sql(
                    q, tables={"t": d}, epsilon=0.01, keys={"g": ["a", "b"]}, rng=1
                )
            )
            assert kind == "release", (text, result)
            kind, rel = _outcome(
                lambda d=data, w=text: ds.release(d, ds.Count(), where=w, epsilon=0.01, rng=1)
            )
            assert kind == "release", (text, rel)
        if text in NO_RAISE:
            continue
        # the person's row is dropped by the NULL predicate: D' releases what D releases
        on_base = ds.release(base, ds.Count(), where=text, epsilon=0.01, rng=1)
        on_plus = ds.release(plus, ds.Count(), where=text, epsilon=0.01, rng=1)
        assert on_base.value == on_plus.value, text


def test_functions_outside_the_list_are_refused_from_the_text() -> None:
    base, plus = _tables()
    for text, what in (
        ("CASE WHEN id = 17 THEN error('boom') ELSE TRUE END", "ERROR"),
        ("regexp_matches(name, '(')", "REGEXP"),
        ("strptime(name, '%Y') > DATE '2020-01-01'", "STR_TO_TIME"),
        ("name LIKE name", "LIKE with a pattern that is not a quoted text"),
        ("hash(name) > 3", "HASH"),
        ("random() < 0.5", "RAND"),
    ):
        outcomes = {
            _outcome(lambda d=d, w=text: ds.release(d, ds.Count(), where=w, epsilon=1.0, rng=1))
            for d in (base, plus)
        }
        assert len(outcomes) == 1, text
        ((kind, message),) = outcomes
        assert kind == "InputError", text
        assert what in message, (text, message)
        sql = f"SELECT COUNT(*) AS n FROM t WHERE {text}"
        outcomes = {
            _outcome(lambda d=d, q=sql: ds.sql(q, tables={"t": d}, epsilon=1.0, rng=1))
            for d in (base, plus)
        }
        assert len(outcomes) == 1, text
        ((kind, message),) = outcomes
        assert kind == "InputError", text
        assert what in message, (text, message)


def test_the_total_forms_evaluate_in_duckdb_without_error() -> None:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES (17, 9223372036854775807, 'x'), "
        "(1, -9223372036854775808, '1'), (2, 0, '')) v(id, age, name)"
    )
    for text in PARTIAL + NO_RAISE:
        plain = text.replace("CASE WHEN id = 17 THEN ", "").replace(" ELSE TRUE END", "")
        for predicate in (text, plain, f"NOT ({plain})", f"COALESCE({plain}, TRUE)"):
            made = parse_row_filter(predicate).sql
            con.execute(f"SELECT count(*) FROM t WHERE {made}").fetchall()  # never raises
    # a failed operation is NULL, and a NULL predicate keeps no row
    assert con.execute(
        f"SELECT id FROM t WHERE {parse_row_filter('age % 0 = 0 OR id = 2').sql}"
    ).fetchall() == [(2,)]


def test_total_sql_wraps_every_partial_operation() -> None:
    import sqlglot

    tree = sqlglot.parse_one(
        "a % b + c // d - e * f / g > ABS(-h) AND CAST(i AS INT) > 0", read="duckdb"
    )
    duck = total_sql(tree, "duckdb")
    for part in ("TRY_CAST(i AS INT)", "TRY(a % b)", "TRY(c // d)", "TRY(-h)", "TRY(ABS("):
        assert part in duck, duck
    assert duck.startswith("TRY(")
    spark = total_sql(tree, "spark")
    for part in ("TRY_MOD(a, b)", "TRY_DIVIDE(", "TRY_MULTIPLY(e, f)", "TRY_SUBTRACT(0, h)"):
        assert part in spark, spark


def test_a_value_off_the_declared_type_drops_its_row(tmp_path: Path) -> None:
    # the issue's case: decimal(2,0) cannot hold 101; under nulls="error" that must not
    # turn into an error (which would say whether any value reaches 100)
    base = pd.DataFrame({"id": np.arange(10), "age": [20.0, 30, 40, 50, 60, 70, 80, 90, 95, 99]})
    plus = pd.concat([base, pd.DataFrame({"id": [10], "age": [101.0]})], ignore_index=True)
    frac = pd.concat([base, pd.DataFrame({"id": [10], "age": [33.5]})], ignore_index=True)
    for schema in ({"age": "decimal(2,0)"}, {"age": "int"}):
        for table in (plus, frac) if schema["age"] == "int" else (plus,):
            got = []
            for data in (base, table):
                for form in _forms(data, tmp_path):
                    got.append(
                        ds.release(
                            form, ds.Median(0, 120), column="age", schema=schema, epsilon=1, rng=4
                        ).value
                    )
            if not (schema["age"] == "int" and table is plus):
                # the person's row is dropped: every form of D' releases D's value
                assert len(set(got)) == 1, (schema, got)


def _forms(data: pd.DataFrame, folder: Path) -> list[Any]:
    """The table as pandas, Parquet, CSV and a DuckDB relation."""
    name = f"t{len(list(folder.iterdir()))}"
    parquet = folder / f"{name}.parquet"
    csv = folder / f"{name}.csv"
    data.to_parquet(parquet)
    data.to_csv(csv, index=False)
    return [data, str(parquet), str(csv), duckdb.from_df(data)]


def test_a_filter_on_a_csv_reads_declared_types_only(tmp_path: Path) -> None:
    # one person's "n/a" turns DuckDB's inferred type of 'age' from BIGINT into VARCHAR:
    # a filter bound to inferred types would succeed on D and fail on D'
    base, _ = _tables()
    plus = pd.concat(
        [
            base.astype({"age": object}),
            pd.DataFrame({"id": [17], "age": ["n/a"], "name": ["x"], "g": ["a"]}),
        ],
        ignore_index=True,
    )
    paths = []
    for i, data in enumerate((base, plus)):
        path = tmp_path / f"d{i}.csv"
        data.to_csv(path, index=False)
        paths.append(str(path))
    refused = {
        _outcome(lambda p=p: ds.release(p, ds.Count(), where="age > 30", epsilon=1.0, rng=1))
        for p in paths
    }
    assert len({kind for kind, _ in refused}) == 1
    assert all(kind == "InputError" and "schema={'age': 'TYPE'}" in m for kind, m in refused)
    assert all("n/a" not in m and "VARCHAR" not in m for _, m in refused)
    released = [
        ds.release(p, ds.Count(), where="age > 30", schema={"age": "int"}, epsilon=1.0, rng=1).value
        for p in paths
    ]
    assert released[0] == released[1]  # "n/a" does not fit int: the person's row is dropped
    texts = [
        ds.release(p, ds.Count(), where="g = 'a'", schema={"g": "text"}, epsilon=1.0, rng=1).value
        for p in paths
    ]
    assert texts[1] == texts[0] + 1  # the same count noise (same seed), one more row


def test_a_csv_value_column_is_read_as_numbers_whatever_its_rows(tmp_path: Path) -> None:
    # DuckDB's sniffer reads a lone "-inf" as a DATE (the infinite date); a finite row
    # beside it makes the column DOUBLE: the outcome must not depend on that
    empty = tmp_path / "empty.csv"
    empty.write_text("x\n")
    lone = tmp_path / "lone.csv"
    lone.write_text("x\n-inf\n")
    query = "SELECT SUM(x) AS s FROM t"
    kinds = {
        _outcome(
            lambda p=p: ds.sql(query, tables={"t": str(p)}, bounds={"x": (-10, 10)}, epsilon=2)
        )[0]
        for p in (empty, lone)
    }
    assert kinds == {"release"}


def test_variance_bounds_whose_squares_overflow_are_refused_from_the_bounds() -> None:
    for statistic in (ds.Variance, ds.Std):
        with pytest.raises(ds.InputError, match="within ±"):
            statistic(-1e300, 1e300)
        statistic(-(2.0**500), 2.0**500)  # squares stay finite doubles
