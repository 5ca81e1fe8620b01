"""The engine keeps exactly the rows of the bounding definition (docs/tables.md §2): per
person the g groups of smallest ``hash(key, person, group)`` and, in each, the m rows of
smallest ``hash(key, person, value)``, computed here by brute force in pandas from the
same hashes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dpsense.data.source import open_table
from dpsense.tables.engines.duckdb.bound import TablePlan, bound_table, keyed_hash

pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")

SALT = (1234567, 7654321)


def people_frame() -> Any:
    """5,000 rows of 400 people over 6 groups (shared with the Spark bounding test)."""
    rng = np.random.default_rng(8)
    n = 5000
    return pd.DataFrame(
        {
            "person": rng.integers(0, 400, n),
            "g": rng.integers(0, 6, n),
            "v": np.round(rng.gamma(2.0, 10.0, n), 1),
        }
    )


@pytest.fixture(scope="module")
def frame() -> Any:
    return people_frame()


def _brute_force(frame: Any, keys: list[int], m: int, g: int) -> dict[int, list[float]]:
    con = duckdb.connect()
    con.register("f", frame)
    con.register("k", pd.DataFrame({"g": keys, "gid": np.arange(len(keys))}))
    rows = con.execute(
        "SELECT u, gid, v, "
        f"{keyed_hash(SALT[0], 'gid')} AS hg, {keyed_hash(SALT[1], 'v')} AS hr FROM "
        "(SELECT person::BIGINT AS u, k.gid, greatest(least(v::DOUBLE, 50.0), 0.0) AS v "
        "FROM f JOIN k USING (g))"
    ).df()
    pairs = rows[["u", "gid", "hg"]].drop_duplicates().sort_values(["u", "hg"])
    chosen = pairs.groupby("u").head(g)[["u", "gid"]]
    kept = rows.merge(chosen, on=["u", "gid"]).sort_values(["u", "gid", "hr"])
    kept = kept.groupby(["u", "gid"]).head(m)
    return {int(gid): sorted(float(x) for x in part["v"]) for gid, part in kept.groupby("gid")}


@pytest.mark.parametrize(("m", "g"), [(1, 1), (3, 1), (3, 2), (2, 5)])
def test_kept_rows_are_the_definitions(frame: Any, m: int, g: int) -> None:
    keys = [0, 1, 2, 3, 4]  # group 5 is not a key: its rows never count
    plan = TablePlan("v", ("g",), "person", m, g, "error", 0.0, 50.0, SALT)
    with open_table(frame) as source:
        table = bound_table(source, plan, [(k,) for k in keys])
        got = {gid: sorted(values.tolist()) for gid, values in table.values(range(len(keys)))}
    want = _brute_force(frame, keys, m, g)
    assert {k: v for k, v in got.items() if v} == want
    assert sum(len(v) for v in want.values()) > 0


@pytest.mark.parametrize(("m", "g"), [(1, 1), (3, 1), (3, 2), (2, 5)])
def test_a_count_keeps_the_definitions_rows(frame: Any, m: int, g: int) -> None:
    """A count keeps min(c, m) rows of each kept (person, group) pair without ranking
    them (every row has the same value); the rows and units per group are the
    definition's, with the row hash of the value a count sees (0.0)."""
    keys = [0, 1, 2, 3, 4]
    plan = TablePlan(None, ("g",), "person", m, g, "error", None, None, SALT)
    with open_table(frame) as source:
        table = bound_table(source, plan, [(k,) for k in keys])
        rows, units = table.rows.tolist(), table.units.tolist()
    want = _brute_force(frame.assign(v=0.0), keys, m, g)
    assert rows == [len(want.get(k, [])) for k in range(len(keys))]
    pairs = frame.merge(pd.DataFrame({"g": keys}), on="g")[["person", "g"]].drop_duplicates()
    per_person = pairs.groupby("person")["g"].nunique().clip(upper=g)
    assert sum(units) == int(per_person.sum())
    assert sum(rows) > sum(units) or m == 1  # some pairs keep more than one row
