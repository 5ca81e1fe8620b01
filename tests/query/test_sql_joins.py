"""ds.sql over several tables: the shapes refused (from the text, or from the declared
units before any row is read), public groups from public tables, people per group, files
and frames, and the ledger (docs/joins.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.accounting.ledger import Ledger
from dpsense.errors import InputError

pd = pytest.importorskip("pandas")

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

SECRET = 987654.321  # a value in the data that no message may quote


def shop(seed: int = 0, n_customers: int = 400) -> dict[str, Any]:
    """Customers (the unit table), their orders, the orders' items, a public table of
    regions (Oceania holds no customer: an empty public group)."""
    rng = np.random.default_rng(seed)
    customers = pd.DataFrame(
        {
            "customer_id": np.arange(n_customers),
            "country": rng.choice(["fr", "de", "it", "jp"], n_customers),
        }
    )
    n_orders = 3 * n_customers
    orders = pd.DataFrame(
        {
            "order_id": np.arange(n_orders) + 1000,
            "customer_id": rng.integers(0, n_customers, n_orders),
            "amount": rng.uniform(0, 100, n_orders).round(2),
        }
    )
    orders.loc[0, "amount"] = SECRET
    n_items = 2 * n_orders
    items = pd.DataFrame(
        {
            "order_id": rng.integers(1000, 1000 + n_orders, n_items),
            "price": rng.uniform(0, 20, n_items).round(2),
        }
    )
    regions = pd.DataFrame(
        {
            "country": ["fr", "de", "it", "jp", "nz"],
            "region": ["Europe", "Europe", "Europe", "Asia", "Oceania"],
        }
    )
    return {"customers": customers, "orders": orders, "items": items, "regions": regions}


UNITS = {"customers": "customer_id", "orders": "customer_id",
         "items": ("order_id", "orders", "order_id")}  # fmt: skip


def _sql(query: str, tables: dict[str, Any], **kw: Any) -> ds.QueryResult:
    options: dict[str, Any] = {"privacy_unit": UNITS, "public_tables": ["regions"],
                               "epsilon": 1.0, "rng": 7}  # fmt: skip
    options.update(kw)
    return ds.sql(query, tables=tables, **options)


# -- refused from the text --------------------------------------------------------------

TEXT_REFUSALS = [
    ("SELECT COUNT(*) FROM orders o CROSS JOIN regions r", "CROSS JOIN"),
    ("SELECT COUNT(*) FROM orders NATURAL JOIN customers", "NATURAL JOIN"),
    ("SELECT COUNT(*) FROM orders, customers", "without a condition"),
    ("SELECT COUNT(*) FROM orders o JOIN customers c", "without a condition"),
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON o.amount > c.customer_id",
        "not column equalities",
    ),
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
        "OR o.order_id = c.customer_id",
        "not column equalities",
    ),
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = 5",
        "not column equalities",
    ),
    (
        "SELECT COUNT(*) FROM orders o RIGHT JOIN customers c ON o.customer_id = c.customer_id",
        "RIGHT JOIN",
    ),
    (
        "SELECT COUNT(*) FROM orders o FULL JOIN customers c ON o.customer_id = c.customer_id",
        "FULL JOIN",
    ),
    (
        "SELECT COUNT(*) FROM orders o SEMI JOIN customers c ON o.customer_id = c.customer_id",
        "SEMI JOIN",
    ),
    (
        "SELECT COUNT(*) FROM orders o JOIN (SELECT * FROM customers) c ON o.customer_id = "
        "c.customer_id",
        "subquery",
    ),
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
        "JOIN items USING (order_id)",
        "USING after several tables",
    ),
    ("SELECT COUNT(*) FROM orders o JOIN orders o ON o.order_id = o.order_id", "twice"),
    ("SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = o.order_id", "same table"),
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON customer_id = c.customer_id",
        "without its table",
    ),
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = x.customer_id",
        "before it is joined",
    ),
    (
        "SELECT o.country, COUNT(*) FROM orders o JOIN customers c ON o.customer_id = "
        "c.customer_id WHERE c.country = 'fr' GROUP BY o.country",
        "two columns named",
    ),
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
        "WHERE z.amount > 1",
        "not a table of FROM or JOIN",
    ),
    ("SELECT COUNT(DISTINCT o.amount) FROM orders o", None),  # refused by the unit check
    (
        "SELECT COUNT(*) FROM orders dpsense_owner0 JOIN customers c ON "
        "dpsense_owner0.customer_id = c.customer_id",
        "reserved",
    ),
]


@pytest.mark.parametrize(("query", "words"), TEXT_REFUSALS)
def test_join_shapes_refused_from_the_text(query: str, words: str | None) -> None:
    tables = shop(n_customers=20)
    with pytest.raises(InputError) as info:
        _sql(query, tables, bounds={"amount": (0, 100)})
    message = str(info.value)
    if words is not None:
        assert words in message
    assert "\n" not in message
    assert str(SECRET) not in message
    assert "987654" not in message


# -- refused from the declared units (before any row is read) ----------------------------

UNIT_REFUSALS = [
    # an outer join whose optional side is private
    (
        "SELECT COUNT(*) FROM regions r LEFT JOIN customers c ON r.country = c.country",
        {},
        "LEFT JOINs the private table",
    ),
    # private tables on keys that are not their units
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON o.order_id = c.customer_id",
        {},
        "does not equate their privacy units",
    ),
    # a self-join of a private table on a non-unit key
    (
        "SELECT COUNT(*) FROM orders o JOIN orders p ON o.amount = p.amount",
        {},
        "does not equate their privacy units",
    ),
    # a path to a public table
    (
        "SELECT COUNT(*) FROM items i JOIN regions r ON i.order_id = r.country",
        {"privacy_unit": {"items": ("order_id", "regions", "country")}},
        "public",
    ),
    # a circle of paths
    (
        "SELECT COUNT(*) FROM items i",
        {
            "privacy_unit": {
                "items": ("order_id", "orders", "order_id"),
                "orders": ("order_id", "items", "order_id"),
            }
        },
        "circle",
    ),
    # a private table without a unit
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id",
        {"privacy_unit": {"orders": "customer_id"}},
        "has no privacy unit",
    ),
    # only public tables
    ("SELECT COUNT(*) FROM regions", {}, "only public tables"),
    # a join without any privacy unit
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id",
        {"privacy_unit": None, "public_tables": None},
        "needs privacy_unit",
    ),
    # public_tables naming a table that is not there
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id",
        {"public_tables": ["region"]},
        "does not read",
    ),
    # a unit column the table does not have
    (
        "SELECT COUNT(*) FROM orders o",
        {"privacy_unit": {"orders": "person"}},
        "not in the table 'orders'",
    ),
    # people counted on a column that is not the unit
    (
        "SELECT COUNT(DISTINCT o.order_id) AS k FROM orders o JOIN customers c ON "
        "o.customer_id = c.customer_id",
        {},
        "not the privacy unit",
    ),
    # an ambiguous column
    (
        "SELECT COUNT(*) FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
        "JOIN regions r ON c.country = r.country GROUP BY country",
        {},
        "several tables",
    ),
    # a column in no table
    (
        "SELECT SUM(wage) FROM orders o JOIN customers c ON o.customer_id = c.customer_id",
        {"bounds": {"wage": (0, 1)}},
        "in none of its tables",
    ),
    # a number compared with text
    ("SELECT COUNT(*) FROM orders o JOIN regions r ON o.customer_id = r.country", {}, "one kind"),
]


@pytest.mark.parametrize(("query", "kw", "words"), UNIT_REFUSALS)
def test_joins_that_could_mix_people_are_refused(
    query: str, kw: dict[str, Any], words: str
) -> None:
    tables = shop(n_customers=20)
    acc = ds.Accountant(epsilon=5.0)
    with pytest.raises(InputError) as info:
        _sql(query, tables, accountant=acc, **kw)
    message = str(info.value)
    assert words in message, message
    assert "\n" not in message
    assert "987654" not in message
    assert acc.spent == (0.0, 0.0)  # refused before the charge


# -- releases ----------------------------------------------------------------------------


def test_public_groups_come_from_the_public_table_and_empty_ones_are_released() -> None:
    tables = shop()
    res = _sql(
        "SELECT r.region, COUNT(DISTINCT c.customer_id) AS people, SUM(o.amount) AS total "
        "FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
        "JOIN regions r ON c.country = r.country GROUP BY r.region",
        tables,
        bounds={"amount": (0, 100)},
        max_groups_per_unit=1,
        epsilon=200.0,
    )
    frame = res.to_pandas().set_index("region")
    assert sorted(frame.index) == ["Asia", "Europe", "Oceania"]  # no keys passed, no delta
    customers = tables["customers"]
    buyers = set(tables["orders"]["customer_id"])
    europe = customers[customers["country"].isin(["fr", "de", "it"])]
    want_people = {
        "Europe": europe["customer_id"].isin(buyers).sum(),
        "Asia": customers[customers["country"] == "jp"]["customer_id"].isin(buyers).sum(),
        "Oceania": 0,
    }
    for region, want in want_people.items():
        assert abs(frame.loc[region, "people"] - want) < 2  # epsilon 100 per statistic
    assert res.delta == 0.0


def test_a_path_gives_each_item_its_customer_and_bounds_after_the_join() -> None:
    tables = shop(seed=3)
    query = (
        "SELECT r.region, COUNT(*) AS n FROM items i JOIN orders o ON i.order_id = o.order_id "
        "JOIN customers c ON o.customer_id = c.customer_id "
        "JOIN regions r ON c.country = r.country GROUP BY r.region"
    )
    res = _sql(query, tables, max_rows_per_unit=2, epsilon=500.0)
    got = res.to_pandas().set_index("region")["n"]
    # the definition: each customer keeps at most 2 items in their one region
    items = tables["items"].merge(tables["orders"], on="order_id")
    items = items.merge(tables["customers"], on="customer_id").merge(
        tables["regions"], on="country"
    )
    per = items.groupby(["region", "customer_id"]).size().clip(upper=2)
    want = per.groupby("region").sum()
    for region in ("Asia", "Europe"):
        assert abs(got[region] - want[region]) < 3
    assert abs(got["Oceania"]) < 3


def test_left_join_keeps_private_rows_without_a_public_match() -> None:
    tables = shop(seed=1, n_customers=300)
    tables["regions"] = tables["regions"][tables["regions"]["country"] != "jp"]
    res = _sql(
        "SELECT COUNT(*) AS n FROM customers c LEFT JOIN regions r ON c.country = r.country",
        tables,
        epsilon=500.0,
    )
    assert abs(res["n"].value - 300) < 3  # every customer, matched or not


def test_the_join_charges_once_and_names_its_tables_in_the_ledger(tmp_path: Path) -> None:
    tables = shop(seed=2)
    acc = ds.Accountant(epsilon=3.0, ledger=tmp_path / "ledger.json")
    _sql(
        "SELECT r.region, AVG(o.amount) AS mean FROM orders o JOIN customers c ON "
        "o.customer_id = c.customer_id JOIN regions r ON c.country = r.country GROUP BY r.region",
        tables,
        bounds={"amount": (0, 100)},
        max_rows_per_unit=3,
        accountant=acc,
    )
    assert acc.spent == (1.0, 0.0)
    (entry,) = Ledger.open(tmp_path / "ledger.json").entries()
    assert entry.dataset == "the join of 'orders', 'customers', 'regions'"
    assert "987654" not in repr(entry)


def test_files_and_frames_give_the_same_seeded_answer(tmp_path: Path) -> None:
    tables = shop(seed=4, n_customers=100)
    files: dict[str, Any] = {}
    for name, frame in tables.items():
        path = tmp_path / f"{name}.parquet"
        frame.to_parquet(path, index=False)
        files[name] = str(path)
    files["regions"] = tables["regions"]  # a frame beside files
    csv = tmp_path / "orders.csv"
    tables["orders"].to_csv(csv, index=False)
    query = (
        "SELECT r.region, SUM(o.amount) AS total, COUNT(*) AS n FROM orders o "
        "JOIN customers c ON o.customer_id = c.customer_id "
        "JOIN regions r ON c.country = r.country WHERE o.amount < 90 GROUP BY r.region"
    )
    kw = {"bounds": {"amount": (0, 100)}, "max_rows_per_unit": 2}
    a = _sql(query, tables, **kw).to_dicts()
    b = _sql(query, files, **kw).to_dicts()
    assert a == b
    schema = {"customer_id": "int", "amount": "float"}
    c = _sql(query, {**files, "orders": str(csv)}, schema=schema, **kw).to_dicts()
    assert [r["region"] for r in c] == [r["region"] for r in a]
    with pytest.raises(InputError, match="one kind"):
        # a CSV file's undeclared join key is read as text: it does not meet an integer
        _sql(query, {**files, "orders": str(csv)}, **kw)


def test_private_groups_are_selected_privately() -> None:
    tables = shop(seed=5, n_customers=2000)
    res = _sql(
        "SELECT c.country, COUNT(*) AS n FROM orders o JOIN customers c ON "
        "o.customer_id = c.customer_id GROUP BY c.country",
        tables,
        epsilon=2.0,
        delta=1e-6,
        max_rows_per_unit=3,
    )
    assert set(res.to_pandas()["country"]) <= {"fr", "de", "it", "jp"}
    with pytest.raises(InputError, match="delta"):
        _sql(
            "SELECT c.country, COUNT(*) AS n FROM orders o JOIN customers c ON "
            "o.customer_id = c.customer_id GROUP BY c.country",
            tables,
        )


def test_a_plan_of_a_join_reads_nothing_and_needs_no_keys_for_public_groups() -> None:
    query = (
        "SELECT r.region, COUNT(DISTINCT c.customer_id) AS people, AVG(o.amount) AS mean "
        "FROM orders o JOIN customers c ON o.customer_id = c.customer_id "
        "JOIN regions r ON c.country = r.country GROUP BY r.region"
    )
    planned = ds.plan(
        None,
        query,
        epsilon=1.0,
        rows_per_group=200,
        privacy_unit=UNITS,
        public_tables=["regions"],
        bounds={"amount": (0, 100)},
    )
    alone = ds.plan(
        None,
        {"people": ds.Count(), "mean": ("amount", ds.Mean(0, 100))},
        epsilon=1.0,
        rows_per_group=200,
        by="region",
        keys=["Europe"],
        privacy_unit="customer_id",
    )
    assert [e.name for e in planned.statistics] == ["people", "mean"]
    assert [e.error_95 for e in planned.statistics] == [e.error_95 for e in alone.statistics]
    with pytest.raises(InputError, match="delta"):  # private groups: selection needs delta
        ds.plan(
            None,
            query.replace("r.region", "c.country"),
            epsilon=1.0,
            rows_per_group=200,
            privacy_unit=UNITS,
            public_tables=["regions"],
            bounds={"amount": (0, 100)},
        )


def test_public_tables_messages_name_each_table_once_and_take_one_name() -> None:
    tables = shop(seed=3, n_customers=30)
    query = "SELECT COUNT(*) AS n FROM orders o JOIN customers c ON o.customer_id = c.customer_id"
    with pytest.raises(InputError) as info:
        _sql(query, tables, public_tables=["nope"])
    message = str(info.value)
    assert "'public_tables' parameter of ds.sql names 'nope'" in message
    for name in ("orders", "customers", "items", "regions"):
        assert message.count(repr(name)) == 1, name
    one = _sql(query, tables, public_tables="regions").to_dicts()
    assert one == _sql(query, tables, public_tables=["regions"]).to_dicts()
