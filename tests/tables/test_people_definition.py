"""``COUNT(DISTINCT unit)`` against its definition, by brute force on small random
databases (docs/joins.md §4), at any ``max_rows_per_unit``.

The database of ``test_join_definition`` (customers, their orders, the orders' items and a
public table of segments whose "b" fans out into labels B, twice, and B2), so a unit often
has several joined rows in a group. The definition: each unit keeps the g groups of
smallest ``hash(key_g, unit, group)`` among the groups it has rows in; a group's people
count is the number of units that keep it, whatever m is. Checked on the engine's
pre-noise counts: one statistic alone (its own bounding, one row per unit and group), the
query's one bounding shared with other statistics at m > 1 (the same kept groups per unit,
one pass), and end to end through ``ds.sql`` (the counts its release adds noise to);
removing any one unit moves each group's count by at most 1, in at most g groups.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.tables import grouped, query_release
from dpsense.tables.engines.duckdb.bound import TablePlan, bound_table, keyed_hash
from dpsense.tables.engines.duckdb.joined import open_joined
from dpsense.tables.engines.duckdb.query_rows import BOUNDED, bound_rows
from dpsense.tables.rows.unit_bounding import UnitBounding
from dpsense.tables.rows.windows import HistogramRecords
from tests.tables.test_join_definition import (
    SALT,
    UNITS,
    UPPER,
    database,
    definition,
    joined,
    without,
)

pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")

pytestmark = pytest.mark.filterwarnings("ignore::dpsense.SeededRandomnessWarning")

PEOPLE = (
    "SELECT s.label, COUNT(DISTINCT c.customer_id) AS people, SUM(i.price) AS total, "
    "COUNT(*) AS n FROM items i JOIN orders o ON i.order_id = o.order_id "
    "JOIN customers c ON o.customer_id = c.customer_id "
    "JOIN segments s ON c.segment = s.segment GROUP BY s.label"
)
KEYS = ["A", "B", "B2", "C"]


def people_definition(
    rows: list[tuple[int, str, float]], keys: list[str], g: int, salt_g: int, *, by_gid: bool
) -> list[int]:
    """Each group's number of units that keep it: per unit, the g groups of smallest
    ``keyed_hash(salt_g, group)`` among those it has rows in (the group as its public key
    number, ``by_gid``, as a one-statistic release hashes it, or as its text, as a query's
    one bounding does). Rows per unit and group do not matter."""
    frame = pd.DataFrame(rows, columns=["u", "label", "v"])
    con = duckdb.connect()
    con.register("f", frame)
    con.register("k", pd.DataFrame({"label": keys, "gid": np.arange(len(keys))}))
    group = "gid" if by_gid else "CAST(label AS VARCHAR)"
    pairs = con.execute(
        f"SELECT DISTINCT u, gid, {keyed_hash(salt_g, group)} AS hg "
        "FROM (SELECT u::BIGINT AS u, label, k.gid FROM f JOIN k USING (label))"
    ).df()
    chosen = pairs.sort_values(["u", "hg"]).groupby("u").head(g)
    return [int((chosen["gid"] == i).sum()) for i in range(len(keys))]


def rows_per_group(rows: list[tuple[int, str, float]], keys: list[str]) -> list[int]:
    labels = [label for _, label, _ in rows]
    return [labels.count(k) for k in keys]


def engine_people(db: dict[str, Any], g: int) -> list[int]:
    """A count of the units released alone: the engine bounds at one row per unit and
    group (``grouped.table_plan``), so each group's count is its kept pairs."""
    found = joined(db)
    plan = TablePlan(None, ("label",), found.unit, 1, g, "error", None, None, SALT)
    with open_joined(found.data) as source:
        table = bound_table(source, plan, [(k,) for k in KEYS])
        assert table.rows.tolist() == table.units.tolist()  # one row per kept pair
        return [int(n) for n in table.rows]


def query_people(db: dict[str, Any], m: int, g: int) -> tuple[list[int], list[int]]:
    """A count of the units in a query with a sum at m rows per unit: the query's one
    bounding (salt ``SALT``) keeps the rows, then the count's own pass (another salt) on
    them. Returns (people, rows kept) per group."""
    found = joined(db)
    bounding = UnitBounding(("price",), ("label",), found.unit, m, g, [(k,) for k in KEYS], SALT)
    plan = TablePlan(None, ("label",), found.unit, 1, g, "error", None, None, (99, 98))
    with open_joined(found.data) as source:
        bound_rows(source, bounding, keep="TRUE")
        kept = source.con.execute(
            f"SELECT label, count(*) FROM {BOUNDED} GROUP BY label"
        ).fetchall()
        rows = dict((str(k), int(n)) for k, n in kept)
        source.view = BOUNDED
        table = bound_table(source, plan, [(k,) for k in KEYS])
        return [int(n) for n in table.rows], [rows.get(k, 0) for k in KEYS]


@pytest.mark.parametrize(("seed", "g"), [(0, 1), (1, 2), (2, 3), (3, 4)])
def test_a_count_of_units_alone_is_the_definitions(seed: int, g: int) -> None:
    db = database(seed)
    want = people_definition(definition(db), KEYS, g, SALT[0], by_gid=True)
    assert engine_people(db, g) == want
    assert any(want)


@pytest.mark.parametrize(("seed", "m", "g"), [(0, 2, 1), (1, 3, 2), (2, 5, 2), (3, 4, 3)])
def test_a_count_of_units_in_a_query_is_the_definitions_on_the_querys_groups(
    seed: int, m: int, g: int
) -> None:
    """The groups a unit keeps are those of the query's one bounding (its group salt):
    the count's own pass, with another salt, keeps every one of them."""
    db = database(seed)
    rows = definition(db)
    people, kept = query_people(db, m, g)
    assert people == people_definition(rows, KEYS, g, SALT[0], by_gid=False)
    # a unit's several kept rows in a group count once: the rows kept are more
    assert sum(kept) > sum(people)
    assert all(p <= k for p, k in zip(people, kept, strict=True))


@pytest.mark.parametrize(("seed", "m", "g"), [(4, 3, 1), (5, 2, 2), (6, 5, 3)])
def test_removing_a_unit_moves_each_group_by_at_most_one_in_at_most_g_groups(
    seed: int, m: int, g: int
) -> None:
    db = database(seed)
    full, _ = query_people(db, m, g)
    alone = engine_people(db, g)
    seen = 0
    for unit in range(12):
        for got, near in ((full, query_people(without(db, unit), m, g)[0]),
                          (alone, engine_people(without(db, unit), g))):  # fmt: skip
            moves = [abs(a - b) for a, b in zip(got, near, strict=True)]
            assert max(moves) <= 1
            assert sum(moves) <= g
            seen = max(seen, sum(moves))
    assert seen >= 1


def _pre_noise(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[UnitBounding]]:
    """Record each group's pre-noise records of every count of the units a release makes
    (in group order) and the query's one bounding."""
    counts: list[int] = []
    boundings: list[UnitBounding] = []
    held = grouped.held_or_values
    unit_bounding = query_release._unit_bounding

    def spy_held(values: Any, statistic: Any, method: str) -> Any:
        if isinstance(statistic, ds.Count) and statistic.distinct_units:
            size = values.size if isinstance(values, HistogramRecords) else len(values)
            counts.append(int(size))
        return held(values, statistic, method)

    def spy_bounding(*args: Any) -> UnitBounding:
        out = unit_bounding(*args)
        boundings.append(out)
        return out

    monkeypatch.setattr(grouped, "held_or_values", spy_held)
    monkeypatch.setattr(query_release, "_unit_bounding", spy_bounding)
    return counts, boundings


def _sql(db: dict[str, Any], m: int, g: int, query: str = PEOPLE) -> ds.QueryResult:
    return ds.sql(
        query, tables=db, privacy_unit=UNITS, public_tables=["segments"],
        bounds={"price": (0, UPPER)}, max_rows_per_unit=m, max_groups_per_unit=g,
        epsilon=1.0, rng=5,
    )  # fmt: skip


@pytest.mark.parametrize(("seed", "m", "g"), [(7, 3, 2), (8, 5, 1)])
def test_sql_releases_noise_around_the_definition_and_neighbours_move_it_by_one(
    seed: int, m: int, g: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts, boundings = _pre_noise(monkeypatch)
    db = database(seed)
    res = _sql(db, m, g)
    assert [r["label"] for r in res.to_dicts()] == KEYS
    (bounding,) = boundings
    assert bounding.max_rows == m  # the query's bounding: the sum and COUNT(*) read m rows
    want = people_definition(definition(db), KEYS, g, bounding.salt[0], by_gid=False)
    assert counts == want
    people = res["people"]
    assert isinstance(people, ds.GroupedRelease)
    for key, rel in people:
        # sensitivity 1 per group (COUNT(*)'s is m): scale 1 / epsilon of the group
        assert rel.scale == pytest.approx(1 / rel.epsilon, rel=1e-6)
        assert res["n"][key].scale == pytest.approx(m / rel.epsilon, rel=1e-6)
        assert rel.interval() is not None
    seen = 0
    for unit in range(12):
        counts.clear()
        boundings.clear()
        _sql(without(db, unit), m, g)
        assert boundings[0].salt == bounding.salt  # drawn before anything is read
        moves = [abs(a - b) for a, b in zip(want, counts, strict=True)]
        assert max(moves) <= 1
        assert sum(moves) <= g
        seen = max(seen, sum(moves))
    assert seen >= 1


def test_a_query_of_the_people_count_alone_bounds_one_row_per_unit_and_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts, _ = _pre_noise(monkeypatch)
    plans: list[TablePlan] = []
    table_plan = grouped.table_plan

    def spy_plan(*args: Any, **kw: Any) -> Any:
        out = table_plan(*args, **kw)
        plans.append(out[0])
        return out

    monkeypatch.setattr(grouped, "table_plan", spy_plan)
    db = database(9)
    only = PEOPLE.replace(", SUM(i.price) AS total, COUNT(*) AS n", "")
    _sql(db, 4, 2, only)
    (plan,) = plans
    assert (plan.max_rows, plan.max_groups, plan.unit) == (1, 2, "customer_id")
    assert counts == people_definition(definition(db), KEYS, 2, plan.salt[0], by_gid=True)
