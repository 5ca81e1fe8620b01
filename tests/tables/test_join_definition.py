"""Joins against their definition, by brute force on small random databases (docs/joins.md).

A database of three private tables (customers: the unit table; orders: a fact table with
the unit column; items: a fact table whose unit is found through its order) and a public
table of segments with duplicate keys (a row fans out). The joined table must hold
exactly the rows of the definition, each with the unit it belongs to; contribution
bounding *after* the join must keep the rows of the one-table bounding definition; and
removing one unit (its customer row, its orders and its orders' items) must change each
released group's clipped sum by at most m * upper and its row count by at most m, in at
most g groups.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from dpsense.query.join_form import joined_input
from dpsense.query.sql import parse_sql
from dpsense.sql_release import resolve_named
from dpsense.tables.engines.duckdb.bound import TablePlan, bound_table, keyed_hash
from dpsense.tables.engines.duckdb.joined import open_joined

pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")

SALT = (424242, 171717)
UPPER = 50.0
QUERY = (
    "SELECT s.label, SUM(i.price) AS total FROM items i "
    "JOIN orders o ON i.order_id = o.order_id "
    "JOIN customers c ON o.customer_id = c.customer_id "
    "JOIN segments s ON c.segment = s.segment GROUP BY s.label"
)
UNITS = {
    "customers": "customer_id",
    "orders": "customer_id",
    "items": ("order_id", "orders", "order_id"),
}


def database(seed: int, *, shared_orders: bool = False) -> dict[str, Any]:
    """A small random database: order ids are keys (one customer per order), or with
    ``shared_orders`` some order ids are held by two customers (an item of such an
    order then belongs to each of them: one joined row per customer)."""
    rng = np.random.default_rng(seed)
    n_customers, n_orders, n_items = 12, int(rng.integers(10, 30)), int(rng.integers(20, 70))
    ids = rng.permutation(100)[:n_orders]
    if shared_orders:
        ids[: n_orders // 3] = ids[n_orders // 3 : 2 * (n_orders // 3)]
    customers = pd.DataFrame(
        {"customer_id": np.arange(n_customers), "segment": rng.choice(["a", "b", "z"], n_customers)}
    )
    orders = pd.DataFrame(
        {
            "order_id": ids,
            "customer_id": rng.integers(0, n_customers + 2, n_orders),  # some reach no one
            "amount": rng.integers(0, 60, n_orders).astype(float),
        }
    )
    items = pd.DataFrame(
        {
            "item_id": np.arange(n_items),
            "order_id": rng.choice(np.r_[orders["order_id"].to_numpy(), [997, 998]], n_items),
            "price": rng.integers(0, 70, n_items).astype(float),  # some above UPPER
        }
    )
    # "b" three times: a customer of segment b fans out into labels B (twice: each of its
    # rows counts twice in B before bounding) and B2
    segments = pd.DataFrame(
        {"segment": ["a", "b", "b", "b", "c"], "label": ["A", "B", "B2", "B", "C"]}
    )
    return {"customers": customers, "orders": orders, "items": items, "segments": segments}


def definition(db: dict[str, Any]) -> list[tuple[int, str, float]]:
    """The joined rows (unit, label, price) by the definition: an item belongs to the
    customer of its order; the query's joins keep the rows whose tables agree."""
    rows: list[tuple[int, str, float]] = []
    orders = list(db["orders"].itertuples(index=False))
    customers = list(db["customers"].itertuples(index=False))
    segments = list(db["segments"].itertuples(index=False))
    for item in db["items"].itertuples(index=False):
        for owner in (o.customer_id for o in orders if o.order_id == item.order_id):
            for o in orders:
                if o.order_id != item.order_id or o.customer_id != owner:
                    continue
                for c in customers:
                    if c.customer_id != o.customer_id or c.customer_id != owner:
                        continue
                    for s in segments:
                        if s.segment == c.segment:
                            rows.append((int(owner), str(s.label), float(item.price)))
    return rows


def without(db: dict[str, Any], unit: int) -> dict[str, Any]:
    """The neighbour: the unit's customer row, its orders and its orders' items removed."""
    orders = db["orders"]
    gone = set(orders.loc[orders["customer_id"] == unit, "order_id"])
    return {
        "customers": db["customers"][db["customers"]["customer_id"] != unit],
        "orders": orders[orders["customer_id"] != unit],
        "items": db["items"][~db["items"]["order_id"].isin(gone)],
        "segments": db["segments"],
    }


def joined(db: dict[str, Any]) -> Any:
    spec = parse_sql(QUERY).join_form
    return joined_input(
        spec, lambda n, p: resolve_named(n, p, db), db, UNITS, ["segments"], None, None
    )


def bounded(db: dict[str, Any], m: int, g: int) -> tuple[list[str], list[list[float]], list[int]]:
    """The rows the release keeps after the join: (keys, clipped values per group, rows
    per group)."""
    found = joined(db)
    keys = list(found.keys)
    plan = TablePlan("price", ("label",), found.unit, m, g, "error", 0.0, UPPER, SALT)
    with open_joined(found.data) as source:
        table = bound_table(source, plan, [(k,) for k in keys])
        values = dict(table.values(range(len(keys))))
        out = [sorted(values.get(i, np.array([])).tolist()) for i in range(len(keys))]
    return keys, out, [len(v) for v in out]


def bounding_definition(
    rows: list[tuple[int, str, float]], keys: list[str], m: int, g: int
) -> list[list[float]]:
    """The one-table bounding definition (docs/tables.md §2) on the defined joined rows,
    with the engine's hashes: per unit the g groups of smallest hash, in each the m rows of
    smallest hash of the clipped value."""
    frame = pd.DataFrame(rows, columns=["u", "label", "v"])
    con = duckdb.connect()
    con.register("f", frame)
    con.register("k", pd.DataFrame({"label": keys, "gid": np.arange(len(keys))}))
    hashed = con.execute(
        f"SELECT u, gid, v, {keyed_hash(SALT[0], 'gid')} AS hg, "
        f"{keyed_hash(SALT[1], 'v')} AS hr FROM (SELECT u::BIGINT AS u, k.gid, "
        f"greatest(least(v::DOUBLE, {UPPER}), 0.0) AS v FROM f JOIN k USING (label))"
    ).df()
    pairs = hashed[["u", "gid", "hg"]].drop_duplicates().sort_values(["u", "hg"])
    chosen = pairs.groupby("u").head(g)[["u", "gid"]]
    kept = hashed.merge(chosen, on=["u", "gid"]).sort_values(["u", "gid", "hr"])
    kept = kept.groupby(["u", "gid"]).head(m)
    return [sorted(kept.loc[kept["gid"] == i, "v"].tolist()) for i in range(len(keys))]


@pytest.mark.parametrize("seed", range(6))
def test_the_joined_rows_are_the_definitions(seed: int) -> None:
    db = database(seed)
    found = joined(db)
    assert found.unit == "customer_id"
    assert list(found.keys) == ["A", "B", "B2", "C"]  # the public table's values, C empty
    with open_joined(found.data) as source:
        got = source.con.execute("SELECT customer_id, label, price FROM src").fetchall()
    want = definition(db)
    assert Counter((int(u), str(label), float(p)) for u, label, p in got) == Counter(want)
    assert want  # the database joins


@pytest.mark.parametrize(("seed", "m", "g"), [(0, 1, 1), (1, 2, 1), (2, 3, 2), (3, 2, 3)])
def test_bounding_after_the_join_keeps_the_definitions_rows(seed: int, m: int, g: int) -> None:
    db = database(seed)
    keys, got, _ = bounded(db, m, g)
    assert got == bounding_definition(definition(db), keys, m, g)
    assert any(got)


@pytest.mark.parametrize(("seed", "m", "g"), [(4, 1, 1), (5, 2, 2), (6, 3, 2)])
def test_removing_a_unit_moves_each_group_by_at_most_its_sensitivity(
    seed: int, m: int, g: int
) -> None:
    db = database(seed)
    keys, full, rows = bounded(db, m, g)
    moved_most = 0.0
    for unit in range(12):
        keys_n, near, rows_n = bounded(without(db, unit), m, g)
        assert keys_n == keys  # the groups come from the public table: they never move
        moves = [abs(sum(a) - sum(b)) for a, b in zip(full, near, strict=True)]
        assert all(d <= m * UPPER + 1e-9 for d in moves)
        assert sum(moves) <= g * m * UPPER + 1e-9
        assert all(abs(a - b) <= m for a, b in zip(rows, rows_n, strict=True))
        assert sum(1 for d in moves if d > 0) <= g
        moved_most = max(moved_most, max(moves))
    assert moved_most > 0  # some unit's removal is seen


@pytest.mark.parametrize("seed", range(3))
def test_a_path_key_of_two_units_is_refused_before_anything_is_read_for_the_release(
    seed: int,
) -> None:
    """An order id held by two customers would make its items belong to both (removing one
    customer would then remove the other's copy too): the path's keys must be keys, the
    data owner's precondition, refused with one message and nothing charged."""
    import dpsense as ds

    db = database(seed, shared_orders=True)
    acc = ds.Accountant(epsilon=5.0)
    with pytest.raises(ds.InputError, match="belongs to more than one unit") as info:
        ds.sql(
            QUERY, tables=db, privacy_unit=UNITS, public_tables=["segments"],
            bounds={"price": (0, UPPER)}, epsilon=1.0, accountant=acc,
        )  # fmt: skip
    assert "orders.order_id" in str(info.value)
    assert acc.spent == (0.0, 0.0)
    ds.sql(  # the same request on keys that are keys releases
        QUERY, tables=database(seed), privacy_unit=UNITS, public_tables=["segments"],
        bounds={"price": (0, UPPER)}, epsilon=1.0, accountant=acc,
    )  # fmt: skip
