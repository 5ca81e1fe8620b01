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
from dpsense.methods.quantile_interval import ladder_counts
from dpsense.statistics._order import counts_below_points
from dpsense.tables.engines.duckdb import cells, held_scan, ladders
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
    """Every group held: the intervals of a median and a 90th percentile of any number of
    groups (ladders around each group's released value: points of its own) take one
    query for all their counts, and the whole release a fixed number (the window pass
    and the counts)."""
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 100)
    monkeypatch.setattr(held_scan, "HOLD_DISTINCT", 0)
    made: list[DuckGroups] = []
    calls: list[int] = []
    original, count_all = DuckGroups.__init__, ladders.ladder_counts_all

    def spy(self: DuckGroups, *args: Any) -> None:
        original(self, *args)
        made.append(self)

    def spy_counts(*args: Any) -> Any:
        calls.append(len(args[2]))
        return count_all(*args)

    monkeypatch.setattr(DuckGroups, "__init__", spy)
    monkeypatch.setattr(ladders, "ladder_counts_all", spy_counts)
    rng = np.random.default_rng(8)
    n = 3000 * groups
    frame = pd.DataFrame({"g": rng.integers(0, groups, n), "v": _values(n, 9)})
    query = {"median": ("v", ds.Median(0.0, 100.0)), "p90": ("v", ds.Quantile(0.9, 0.0, 100.0))}
    res = ds.release(frame, query, by="g", keys=list(range(groups)), epsilon=2.0, rng=3)
    assert len(made) == 1
    assert calls == [2 * groups]  # one call answers every group's ladders of both levels
    assert made[0].fallbacks == 0
    assert made[0].queries <= 3  # the window pass, the counts (and at most one split)
    for name in query:
        assert all(rel.interval() is not None for _, rel in res[name])


def _ladder(centre: float, lower: float, upper: float) -> Any:
    return ladder_counts(centre, lower, upper)


@pytest.mark.parametrize("clip", [(0.0, 100.0), (None, None)])
def test_duckdb_ladder_counts_equal_brute_force(clip: tuple[Any, Any]) -> None:
    """Each group's ladders around its own value, counted by one query (two when a
    bucket straddles a point), equal a brute-force count: values on the ladders' points
    and their neighbours, at the value, at the bounds, infinite; several requests per
    group; a group with no rows."""
    rng = np.random.default_rng(11)
    n = 30_000
    g = rng.integers(0, 6, n)
    x = _values(n, 12)
    centres = [35.0, 0.0, 100.0, 12.5, 61.37, 35.0]
    wants = [(100 + k, _ladder(m, 0.0, 100.0)) for k, m in enumerate(centres)]
    wants += [(100, _ladder(80.0, 0.0, 100.0)), (106, _ladder(50.0, 0.0, 100.0))]
    for k, (gid, want) in enumerate(wants[:6]):  # rows on and next to the points
        on = want.points[np.isfinite(want.points)]
        pick = rng.choice(on, 200)
        near = np.nextafter(pick, rng.choice([-np.inf, np.inf], 200))
        rows = np.flatnonzero(g == gid - 100)[:400]
        x[rows] = np.concatenate([pick, near])[: rows.size]
        x[rows[:5]] = centres[k]
    frame = pd.DataFrame({"g": g, "x": x})
    con = duckdb.connect()
    con.register("t", frame)
    con.execute("CREATE TEMP TABLE keys AS SELECT range AS g, range + 100 AS gid FROM range(7)")
    raw = RawRows("SELECT g, x FROM t", ("g",), "SELECT * FROM keys", *clip)
    got, queries = ladders.ladder_counts_all(con, raw, wants)
    assert queries in (1, 2)
    xs = np.clip(x, *clip) if clip[0] is not None else x
    for (gid, want), counts in zip(wants, got, strict=True):
        mine = xs[g == gid - 100]
        assert counts.tolist() == [int(np.count_nonzero(mine < c)) for c in want.points]
    con.close()


def test_duckdb_ladder_straddles_are_split_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Buckets that do not follow the ladder (every value in one bucket a side) straddle
    points: the second query splits them, exactly."""
    monkeypatch.setattr(ladders, "_bucket_sql", lambda v, m, w: f"sign({v} - {m})::INTEGER")
    rng = np.random.default_rng(13)
    frame = pd.DataFrame({"g": rng.integers(0, 3, 5000), "x": _values(5000, 14)})
    con = duckdb.connect()
    con.register("t", frame)
    con.execute("CREATE TEMP TABLE keys AS SELECT range AS g, range AS gid FROM range(3)")
    raw = RawRows("SELECT g, x FROM t", ("g",), "SELECT * FROM keys", 0.0, 100.0)
    wants = [(k, _ladder(m, 0.0, 100.0)) for k, m in enumerate([20.0, 45.5, 99.0])]
    got, queries = ladders.ladder_counts_all(con, raw, wants)
    assert queries == 2
    xs = np.clip(frame["x"].to_numpy(), 0.0, 100.0)
    for (gid, want), counts in zip(wants, got, strict=True):
        mine = xs[frame["g"].to_numpy() == gid]
        assert counts.tolist() == [int(np.count_nonzero(mine < c)) for c in want.points]


def test_duckdb_ladder_counts_on_two_decimal_data_take_one_query() -> None:
    """Values and released values on a 0.01 grid: ``M - w / 4`` and the like are data
    values whose logarithm rounds either way; the rung's cell is corrected in the same
    query, so no second query runs, and the counts are exact."""
    rng = np.random.default_rng(15)
    n = 200_000
    frame = pd.DataFrame({"g": rng.integers(0, 4, n), "x": np.round(rng.gamma(2.0, 150.0, n), 2)})
    con = duckdb.connect()
    con.register("t", frame)
    raw = RawRows("SELECT g AS gid, x FROM t", ("gid",), None, 0.0, 1000.0)
    wants = [(k, _ladder(m, 0.0, 1000.0)) for k, m in enumerate([254.31, 248.98, 300.0, 0.5])]
    got, queries = ladders.ladder_counts_all(con, raw, wants)
    assert queries == 1
    xs = np.clip(frame["x"].to_numpy(), 0.0, 1000.0)
    for (gid, want), counts in zip(wants, got, strict=True):
        mine = xs[frame["g"].to_numpy() == gid]
        assert counts.tolist() == [int(np.count_nonzero(mine < c)) for c in want.points]
