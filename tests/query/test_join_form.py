"""ds.join: joins without SQL, released by ds.release and Accountant.release exactly as
the same JOIN ... ON through ds.sql (the same seeded answer, the same refusals)."""

from __future__ import annotations

from typing import Any

import pytest

import dpsense as ds
from dpsense.errors import InputError
from tests.query.test_sql_joins import UNITS, shop

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

SQL = (
    "SELECT r.region, COUNT(*) AS n, MEDIAN(i.price) AS med FROM items i "
    "JOIN orders o ON i.order_id = o.order_id JOIN customers c ON o.customer_id = "
    "c.customer_id JOIN regions r ON c.country = r.country WHERE i.price > 1 GROUP BY r.region"
)
ON = [
    ("items", "orders", "order_id"),
    ("orders", "customers", "customer_id"),
    ("customers", "regions", "country"),
]
KW: dict[str, Any] = {"privacy_unit": UNITS, "max_rows_per_unit": 2, "epsilon": 1.0, "rng": 4}


def test_the_same_answer_as_the_sql_join() -> None:
    tables = shop(seed=8, n_customers=150)
    joined = ds.join(tables, on=ON, public_tables=["regions"])
    got = ds.release(
        joined,
        {"n": ds.Count(), "med": ("price", ds.Median(0, 20))},
        by="region",
        where="price > 1",
        **KW,
    ).to_dicts()
    want = ds.sql(
        SQL, tables=tables, public_tables=["regions"], bounds={"price": (0, 20)}, **KW
    ).to_dicts()
    assert got == want
    assert [r["region"] for r in got] == ["Asia", "Europe", "Oceania"]


def test_an_accountant_charges_the_join_once() -> None:
    tables = shop(seed=8, n_customers=50)
    acc = ds.Accountant(epsilon=2.0)
    joined = ds.join(tables, on=ON, public_tables=["regions"])
    acc.release(joined, {"n": ds.Count()}, by="region", **KW)
    assert acc.spent == (1.0, 0.0)
    with pytest.raises(InputError, match="LEFT JOINs the private table"):
        acc.release(
            ds.join(tables, on=ON, how=["inner", "left", "inner"], public_tables=["regions"]),
            {"n": ds.Count()},
            by="region",
            **KW,
        )
    assert acc.spent == (1.0, 0.0)


@pytest.mark.parametrize(
    ("on", "kw", "words"),
    [
        ([("items", "orders")], {}, "(left, right, column)"),
        ([("items", "nowhere", "order_id")], {}, "not in 'tables'"),
        ([("orders", "customers", "x"), ("items", "regions", "y")], {}, "not joined yet"),
        ([("items", "orders", "order_id"), ("orders", "items", "order_id")], {}, "already"),
        ([("items", "orders", "order_id")], {"how": "outer"}, "'inner' or 'left'"),
        ([("items", "orders", "order_id")], {"how": ["inner", "left"]}, "one of them per join"),
        ([("items", "orders", 3.5)], {}, "must be a column name"),
        ([*ON[:2], ("customers", "regions", "nope")], {}, "not in the table"),
    ],
)
def test_malformed_joins_are_refused(
    on: list[tuple[Any, ...]], kw: dict[str, Any], words: str
) -> None:
    tables = shop(seed=8, n_customers=20)

    def attempt() -> None:
        joined = ds.join(tables, on=on, public_tables=["regions"], **kw)
        ds.release(joined, {"n": ds.Count()}, **KW)

    with pytest.raises(InputError) as info:
        attempt()
    assert words in str(info.value)


def test_private_tables_on_other_keys_are_refused_as_in_sql() -> None:
    tables = shop(seed=8, n_customers=20)
    joined = ds.join(tables, on=[("orders", "customers", "order_id", "customer_id")])
    with pytest.raises(InputError, match="does not equate their privacy units"):
        ds.release(joined, {"n": ds.Count()}, **KW)


def test_one_public_table_may_be_named_by_a_string() -> None:
    tables = shop(seed=8, n_customers=60)
    stats = {"n": ds.Count()}
    want = ds.release(ds.join(tables, on=ON, public_tables=["regions"]), stats, by="region", **KW)
    got = ds.release(ds.join(tables, on=ON, public_tables="regions"), stats, by="region", **KW)
    assert got.to_dicts() == want.to_dicts()
    assert ds.join(tables, on=ON, public_tables="regions").public_tables == ("regions",)


def _message(attempt: Any) -> str:
    with pytest.raises(InputError) as info:
        attempt()
    return str(info.value)


def _speaks_of_ds_join(message: str) -> None:
    assert "ds.join" in message
    assert "ds.sql" not in message
    assert "SQL query" not in message


def test_an_unknown_public_table_is_refused_by_ds_join_naming_each_table_once() -> None:
    tables = shop(seed=8, n_customers=20)
    message = _message(lambda: ds.join(tables, on=ON, public_tables=["regions", "nope"]))
    _speaks_of_ds_join(message)
    assert "'nope'" in message
    for name in ("items", "orders", "customers", "regions"):
        assert message.count(repr(name)) == 1, name
    assert "ds.join" in _message(lambda: ds.join(tables, on=ON, public_tables=3))


@pytest.mark.parametrize(
    ("release", "words"),
    [
        ({"by": "nope"}, "The release of ds.join reads the column 'nope', which is in none"),
        ({"where": "nope > 1"}, "The release of ds.join reads the column 'nope'"),
        ({"by": "country"}, "'country', which is in several tables ('customers', 'regions')"),
        ({"privacy_unit": None}, "The release of ds.join needs privacy_unit="),
        ({"privacy_unit": {"nowhere": "x"}}, "'privacy_unit' parameter of the release of ds.join"),
        ({"where": "shops.price > 1"}, "'shops', which is not a table of the ds.join"),
    ],
)
def test_release_errors_speak_of_ds_join(release: dict[str, Any], words: str) -> None:
    tables = shop(seed=8, n_customers=20)
    joined = ds.join(tables, on=ON, public_tables=["regions"])
    message = _message(lambda: ds.release(joined, {"n": ds.Count()}, **{**KW, **release}))
    assert words in message
    _speaks_of_ds_join(message)
    assert message.count("'items'") <= 1


def test_a_missing_join_column_is_named_before_the_units_are_compared() -> None:
    tables = shop(seed=8, n_customers=20)
    joined = ds.join(tables, on=[("orders", "customers", "nope", "customer_id")])
    message = _message(lambda: ds.release(joined, {"n": ds.Count()}, **KW))
    assert "The column 'nope' of a join condition is not in the table 'orders'" in message
    sql = "SELECT COUNT(*) FROM orders o JOIN customers c ON o.nope = c.customer_id"
    message = _message(lambda: ds.sql(sql, tables=tables, **KW))
    assert "The column 'nope' of a join condition is not in the table 'orders'" in message


@pytest.mark.parametrize(
    "where", ["price > 1", "items.price > 1", "items.price > 1 AND regions.region <> 'x'"]
)
def test_a_where_filter_may_qualify_columns_as_in_sql(where: str) -> None:
    tables = shop(seed=8, n_customers=150)
    joined = ds.join(tables, on=ON, public_tables=["regions"])
    got = ds.release(
        joined,
        {"n": ds.Count(), "med": ("price", ds.Median(0, 20))},
        by="region",
        where=where,
        **KW,
    ).to_dicts()
    want = ds.sql(
        SQL.replace(
            "WHERE i.price > 1", "WHERE " + where.replace("items.", "i.").replace("regions.", "r.")
        ),
        tables=tables,
        public_tables=["regions"],
        bounds={"price": (0, 20)},
        **KW,
    ).to_dicts()
    assert got == want
    assert [r["region"] for r in got] == ["Asia", "Europe", "Oceania"]
