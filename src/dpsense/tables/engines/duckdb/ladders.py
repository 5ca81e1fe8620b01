"""The counts of every held group's interval ladders in one DuckDB query.

A quantile's interval (``methods.quantile_interval``) reads, per group, ``#{v < c}`` at
points on two ladders around the group's released value M: ``M -+ w 2^(k/Q - B)`` (w the
bounds' width, Q steps a doubling), so each group has points of its own. A grouped
release draws every group's value first and announces each group's ladders
(:meth:`PendingLadders.announce`); the first group that asks for its counts has all of
them counted at once:

* the announced ladders go to DuckDB as a small table (request, group, M, w), joined to
  the raw rows by group (a group with several statistics' ladders, a query's median and
  90th percentile, meets each of them);
* each (row, request) gets a rung from the ladder's geometry, the ceiling of
  ``Q log2(|v - M| / w)`` clamped to the ladder and signed by the side of M (M itself a
  rung of its own); a second small table maps each (request, rung) to the cell the rung
  falls in and that cell's two points, and the row's cell is that one moved by one where
  the value is past one of them (a value on a point, whose logarithm rounds the other
  way: common on data with two decimals, where ``M - w / 4`` may be a data value);
* DuckDB counts the rows of each (request, cell) with their smallest and largest value,
  in one pass. A cell whose values lie between its two points (all of them, unless the
  rung was off by two) is exact; any other is split exactly by one more query, a count
  below each point inside it (as ``cells`` does for shared points).

The counts are exact whatever the buckets: the guess decides only whether the second
query runs. Only public points (given the released values) meet the records.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from dpsense.methods.quantile_interval import (
    INTERVAL_OCTAVES,
    INTERVAL_PER_OCTAVE,
    LadderCounts,
)

if TYPE_CHECKING:
    from dpsense.tables.engines.duckdb.groups import RawRows

__all__ = ["PendingLadders", "ladder_counts_all"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

_NAN_BUCKET = 1 << 20
"""The bucket of NaN values (above every point, as in numpy's counts)."""


def _bucket_sql(v: str, m: str, w: str) -> str:
    """A signed rung per value: 0 at M; 1.. above it and -1.. below it (the sign of
    v - M times 1 + the clamped ceiling of Q log2(|v - M| / w) + BQ; at M the logarithm
    is -inf and the sign 0). One logarithm and no branch but NaN's (a third cheaper than
    a CASE per side on 2e6 rows)."""
    q, top = INTERVAL_PER_OCTAVE, INTERVAL_OCTAVES * INTERVAL_PER_OCTAVE
    d = f"({v} - {m})"
    k = f"ceil({float(q)!r}::DOUBLE * log2(abs({d}) / {w})) + {float(top)!r}::DOUBLE"
    rung = f"(1.0::DOUBLE + least(greatest({k}, 0.0::DOUBLE), {float(top + 1)!r}::DOUBLE))"
    return f"CASE WHEN isnan({v}) THEN {_NAN_BUCKET} ELSE (sign({d}) * {rung})::INTEGER END"


def _rungs(requests: list[tuple[int, LadderCounts]]) -> dict[str, np.ndarray]:
    """For each request and bucket of :func:`_bucket_sql` (all of them, NaN's too): the
    cell of a value inside the bucket's range of distances, and that cell's points (the
    lowest value in it and the first above it; -inf and +inf past the ends)."""
    q, top = INTERVAL_PER_OCTAVE, INTERVAL_OCTAVES * INTERVAL_PER_OCTAVE
    j = np.arange(1, top + 3, dtype=np.float64)
    inside = np.exp2((j - 1.5 - top) / q)  # a distance / w inside rung j's range
    buckets = np.concatenate([[0], np.arange(1, top + 3), -np.arange(1, top + 3)])
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("rid", "b", "cell", "lo", "hi", "top")}
    for r, (_, want) in enumerate(requests):
        points, g = want.points, int(want.points.shape[0])
        at = np.concatenate([[want.centre], want.centre + want.width * inside])
        at = np.concatenate([at, want.centre - want.width * inside])
        with np.errstate(invalid="ignore"):
            cell = np.searchsorted(points, np.nan_to_num(at, nan=want.centre), "right")
        cell = np.append(cell, g)  # NaN: above every point
        padded = np.concatenate([[-np.inf], points, [np.inf]])
        cols["rid"].append(np.full(cell.shape[0], r, dtype=np.int64))
        cols["b"].append(np.append(buckets, _NAN_BUCKET).astype(np.int64))
        cols["cell"].append(cell.astype(np.int64))
        cols["lo"].append(padded[cell])
        cols["hi"].append(padded[cell + 1])
        cols["top"].append(np.full(cell.shape[0], g, dtype=np.int64))
    return {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}


def _clipped(raw: RawRows) -> str:
    if raw.lower is None or raw.upper is None:
        return "x"
    return f"greatest(least(x, {raw.upper!r}::DOUBLE), {raw.lower!r}::DOUBLE)"


def _register(con: Any, raw: RawRows, name: str, cols: dict[str, np.ndarray]) -> str:
    """Register ``cols`` (with a ``gid`` column) and return SQL of it keyed by ``raw.on``."""
    con.register(name, cols)
    if raw.keys is None:
        return f"SELECT * FROM {name}"
    return f"SELECT k.* EXCLUDE (gid), o.* FROM {name} o JOIN ({raw.keys}) k USING (gid)"


def ladder_counts_all(
    con: Any, raw: RawRows, requests: list[tuple[int, LadderCounts]]
) -> tuple[list[I64], int]:
    """``#{v < c}`` at each request's points for its group (v the clipped values of
    ``raw``'s rows), and the number of queries run (1, or 2 when a bucket straddles)."""
    on = ", ".join(raw.on)
    table = _register(
        con,
        raw,
        "dpsense_ladders_obj",
        {
            "rid": np.arange(len(requests), dtype=np.int64),
            "gid": np.array([g for g, _ in requests], dtype=np.int64),
            "m": np.array([w.centre for _, w in requests], dtype=np.float64),
            "w": np.array([w.width for _, w in requests], dtype=np.float64),
        },
    )
    con.register("dpsense_rungs_obj", _rungs(requests))
    rows = f"SELECT {on}, {_clipped(raw)} AS v FROM ({raw.sql})"
    guessed = (
        f"SELECT r.rid, {_bucket_sql('s.v', 'r.m', 'r.w')} AS b, s.v FROM ({rows}) s "
        f"JOIN ({table}) r USING ({on}) WHERE s.v IS NOT NULL"
    )
    # the rung's cell, moved by one where the value is past one of the cell's points
    # (the logarithm's rounding, a value on a point): exact unless off by two or more
    cell = "least(greatest(k.cell + (g.v >= k.hi)::INTEGER - (g.v < k.lo)::INTEGER, 0), k.top)"
    bucketed = (
        f"SELECT g.rid, {cell} AS e, g.v FROM ({guessed}) g "
        "JOIN dpsense_rungs_obj k ON g.rid = k.rid AND g.b = k.b"
    )
    try:
        got = con.execute(
            f"SELECT rid, e, count(*)::BIGINT AS c, min(v) AS lo, max(v) AS hi "
            f"FROM ({bucketed}) GROUP BY ALL ORDER BY rid"
        ).fetchnumpy()
        rid = np.asarray(got["rid"], dtype=np.int64)
        e = np.asarray(got["e"], dtype=np.int64)
        c = np.asarray(got["c"], dtype=np.int64)
        lo = np.asarray(got["lo"], dtype=np.float64)
        hi = np.asarray(got["hi"], dtype=np.float64)
        cells = [np.zeros(w.points.shape[0] + 1, dtype=np.int64) for _, w in requests]
        starts = np.searchsorted(rid, np.arange(len(requests) + 1), side="left")
        straddling: list[tuple[int, int, int, F64]] = []  # (rid, e, first cell, points in)
        for r, (_, want) in enumerate(requests):
            a, b = int(starts[r]), int(starts[r + 1])
            if a == b:
                continue
            points, g = want.points, int(want.points.shape[0])
            cell_lo = np.where(np.isnan(lo[a:b]), g, np.searchsorted(points, lo[a:b], "right"))
            cell_hi = np.where(np.isnan(hi[a:b]), g, np.searchsorted(points, hi[a:b], "right"))
            whole = cell_lo == cell_hi
            np.add.at(cells[r], cell_lo[whole], c[a:b][whole])
            for i in np.flatnonzero(~whole).tolist():
                top = math.inf if math.isnan(hi[a + i]) else hi[a + i]
                inside = points[(points > lo[a + i]) & (points <= top)]
                straddling.append((r, int(e[a + i]), int(cell_lo[i]), inside))
        queries = 1
        if straddling:
            _split(con, bucketed, straddling, cells, c, rid, e)
            queries += 1
    finally:
        con.unregister("dpsense_ladders_obj")
        con.unregister("dpsense_rungs_obj")
    return [np.cumsum(cl)[:-1].astype(np.int64) for cl in cells], queries


def _split(
    con: Any,
    bucketed: str,
    straddling: list[tuple[int, int, int, F64]],
    cells: list[I64],
    c: I64,
    rid: I64,
    e: I64,
) -> None:
    """Add the straddling buckets to ``cells``: their rows below each point inside them,
    counted by one query over those buckets."""
    cuts: dict[str, list[Any]] = {"rid": [], "e": [], "p": []}
    for r, b, _, inside in straddling:
        for p in inside.tolist():
            cuts["rid"].append(r)
            cuts["e"].append(b)
            cuts["p"].append(float(p))
    con.register(
        "dpsense_cuts_obj",
        {
            "rid": np.asarray(cuts["rid"], dtype=np.int64),
            "e": np.asarray(cuts["e"], dtype=np.int64),
            "p": np.asarray(cuts["p"], dtype=np.float64),
        },
    )
    try:
        got = con.execute(
            f"SELECT t.rid, t.e, t.p, count(b.v) FILTER (WHERE b.v < t.p)::BIGINT "
            f"FROM dpsense_cuts_obj t LEFT JOIN ({bucketed}) b ON b.rid = t.rid AND b.e = t.e "
            "GROUP BY ALL"
        ).fetchall()
    finally:
        con.unregister("dpsense_cuts_obj")
    below = {(int(r), int(b), float(p)): int(n) for r, b, p, n in got}
    size = {
        (int(r), int(b)): int(n)
        for r, b, n in zip(rid.tolist(), e.tolist(), c.tolist(), strict=True)
    }
    for r, b, cell, inside in straddling:
        done = 0
        for p in inside.tolist():
            n_below = below[(r, b, float(p))]
            cells[r][cell] += n_below - done
            done, cell = n_below, cell + 1  # the points are strictly increasing
        cells[r][cell] += size[(r, b)] - done


class PendingLadders:
    """The ladders a DuckDB release's held groups announced and the counts answered."""

    def __init__(self) -> None:
        self.pending: list[tuple[int, LadderCounts]] = []
        self.answered: dict[tuple[int, tuple[float, ...]], I64] = {}

    def announce(self, gid: int, want: LadderCounts) -> None:
        if bool(np.all(np.diff(want.points) > 0)):  # else asked and counted alone
            self.pending.append((gid, want))

    def answer(self, con: Any, raw: RawRows, gid: int, points: F64) -> tuple[I64 | None, int]:
        """The group's counts at ``points`` if they were announced (every announced
        ladder counted by one query when the first is asked for), and the queries run."""
        key = (gid, tuple(float(p) for p in points))
        queries = 0
        if key not in self.answered and any(
            g == gid and np.array_equal(w.points, points) for g, w in self.pending
        ):
            got, queries = ladder_counts_all(con, raw, self.pending)
            for (g, w), counts in zip(self.pending, got, strict=True):
                self.answered[(g, tuple(float(p) for p in w.points))] = counts
            self.pending = []
        return self.answered.get(key), queries
