"""Aliases in ds.sql as people write them: a GROUP BY column renamed in SELECT, GROUP BY
its alias, GROUP BY a position, and aggregates renamed, on one table and on joins. The
released columns carry the aliases, keys= names the groups by them, and the release is the
unaliased query's (the same seeded numbers)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.errors import InputError
from tests.query.test_sql_joins import UNITS, shop

pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

YEARS = [2000, 2001, 2002]


@pytest.fixture(scope="module")
def people() -> Any:
    rng = np.random.default_rng(3)
    n = 400
    return pd.DataFrame(
        {
            "pid": np.arange(n),
            "year": rng.choice(YEARS, n),
            "region": rng.choice(["north", "south"], n),
            "wage": rng.uniform(0, 10, n).round(2),
        }
    )


def _sql(query: str, data: Any, **kw: Any) -> list[dict[str, Any]]:
    options: dict[str, Any] = {"epsilon": 1.0, "privacy_unit": "pid", "rng": 11,
                               "bounds": {"wage": (0, 10)}}  # fmt: skip
    options.update(kw)
    return ds.sql(query, tables={"t": data}, **options).to_dicts()


def _renamed(rows: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    return [{names.get(k, k): v for k, v in row.items()} for row in rows]


PLAIN = "SELECT year, COUNT(*) AS n, AVG(wage) AS mean_wage FROM t GROUP BY year"


@pytest.mark.parametrize(
    "query",
    [
        "SELECT year AS y, COUNT(*) AS n, AVG(wage) AS mean_wage FROM t GROUP BY year",
        "SELECT year AS y, COUNT(*) AS n, AVG(wage) AS mean_wage FROM t GROUP BY y",
        "SELECT year AS y, COUNT(*) AS n, AVG(wage) AS mean_wage FROM t GROUP BY 1",
        "SELECT t.year AS y, COUNT(*) AS n, AVG(t.wage) AS mean_wage FROM t GROUP BY t.year",
    ],
)
def test_an_aliased_group_column_releases_the_unaliased_numbers(people: Any, query: str) -> None:
    want = _sql(PLAIN, people, keys={"year": YEARS})
    got = _sql(query, people, keys={"y": YEARS})
    assert got == _renamed(want, {"year": "y"})
    assert list(got[0])[:2] == ["y", "n"]
    assert "year" not in got[0]
    assert "mean_wage" in got[0]
    assert [r["y"] for r in got] == YEARS


def test_group_by_a_position_without_an_alias(people: Any) -> None:
    want = _sql(PLAIN, people, keys={"year": YEARS})
    assert _sql(PLAIN.replace("GROUP BY year", "GROUP BY 1"), people, keys={"year": YEARS}) == want


def test_aliases_of_statistics_rename_only_the_column(people: Any) -> None:
    want = _sql("SELECT year, COUNT(*), AVG(wage) FROM t GROUP BY year", people,
                keys={"year": YEARS})  # fmt: skip
    got = _sql("SELECT year AS y, COUNT(*) AS n, AVG(wage) AS m FROM t GROUP BY 1", people,
               keys={"y": YEARS})  # fmt: skip
    names = {"year": "y", "count": "n", "avg_wage": "m"}
    assert got == [{_alias(k, names): v for k, v in row.items()} for row in want]


def _alias(column: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        if column == old or column.startswith(old + "_"):
            return new + column[len(old) :]
    return column


def test_several_group_columns_in_mixed_forms(people: Any) -> None:
    plain = "SELECT region, year, COUNT(*) AS n FROM t GROUP BY region, year ORDER BY n DESC"
    keys = {"region": ["north", "south"], "year": YEARS}
    want = _sql(plain, people, keys=keys)
    for query in (
        "SELECT region AS r, year, COUNT(*) AS n FROM t GROUP BY r, 2 ORDER BY n DESC",
        "SELECT region AS r, year, COUNT(*) AS n FROM t GROUP BY 1, year ORDER BY 3 DESC",
        "SELECT region AS r, year, COUNT(*) AS n FROM t GROUP BY region, 2 ORDER BY n DESC",
    ):
        got = _sql(query, people, keys={"r": keys["region"], "year": YEARS})
        assert got == _renamed(want, {"region": "r"}), query
    assert len(want) == 6


def test_order_by_the_alias_or_the_column(people: Any) -> None:
    base = "SELECT year AS y, COUNT(*) AS n FROM t GROUP BY 1 "
    for order in ("ORDER BY y DESC", "ORDER BY year DESC", "ORDER BY 1 DESC"):
        rows = _sql(base + order, people, keys={"y": YEARS})
        assert [r["y"] for r in rows] == YEARS[::-1], order


def test_keys_as_a_table_name_the_aliases(people: Any) -> None:
    query = "SELECT region AS r, year AS y, COUNT(*) AS n FROM t GROUP BY y, r"
    frame = pd.DataFrame({"r": ["north", "south"], "y": [2000, 2002]})
    rows = _sql(query, people, keys=frame)
    assert [(r["y"], r["r"]) for r in rows] == [(2000, "north"), (2002, "south")]
    want = _sql("SELECT region, year, COUNT(*) AS n FROM t GROUP BY year, region", people,
                keys=[(2000, "north"), (2002, "south")])  # fmt: skip
    assert rows == _renamed(want, {"region": "r", "year": "y"})


def test_keys_named_by_the_column_instead_of_the_alias_are_refused(people: Any) -> None:
    acc = ds.Accountant(epsilon=5.0)
    with pytest.raises(InputError) as info:
        ds.sql("SELECT year AS y, COUNT(*) AS n FROM t GROUP BY year", tables={"t": people},
               epsilon=1.0, privacy_unit="pid", keys={"year": YEARS}, accountant=acc)  # fmt: skip
    message = str(info.value)
    assert "'year' as 'y'" in message
    assert "keys={'y': [...]}" in message
    assert acc.spent == (0.0, 0.0)


G = "SELECT year, COUNT(*) AS n FROM t GROUP BY "
REFUSED = [
    (G + "5", "groups by position 5; the SELECT list has 2"),
    (G + "0", "groups by position 0"),
    (G + "2", "groups by position 2 ('n'), which is not a column"),
    ("SELECT COUNT(*), year FROM t GROUP BY 1", "groups by position 1, which is not a column"),
    (G + "n", "groups by 'n', the alias of an aggregate"),
    (G + "year + 1", "groups by an expression"),
    (
        "SELECT year AS y, year AS z, COUNT(*) AS n FROM t GROUP BY year",
        "selects the GROUP BY column 'year' twice",
    ),
    ("SELECT year AS n, COUNT(*) AS n FROM t GROUP BY year", "releases two columns named 'n'"),
    (
        "SELECT year AS y, COUNT(*) AS year FROM t GROUP BY 1",
        "names the aggregate 'year' like the GROUP BY column",
    ),
    (
        "SELECT year AS region, COUNT(*) AS n FROM t GROUP BY region",
        "both the alias of the column 'year' and a column",
    ),
]


@pytest.mark.parametrize(("query", "words"), REFUSED)
def test_refusals_name_the_entry_and_charge_nothing(people: Any, query: str, words: str) -> None:
    acc = ds.Accountant(epsilon=5.0)
    with pytest.raises(InputError) as info:
        ds.sql(query, tables={"t": people}, epsilon=1.0, delta=1e-6, privacy_unit="pid",
               accountant=acc)  # fmt: skip
    assert words in str(info.value)
    assert "north" not in str(info.value)
    assert acc.spent == (0.0, 0.0)


# -- joins ---------------------------------------------------------------------------------

JOIN = (
    "FROM items i JOIN orders o ON i.order_id = o.order_id JOIN customers c ON "
    "o.customer_id = c.customer_id JOIN regions r ON c.country = r.country"
)


def _join(query: str, **kw: Any) -> list[dict[str, Any]]:
    options: dict[str, Any] = {"privacy_unit": UNITS, "public_tables": ["regions"],
                               "max_rows_per_unit": 2, "epsilon": 1.0, "rng": 4,
                               "bounds": {"price": (0, 20)}}  # fmt: skip
    options.update(kw)
    return ds.sql(query, tables=shop(seed=8, n_customers=150), **options).to_dicts()


@pytest.mark.parametrize("group", ["r.region", "reg", "1"])
def test_a_public_group_column_aliased_needs_no_keys(group: str) -> None:
    want = _join(f"SELECT r.region, COUNT(*) AS n, MEDIAN(i.price) AS med {JOIN} GROUP BY r.region")
    got = _join(f"SELECT r.region AS reg, COUNT(*) AS n, MEDIAN(i.price) AS med {JOIN} "
                f"GROUP BY {group} ORDER BY reg")  # fmt: skip
    assert got == _renamed(want, {"region": "reg"})
    assert [r["reg"] for r in got] == ["Asia", "Europe", "Oceania"]


def test_a_private_group_column_aliased_takes_keys_by_its_alias() -> None:
    want = _join(f"SELECT c.country, COUNT(*) AS n {JOIN} GROUP BY c.country",
                 keys={"country": ["de", "fr"]})  # fmt: skip
    got = _join(f"SELECT c.country AS cc, COUNT(*) AS n {JOIN} GROUP BY 1",
                keys={"cc": ["de", "fr"]})  # fmt: skip
    assert got == _renamed(want, {"country": "cc"})
    assert [r["cc"] for r in got] == ["de", "fr"]


def test_a_join_alias_that_is_a_column_of_a_table_is_refused() -> None:
    with pytest.raises(InputError) as info:
        _join(f"SELECT r.region AS country, COUNT(*) AS n {JOIN} GROUP BY country")
    assert "'country', which is both the alias of the column 'region'" in str(info.value)
    assert "the table 'customers'" in str(info.value)
