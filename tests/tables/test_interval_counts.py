"""A quantile's interval reads its counts below public points for every group at once.

``methods.quantile_interval`` asks each group's records for ``counts_below(points)``; the
DuckDB engine answers every held group from one query (``engines.duckdb.cells``), a
bucket per row guessed from the points' spacing and exact whatever the guess (buckets
that straddle a point are split by a second query), and numpy arrays answer in one pass
without a sorted copy (``statistics._order.counts_below_points``). Checked here: the
counts equal a brute-force count for even, uneven, repeated and degenerate points, and
a grouped release asks the engine a number of queries that does not grow with the
number of groups. The first pass of a release with every row a unit counts them too
(``engines.duckdb.pass_cells``: buckets guessed from the points, exact by their smallest
and largest values, a fallback to ``counts_below_all`` when a bucket straddles a point):
checked against a brute-force count on values on the points, at and beyond the bounds,
ties, NULL, NaN, an empty group and bounds where the guess is useless.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.methods.quantile_interval import endpoint_grid
from dpsense.statistics._order import counts_below_points
from dpsense.tables.engines.duckdb import cells, held_scan, pass_cells
from dpsense.tables.engines.duckdb.groups import DuckGroups, RawRows

pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")

POINTS = {
    "even": endpoint_grid(0.0, 100.0),
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
    assert calls == []  # the first pass counted every group for both levels
    assert made[0].fallbacks == 0
    assert made[0].queries <= 1  # the window pass
    for name in query:
        assert all(rel.interval() is not None for _, rel in res[name])


BOUNDS = [
    (0.0, 100.0),
    (0.1, 0.7),  # the guess misplaces values on some points: buckets straddle
    (-3.3, 7.1),
    (1e-5, 1.0),
    (0.0, 1e-300),
    (2.0, 2.0000000000001),  # 450 doubles: uniform values fall on points too
    (-1e308, 1e308),  # upper - lower overflows: no guess, only the fallback
]
RELEASED = [*BOUNDS[:4], (0.0, 1e-250), BOUNDS[5], (-8e307, 8e307)]
"""Bounds a release accepts (its output grid refuses [0, 1e-300] and [-1e308, 1e308])."""


def _on_points(lower: float, upper: float, n: int, seed: int, on: bool = True) -> Any:
    """Values on every point and beside it (``on``), at and beyond the bounds, ties and
    uniform values in between."""
    rng = np.random.default_rng(seed)
    pts = endpoint_grid(lower, upper) if on else np.zeros(0)
    near = np.concatenate([pts, np.nextafter(pts, -np.inf), np.nextafter(pts, np.inf)])
    with np.errstate(over="ignore"):
        span = upper - lower
        outside = np.array([lower - span, upper + span, -np.inf, np.inf, lower, upper])
    inside = lower + (upper - lower) * rng.random(n)
    v = np.concatenate([np.repeat(near, 3), outside, inside])
    return v[rng.permutation(v.shape[0])]


def _brute(x: Any, lower: float, upper: float) -> list[int]:
    clipped = np.clip(x, lower, upper)
    return [int(np.count_nonzero(clipped < c)) for c in endpoint_grid(lower, upper)]


def _spy_counts(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[int]]:
    """Record every group's counts as served, and the calls of ``counts_below_all``."""
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 50)
    monkeypatch.setattr(held_scan, "HOLD_DISTINCT", 0)
    served: list[Any] = []
    calls: list[int] = []
    original, count_all = DuckGroups.counts_below, cells.counts_below_all

    def spy(self: DuckGroups, gid: int, points: Any) -> Any:
        got = original(self, gid, points)
        served.append((gid, points.copy(), got.copy()))
        return got

    def spy_all(*args: Any) -> Any:
        calls.append(len(args[2]))
        return count_all(*args)

    monkeypatch.setattr(DuckGroups, "counts_below", spy)
    monkeypatch.setattr("dpsense.tables.engines.duckdb.groups.counts_below_all", spy_all)
    return served, calls


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("bounds", RELEASED, ids=str)
def test_first_pass_counts_equal_brute_force(
    monkeypatch: pytest.MonkeyPatch, bounds: tuple[float, float], on: bool
) -> None:
    served, calls = _spy_counts(monkeypatch)
    lower, upper = bounds
    v = _on_points(lower, upper, 2000, 11, on)
    rng = np.random.default_rng(12)
    g = rng.integers(0, 5, v.shape[0])
    g[g == 4] = 5  # key 4: no rows
    g[:40] = 6  # key 6: a few rows, not held
    frame = pd.DataFrame({"g": g, "v": v})
    ds.release(
        frame, ds.Median(lower, upper), column="v", by="g", keys=list(range(7)), epsilon=1.0, rng=1
    )
    held = {0, 1, 2, 3, 5}
    assert {gid for gid, _, _ in served} == held
    for gid, points, got in served:
        assert np.array_equal(points, endpoint_grid(lower, upper))
        assert got.tolist() == _brute(v[g == gid], lower, upper), (bounds, gid)
    if bounds == (0.0, 100.0) or (not on and bounds != BOUNDS[5]):
        assert calls == []  # served by the first pass
    elif on:  # values beside points the guess misplaces: a bucket straddles, the fallback
        assert calls == [len(held)]


def test_first_pass_counts_serve_both_levels_and_keep_the_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The counts are the same numbers: the seeded release is the same with and without
    the first pass counting them."""
    rng = np.random.default_rng(13)
    n = 6000
    frame = pd.DataFrame({"g": rng.integers(0, 4, n), "v": _values(n, 14)})
    query = {"median": ("v", ds.Median(0.0, 100.0)), "p90": ("v", ds.Quantile(0.9, 0.0, 100.0))}

    def run() -> Any:
        res = ds.release(frame, query, by="g", keys=list(range(4)), epsilon=1.0, rng=5)
        return [(k, rel.value, rel.interval()) for name in query for k, rel in res[name]]

    served, calls = _spy_counts(monkeypatch)
    with_pass = run()
    assert calls == []
    assert len(served) == 8
    monkeypatch.setattr(held_scan, "cell_need", lambda *args: None)
    without = run()
    assert calls == [4]  # the separate scan, once for both levels
    assert with_pass == without


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("bounds", BOUNDS, ids=str)
def test_bucket_counts_match_counts_below_all_with_nulls_and_nan(
    bounds: tuple[float, float], on: bool
) -> None:
    """The buckets as the first pass aggregates them, on rows with NULL, NaN and
    infinities (which the pass itself drops or refuses), count as ``counts_below_all``
    does: NaN and NULL clip to ``upper`` (DuckDB's ``least`` ignores NULL)."""
    lower, upper = bounds
    v = _on_points(lower, upper, 500, 15, on)
    v[:7] = np.nan
    rng = np.random.default_rng(16)
    frame = pd.DataFrame({"g": rng.integers(0, 3, v.shape[0]), "x": v})
    frame["x"] = frame["x"].astype("object")
    frame.loc[7:12, "x"] = None  # NULL, not NaN
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT g, x::DOUBLE AS x FROM frame")
    con.execute("UPDATE t SET x = 'nan'::DOUBLE WHERE rowid < 7")
    con.execute("CREATE TEMP TABLE keys AS SELECT range AS g, range AS gid FROM range(3)")
    raw = RawRows("SELECT g, x FROM t", ("g",), "SELECT * FROM keys", lower, upper)
    want, _ = cells.counts_below_all(con, raw, [0, 1, 2], endpoint_grid(lower, upper))
    b = pass_cells.bucket_sql("x", lower, upper)
    if b is None:  # upper - lower overflows: the first pass takes no counts
        assert bounds == (-1e308, 1e308)
        return
    got = con.execute(
        f"SELECT g AS gid, {b} AS b, count(x) AS c, min(x) AS lo, max(x) AS hi FROM t GROUP BY ALL"
    ).fetchnumpy()
    counted = pass_cells.counts_from_buckets(
        lower,
        upper,
        *(np.asarray(got[k], dtype=np.int64) for k in ("gid", "c")),
        *(np.asarray(got[k], dtype=np.float64) for k in ("lo", "hi")),
    )
    if counted is None:  # a straddling bucket: the engine falls back
        assert on or bounds in (BOUNDS[4], BOUNDS[5])
        return
    points, by_group = counted
    assert np.array_equal(points, endpoint_grid(lower, upper))
    for gid in range(3):
        assert by_group[gid].tolist() == want[gid].tolist(), (bounds, gid)
        x = frame["x"].to_numpy(dtype=np.float64, na_value=np.nan)[frame["g"] == gid]
        assert by_group[gid].tolist() == _brute(np.where(np.isnan(x), upper, x), lower, upper)
