"""The SQL front end: supported forms parse to the right spec, and translate to the right
statistics, keys and post-processing (no data is read here)."""

from __future__ import annotations

import dataclasses

import pytest

import dpsense as ds
from dpsense.errors import InputError
from dpsense.query.sql import OrderKey, SqlAggregate, SqlQuery, SqlSource, parse_sql
from dpsense.query.sql_plan import group_keys, ordered_rows, statistics

DESIGN_QUERY = (
    "SELECT year, COUNT(*) AS n, MEDIAN(wage) AS median_wage, AVG(hours) AS mean_hours "
    "FROM males WHERE school >= 12 GROUP BY year"
)


def test_the_design_query() -> None:
    spec = parse_sql(DESIGN_QUERY)
    assert spec.sources == (SqlSource("males", False, "males"),)
    assert spec.joins == ()
    assert dict(spec.column_tables) == {"year": None, "wage": None, "hours": None, "school": None}
    assert dataclasses.replace(spec, sources=(), column_tables=()) == SqlQuery(
        table="males",
        table_is_path=False,
        by=("year",),
        aggregates=(
            SqlAggregate("n", "count", None),
            SqlAggregate("median_wage", "median", "wage"),
            SqlAggregate("mean_hours", "mean", "hours"),
        ),
        columns=("year", "n", "median_wage", "mean_hours"),
        where="school >= 12",
        by_names=("year",),
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.table = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("select", "expected"),
    [
        ("COUNT(*)", SqlAggregate("count", "count", None)),
        ("COUNT(wage)", SqlAggregate("count_wage", "count", "wage")),
        ("SUM(wage)", SqlAggregate("sum_wage", "sum", "wage")),
        ("AVG(wage)", SqlAggregate("avg_wage", "mean", "wage")),
        ("MEDIAN(wage)", SqlAggregate("median_wage", "median", "wage")),
        ("QUANTILE_CONT(wage, 0.9)", SqlAggregate("quantile_wage", "quantile", "wage", (0.9,))),
        ("QUANTILE_DISC(wage, 0.25)", SqlAggregate("quantile_wage", "quantile", "wage", (0.25,))),
        (
            "PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY wage)",
            SqlAggregate("quantile_wage", "quantile", "wage", (0.5,)),
        ),
        (
            "QUANTILE_CONT(wage, [0.1, 0.5, 0.9])",
            SqlAggregate("quantile_wage", "quantiles", "wage", (0.1, 0.5, 0.9)),
        ),
        ("QUANTILE_CONT(wage, [0.5])", SqlAggregate("quantile_wage", "quantiles", "wage", (0.5,))),
        ("VAR_POP(wage)", SqlAggregate("var_wage", "variance", "wage")),
        ("VARIANCE(wage)", SqlAggregate("var_wage", "variance", "wage")),
        ("STDDEV_POP(wage)", SqlAggregate("stddev_wage", "std", "wage")),
        ("STDDEV(wage)", SqlAggregate("stddev_wage", "std", "wage")),
        ("median(t.wage) AS m", SqlAggregate("m", "median", "wage")),
    ],
)
def test_each_aggregate(select: str, expected: SqlAggregate) -> None:
    spec = parse_sql(f"SELECT {select} FROM t")
    assert spec.aggregates == (expected,)
    assert spec.by == ()


def test_paths_aliases_and_post_processing() -> None:
    spec = parse_sql(
        "SELECT p.year, COUNT(*) AS n, AVG(p.hours) FROM 'panel.parquet' AS p "
        "WHERE p.educ BETWEEN 12 AND 16 AND p.name LIKE 'a%' AND CAST(p.x AS INT) IN (1, 2) "
        "GROUP BY p.year ORDER BY n DESC NULLS FIRST, 1 LIMIT 3 OFFSET 1"
    )
    assert (spec.table, spec.table_is_path) == ("panel.parquet", True)
    assert spec.columns == ("year", "n", "avg_hours")
    # qualifiers dropped; the release makes the predicate total (tables/row_filter.py)
    assert spec.where == ("educ BETWEEN 12 AND 16 AND name LIKE 'a%' AND CAST(x AS INT) IN (1, 2)")
    assert spec.order_by == (OrderKey("n", True, True), OrderKey("year", False, False))
    assert (spec.limit, spec.offset) == (3, 1)
    assert parse_sql("SELECT COUNT(*) FROM read_parquet('a.parquet')").table == "a.parquet"
    assert parse_sql("SELECT AVG(x) AS a FROM t ORDER BY AVG(x)").order_by == (OrderKey("a"),)


def test_statistics_in_select_order() -> None:
    spec = parse_sql(
        "SELECT year, COUNT(*) AS n, MEDIAN(wage) AS m, QUANTILE_CONT(wage, [0.1, 0.9]) AS q, "
        "COUNT(hours) AS c, STDDEV(hours) AS s FROM t GROUP BY year"
    )
    stats = statistics(spec, {"wage": (-1, 4), "hours": (0, 80)})
    assert list(stats) == ["n", "m", "q", "c", "s"]
    assert stats["n"] == ds.Count()
    assert stats["m"] == ("wage", ds.Median(-1, 4))
    assert stats["q"] == ("wage", ds.Quantiles([0.1, 0.9], -1, 4))
    assert stats["c"] == ("hours", ds.Count())
    assert stats["s"] == ("hours", ds.Std(0, 80))
    private = statistics(spec, "private")
    assert private["m"] == ("wage", ds.Median())
    # COUNT needs no bounds
    assert statistics(parse_sql("SELECT COUNT(*) FROM t"), None) == {"count": ds.Count()}


@pytest.mark.parametrize(
    ("bounds", "fragment"),
    [
        (None, "bounds='private'"),
        ({"hours": (0, 80)}, "no bounds for the column 'wage'"),
        ({"wage": (4, -1)}, "lower"),
        ({"wage": 3}, "a pair"),
        ("public", "'private'"),
    ],
)
def test_missing_or_bad_bounds(bounds: object, fragment: str) -> None:
    spec = parse_sql("SELECT MEDIAN(wage) FROM t")
    with pytest.raises(InputError, match="bounds") as info:
        statistics(spec, bounds)  # type: ignore[arg-type]
    assert fragment in str(info.value)


def test_group_keys() -> None:
    one = parse_sql("SELECT year, COUNT(*) FROM t GROUP BY year")
    two = parse_sql("SELECT year, sex, COUNT(*) FROM t GROUP BY year, sex")
    assert group_keys(one, None) is None
    assert group_keys(one, {"year": [1980, 1981]}) == [1980, 1981]
    assert group_keys(two, {"sex": ["f", "m"], "year": [1980, 1981]}) == [
        (1980, "f"),
        (1980, "m"),
        (1981, "f"),
        (1981, "m"),
    ]
    with pytest.raises(InputError, match="must have the group columns"):
        group_keys(two, {"year": [1980]})
    with pytest.raises(InputError, match="no GROUP BY"):
        group_keys(parse_sql("SELECT COUNT(*) FROM t"), {"year": [1980]})


def test_order_limit_on_released_rows() -> None:
    spec = parse_sql("SELECT g, AVG(x) AS a FROM t GROUP BY g ORDER BY a DESC, g LIMIT 3")
    rows = [
        {"g": "p", "a": 1.0},
        {"g": "q", "a": None},  # refused: last, as DuckDB puts nulls
        {"g": "r", "a": 5.0},
        {"g": "s", "a": 1.0},
    ]
    assert ordered_rows(spec, rows) == [2, 0, 3]
    first = parse_sql("SELECT g, AVG(x) AS a FROM t GROUP BY g ORDER BY a NULLS FIRST OFFSET 1")
    assert ordered_rows(first, rows) == [0, 3, 2]
    plain = parse_sql("SELECT g, AVG(x) AS a FROM t GROUP BY g")
    assert ordered_rows(plain, rows) == [0, 1, 2, 3]


def test_unquoted_file_name_is_told_to_quote() -> None:
    with pytest.raises(InputError, match=r"FROM 'males\.parquet'"):
        parse_sql("SELECT COUNT(*) FROM males.parquet")


def test_import_dpsense_does_not_import_sqlglot() -> None:
    """sqlglot takes ~0.4 s to import: the first query pays it, not every program."""
    import subprocess
    import sys

    code = "import sys, dpsense, dpsense.cli.app; print('sqlglot' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
