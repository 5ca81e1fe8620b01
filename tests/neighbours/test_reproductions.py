"""The reproductions of the audit (issue "No outcome may depend on one person"), each on a
table D and on D' = D plus one person, with the same seed: the same outcome (a release, or
the same error class with the same text), the same charge, the same columns and groups.

1. ``ds.sql`` with ``WHERE CASE WHEN id = 17 THEN age % 0 = 1 ELSE TRUE END``;
2. ``ds.release(..., where="CASE WHEN id = 17 THEN error('boom') ELSE TRUE END")``, which
   must be refused from the text alone (then on every table alike) or give the same outcome;
3. the same WHERE through ``dpsense sql`` (exit code 0 vs 2 in the audit);
4. ``schema={"age": "decimal(2,0)"}`` and an age of 101 under the default ``nulls="error"``;
5. ``keys=[2015, 2016, "unknown"]`` on a CSV with and without a row whose year is "n/a";
6. a dict of two unbounded statistics on a one-column input with ``bounds="private"`` under
   an Accountant: if it raises, ``.spent`` has not moved (validate, then charge).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from tests.neighbours.harness import Outcome, _main, observe

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

AGES = [23, 35, 41, 41, 52, 58, 64, 70, 29, 33]
TARGET = 17  # the person whose presence the attacker wants to learn
INFERRED_TYPES = ("BIGINT", "VARCHAR", "DOUBLE", "INTEGER", "HUGEINT")


def people(with_target: bool, target_age: int = 47) -> pd.DataFrame:
    ids = list(range(1, len(AGES) + 1))
    ages = list(AGES)
    if with_target:
        ids.append(TARGET)
        ages.append(target_age)
    return pd.DataFrame(
        {"id": pd.Series(ids, dtype="int64"), "age": pd.Series(ages, dtype="int64")}
    )


def write(df: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)
    return path


def assert_same(a: Outcome, b: Outcome, what: str, public_keys: bool = True) -> None:
    differences = a.differences(b, public_keys)
    assert not differences, (
        f"{what}: the outcome depends on one person\n  on D : {a.short()}\n  on D': {b.short()}"
        "\n  differs in: " + " | ".join(differences)
    )


def both(
    make: Callable[[bool], Any], call: Callable[[Any], Any], accountant: bool
) -> tuple[Outcome, Outcome]:
    """``call(make(False))`` and ``call(make(True))``, each charged to a fresh accountant
    when ``accountant`` (the call then takes it as its second argument)."""
    out = []
    for with_target in (False, True):
        data = make(with_target)
        if accountant:
            acc = ds.Accountant(epsilon=10.0, delta=1e-3)
            out.append(observe(lambda d=data, a=acc: call(d, a), acc))
        else:
            out.append(observe(lambda d=data: call(d, None)))
    return out[0], out[1]


# -- 1. ds.sql with % 0 on the target's row -----------------------------------------------

MOD_ZERO = "CASE WHEN id = 17 THEN age % 0 = 1 ELSE TRUE END"


@pytest.mark.parametrize("accountant", [False, True], ids=["plain", "accountant"])
@pytest.mark.parametrize(
    "where",
    [
        MOD_ZERO,
        "CASE WHEN id = 17 THEN age // 0 = 1 ELSE TRUE END",
        "CASE WHEN id = 17 THEN age * 9223372036854775807 > 0 ELSE TRUE END",
        "CASE WHEN id = 17 THEN CAST(age AS DECIMAL(2,0)) > 0 ELSE TRUE END",
    ],
)
def test_sql_where_that_raises_on_one_row(where: str, accountant: bool) -> None:
    query = f"SELECT COUNT(*) AS n, AVG(age) AS mean_age FROM people WHERE {where}"

    def call(df: pd.DataFrame, acc: Any) -> Any:
        return ds.sql(query, tables={"people": df}, epsilon=0.01, bounds={"age": (0, 100)},
                      rng=5, accountant=acc)  # fmt: skip

    a, b = both(people, call, accountant)
    assert_same(a, b, f"ds.sql(... WHERE {where})")


# -- 2. ds.release(where=...) with a function that raises -----------------------------------

ERROR_BOOM = "CASE WHEN id = 17 THEN error('boom') ELSE TRUE END"


@pytest.mark.parametrize("accountant", [False, True], ids=["plain", "accountant"])
@pytest.mark.parametrize(
    "where", [ERROR_BOOM, MOD_ZERO, "CASE WHEN id = 17 THEN CAST('x' || age AS INTEGER) > 0 END"]
)
def test_release_where_that_raises_on_one_row(where: str, accountant: bool) -> None:
    def call(df: pd.DataFrame, acc: Any) -> Any:
        run = ds.release if acc is None else acc.release
        return run(df, ds.Count(), epsilon=0.01, where=where, rng=5)

    a, b = both(people, call, accountant)
    assert_same(a, b, f"ds.release(where={where!r})")
    if a.kind == "error":  # refused: from the text alone, so on any table alike
        empty, _ = both(lambda _: people(False).iloc[:0], call, accountant)
        assert_same(a, empty, "a refusal that is not decided from the text alone")
        if accountant:
            assert a.charge == (0.0, 0.0), "refused from the text, yet charged"


# -- 3. the command line: exit 0 vs 2 -------------------------------------------------------


@pytest.mark.parametrize(
    ("suffix", "schema"),
    [(".csv", []), (".csv", ["--schema", "id=int,age=int"]), (".parquet", [])],
    ids=["csv", "csv-declared", "parquet"],
)
def test_cli_sql_where_exit_code(suffix: str, schema: list[str], tmp_path: Path) -> None:
    path = tmp_path / f"people{suffix}"
    results = []
    for with_target in (False, True):
        write(people(with_target), path)
        query = f"SELECT COUNT(*) AS n FROM '{path}' WHERE {MOD_ZERO}"
        code, out, err = _main(["sql", query, "--epsilon", "0.01", "--seed", "5", *schema])
        results.append((code, err, sorted(out.split("\n")[0].split()) if code else None))
    (code_d, err_d, _), (code_e, err_e, _) = results
    assert (code_d, err_d) == (code_e, err_e), (
        f"dpsense sql ... WHERE {MOD_ZERO}: exit {code_d} {err_d!r} on D, "
        f"exit {code_e} {err_e!r} on D'"
    )


# -- 4. a declared decimal(2,0) and an age of 101 -------------------------------------------


@pytest.mark.parametrize("container", ["pandas", "csv", "parquet", "duckdb"])
@pytest.mark.parametrize("nulls", ["error", "drop"])
def test_schema_value_off_the_declared_type(container: str, nulls: str, tmp_path: Path) -> None:
    import duckdb

    def make(with_target: bool) -> Any:
        df = people(with_target, target_age=101)
        if container == "pandas":
            return df
        if container == "duckdb":
            return duckdb.from_df(df)
        return write(df, tmp_path / f"people.{container}")

    def call(data: Any, acc: Any) -> Any:
        return ds.release(data, ds.Median(0, 100), column="age", schema={"age": "decimal(2,0)"},
                          nulls=nulls, privacy_unit="id", epsilon=1.0, rng=5)  # fmt: skip

    a, b = both(make, call, accountant=False)
    assert_same(a, b, "schema={'age': 'decimal(2,0)'} and an age of 101")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_cli_schema_value_off_the_declared_type(suffix: str, tmp_path: Path) -> None:
    path = tmp_path / f"people{suffix}"
    results = []
    for with_target in (False, True):
        write(people(with_target, target_age=101), path)
        code, _, err = _main(["release", str(path), "--column", "age", "--statistic", "median",
                              "--lower", "0", "--upper", "100", "--schema", "age=decimal(2,0)",
                              "--epsilon", "1", "--seed", "5", "--json"])  # fmt: skip
        results.append((code, err))
    assert results[0] == results[1], f"on D: {results[0]!r}; on D': {results[1]!r}"


# -- 5. keys of mixed types on a CSV, with and without an "n/a" year ------------------------


def _years_csv(path: Path, with_target: bool) -> Path:
    rows = [(i, 2015 + i % 3, 20 + i) for i in range(1, 13)]
    if with_target:
        rows.append((TARGET, "n/a", 47))
    path.write_text("id,year,age\n" + "".join(f"{i},{y},{a}\n" for i, y, a in rows))
    return path


@pytest.mark.parametrize("accountant", [False, True], ids=["plain", "accountant"])
@pytest.mark.parametrize(
    "statistic",
    [ds.Count(), {"n": ds.Count(), "mean_age": ("age", ds.Mean(0, 100))}],
    ids=["count", "query"],
)
def test_keys_on_a_csv_with_an_na_row(statistic: Any, accountant: bool, tmp_path: Path) -> None:
    path = tmp_path / "years.csv"

    def call(data: Path, acc: Any) -> Any:
        run = ds.release if acc is None else acc.release
        column = {"column": "age"} if not isinstance(statistic, dict) else {}
        return run(data, statistic, by="year", keys=[2015, 2016, "unknown"], epsilon=1.0,
                   rng=5, **column)  # fmt: skip

    a, b = both(lambda t: _years_csv(path, t), call, accountant)
    assert_same(a, b, 'keys=[2015, 2016, "unknown"] on a CSV with an "n/a" year')
    for outcome in (a, b):
        if outcome.kind == "error":
            assert outcome.error is not None
            named = [t for t in INFERRED_TYPES if t in outcome.error[1]]
            assert not named, f"the message names an inferred type {named}: {outcome.error[1]}"


def test_sql_keys_on_a_csv_with_an_na_row(tmp_path: Path) -> None:
    path = tmp_path / "years.csv"
    query = "SELECT year, COUNT(*) AS n FROM t GROUP BY year"

    def call(data: Path, acc: Any) -> Any:
        return ds.sql(query, tables={"t": data}, keys={"year": [2015, 2016, "unknown"]},
                      epsilon=1.0, rng=5)  # fmt: skip

    a, b = both(lambda t: _years_csv(path, t), call, accountant=False)
    assert_same(a, b, 'ds.sql keys={"year": [2015, 2016, "unknown"]} on a CSV with "n/a"')


# -- 6. validate, then charge: two unbounded statistics on one column -----------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda t: [31.0, 45.0, 45.0, 52.0, 60.0] + ([1e6] if t else []),
        lambda t: np.array([31.0, 45.0, 45.0, 52.0, 60.0] + ([1e6] if t else [])),
        lambda t: pd.Series([31.0, 45.0, 45.0, 52.0, 60.0] + ([1e6] if t else []), name="v"),
        lambda t: pd.DataFrame({"v": [31.0, 45.0, 45.0, 52.0, 60.0] + ([1e6] if t else [])}),
    ],
    ids=["list", "numpy", "series", "one-column-frame"],
)
@pytest.mark.parametrize(
    "query",
    [
        {"mean": ds.Mean(), "median": ds.Median()},
        {"q": ds.Quantiles([0.1, 0.9]), "sd": ds.Std()},
    ],
    ids=["mean-median", "quantiles-std"],
)
def test_unbounded_query_on_one_column_charges_only_what_runs(
    make: Callable[[bool], Any], query: dict[str, Any]
) -> None:
    def call(data: Any, acc: Any) -> Any:
        return acc.release(data, query, bounds="private", epsilon=1.0, rng=5)

    a, b = both(make, call, accountant=True)
    assert_same(a, b, "a dict of two unbounded statistics with bounds='private'")
    for outcome in (a, b):
        if outcome.kind == "error":
            assert outcome.charge == (0.0, 0.0), (
                f"{outcome.error}: raised after the charge {outcome.charge}"
            )
            assert outcome.error is not None
            assert outcome.error[0] in ("InputError", "BudgetExceededError"), outcome.error


# -- joint release of a column's quantiles (the plan's merge) ------------------------------


def _survey(with_target: bool) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    g = np.repeat(["a", "b"], 40)
    w = np.round(rng.lognormal(2.0, 0.6, 80), 2)
    if with_target:  # one more person, far in the tail of group b
        g, w = np.append(g, "b"), np.append(w, 49.0)
    return pd.DataFrame({"pid": np.arange(len(w)), "g": g, "w": w})


@pytest.mark.parametrize("keys", [{"g": ["a", "b"]}, None], ids=["public-keys", "selected"])
@pytest.mark.parametrize("bounds", [{"w": (0.0, 50.0)}, "private"], ids=["public", "private"])
def test_merged_quantiles_say_and_charge_the_same_with_one_more_person(
    keys: dict[str, list[str]] | None, bounds: Any
) -> None:
    """MEDIAN and a two-level QUANTILE_CONT of one column are released jointly (the plan
    decides from the request): what the release says (the merge, the split, the columns)
    and what it charges do not change when one person is added."""
    query = (
        "SELECT g, MEDIAN(w) AS med, QUANTILE_CONT(w, [0.1, 0.9]) AS q, COUNT(*) AS n "
        "FROM t GROUP BY g"
    )

    def call(data: Any, acc: Any) -> Any:
        return acc.sql(query, tables={"t": data}, privacy_unit="pid", bounds=bounds,
                       keys=keys, epsilon=1.0, delta=delta, rng=5)  # fmt: skip

    delta = 0.0 if keys is not None else 1e-6  # private selection needs delta
    a, b = both(_survey, call, accountant=True)
    assert a.kind == "release", a.error
    assert_same(a, b, "a merged joint release of quantiles", public_keys=keys is not None)
    merged = ds.sql(query, tables={"t": _survey(False)}, privacy_unit="pid", bounds=bounds,
                    keys=keys, epsilon=1.0, delta=delta, rng=5).parameters["split"]  # fmt: skip
    assert merged["med"].get("released_with"), merged["med"]  # the merge happened
