"""A quantile's interval reads its counts below public points for every group at once.

``methods.quantile_interval`` asks each group's records for ``counts_below(points)``; the
DuckDB engine answers every held group from one query (``engines.duckdb.cells``), a
bucket per row guessed from the points' spacing and exact whatever the guess (buckets
that straddle a point are split by a second query), and numpy arrays answer in one pass
without a sorted copy (``statistics._order.counts_below_points``). Checked here: the
counts equal a brute-force count for even, uneven, repeated and degenerate points, and
a grouped release asks the engine a number of queries that does not grow with the
number of groups.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.statistics._order import counts_below_points
from dpsense.tables.engines.duckdb import cells, held_scan
from dpsense.tables.engines.duckdb.groups import DuckGroups, RawRows

pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")

POINTS = {
    "even": np.linspace(0.0, 100.0, 65),
    "on the data": np.arange(0.0, 101.0, 12.5),  # values sit on points: buckets straddle
    "uneven": np.array([-3.0, 0.0, 0.5, 0.51, 7.0, 49.99, 50.0, 99.0, 1e300]),
    "repeated": np.array([0.0, 10.0, 10.0, 10.0, 60.0, 60.0]),
    "one point": np.array([25.0]),
    "all equal": np.array([5.0, 5.0, 5.0]),
    "outside": np.array([-50.0, -10.0, 200.0, 300.0]),
}


def _values(n: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    v = np.round(rng.gamma(2.0, 15.0, n), 2)
    v[: n // 10] = np.round(v[: n // 10] / 12.5) * 12.5  # many values on the points
    v[n // 10 : n // 10 + 20] = [np.inf, -np.inf, 0.0, 100.0, 5.0] * 4
    return v


@pytest.mark.parametrize("name", list(POINTS))
@pytest.mark.parametrize("clip", [(0.0, 100.0), (None, None)])
def test_duckdb_counts_equal_brute_force(name: str, clip: tuple[Any, Any]) -> None:
    points = POINTS[name]
    rng = np.random.default_rng(4)
    n = 20_000
    frame = pd.DataFrame({"g": rng.integers(0, 7, n), "x": _values(n, 5)})
    con = duckdb.connect()
    con.register("t", frame)
    con.execute("CREATE TEMP TABLE keys AS SELECT range AS g, range + 100 AS gid FROM range(7)")
    raw = RawRows("SELECT g, x FROM t", ("g",), "SELECT * FROM keys", *clip)
    gids = [100, 101, 102, 103, 104, 105, 106, 107]  # 107: no rows
    got, queries = cells.counts_below_all(con, raw, gids, points)
    assert queries in (1, 2)
    x = frame["x"].to_numpy()
    if clip[0] is not None:
        x = np.clip(x, *clip)
    for gid in gids:
        mine = x[frame["g"].to_numpy() == gid - 100]
        want = [int(np.count_nonzero(mine < c)) for c in points]
        assert got[gid].tolist() == want, (name, gid)


@pytest.mark.parametrize("name", list(POINTS))
def test_numpy_counts_equal_brute_force(name: str) -> None:
    points = POINTS[name]
    x = np.concatenate([_values(200_003, 6), [np.nan, 1e308, -1e308]])
    want = [int(np.count_nonzero(x < c)) for c in points]
    assert counts_below_points(x, points).tolist() == want
    assert counts_below_points(x[:0], points).tolist() == [0] * len(points)


@pytest.mark.parametrize("groups", [3, 40])
def test_grouped_intervals_take_a_fixed_number_of_queries(
    monkeypatch: pytest.MonkeyPatch, groups: int
) -> None:
    """Every group held: the intervals of a median and a 90th percentile (same bounds,
    same points) of any number of groups take one query for all their counts, and the
    whole release a fixed number (the window pass and the counts)."""
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 100)
    monkeypatch.setattr(held_scan, "HOLD_DISTINCT", 0)
    made: list[DuckGroups] = []
    calls: list[int] = []
    original, count_all = DuckGroups.__init__, cells.counts_below_all

    def spy(self: DuckGroups, *args: Any) -> None:
        original(self, *args)
        made.append(self)

    def spy_counts(*args: Any) -> Any:
        calls.append(len(args[2]))
        return count_all(*args)

    monkeypatch.setattr(DuckGroups, "__init__", spy)
    monkeypatch.setattr("dpsense.tables.engines.duckdb.groups.counts_below_all", spy_counts)
    rng = np.random.default_rng(8)
    n = 3000 * groups
    frame = pd.DataFrame({"g": rng.integers(0, groups, n), "v": _values(n, 9)})
    query = {"median": ("v", ds.Median(0.0, 100.0)), "p90": ("v", ds.Quantile(0.9, 0.0, 100.0))}
    res = ds.release(frame, query, by="g", keys=list(range(groups)), epsilon=2.0, rng=3)
    assert len(made) == 1
    assert calls == [groups]  # one call answers every group and both levels
    assert made[0].fallbacks == 0
    assert made[0].queries <= 3  # the window pass, the counts (and at most one split)
    for name in query:
        assert all(rel.interval() is not None for _, rel in res[name])
