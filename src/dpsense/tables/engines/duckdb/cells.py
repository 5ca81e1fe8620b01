"""Counts below public points for every held group of a DuckDB release, in one query.

A quantile's interval (``methods.quantile_interval``) reads, per group, ``#{v < c}`` for a
list of public points c (the same for every group of a statistic: they depend on its
bounds only). Counting them as one filtered aggregate per point cost about twenty times
DuckDB's own grouped median (a ``FILTER`` clause per point, evaluated per row). Here each
row gets a bucket instead, a monotone guess of its cell from the points' mean spacing
(``floor(1 + (v - c_0) * scale)``, clamped), and DuckDB counts the rows of each (group,
bucket) with their smallest and largest value, in one pass over the raw rows (the value
clipped as the release clips it). A bucket whose values lie between two consecutive
points (always, unless a value sits on a point up to rounding, or the points are uneven)
is wholly in one cell; the rare buckets that straddle a point are split exactly by one
more query, a filtered count per straddled point over those buckets only. The counts are
exact whatever the guess: it decides only how many buckets need the second query.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from dpsense.tables.engines.duckdb.groups import RawRows

__all__ = ["counts_below_all"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def _bucket_sql(v: str, points: F64) -> str:
    g = int(points.shape[0])
    span = float(points[-1] - points[0]) if g else 0.0
    if g < 2 or not math.isfinite(span) or span <= 0:
        return "0"  # every bucket may straddle: the second query counts them exactly
    scale = (g - 1) / span
    shift = 1.0 - float(points[0]) * scale
    if not math.isfinite(shift):
        return "0"
    guess = f"floor({v} * {scale!r}::DOUBLE + {shift!r}::DOUBLE)"
    # the ends exactly (values clipped to a bound sit on the first or last point); NaN
    # sorts above every number in DuckDB: least(NaN, g) is g
    guess = f"least(greatest({guess}, 1.0::DOUBLE), {float(g - 1)!r}::DOUBLE)::INTEGER"
    first, last = f"{float(points[0])!r}::DOUBLE", f"{float(points[-1])!r}::DOUBLE"
    return f"CASE WHEN {v} < {first} THEN 0 WHEN {v} >= {last} THEN {g} ELSE {guess} END"


def _clipped(raw: RawRows) -> str:
    if raw.lower is None or raw.upper is None:
        return "x"
    return f"greatest(least(x, {raw.upper!r}::DOUBLE), {raw.lower!r}::DOUBLE)"


def counts_below_all(
    con: Any, raw: RawRows, gids: list[int], points: F64
) -> tuple[dict[int, I64], int]:
    """``#{v < c}`` for each of the increasing ``points`` and each group of ``gids``
    (v the clipped value of ``raw``'s rows), and the number of queries run (1, or 2 when
    a bucket straddles a point)."""
    points = np.asarray(points, dtype=np.float64)
    g = int(points.shape[0])
    on = ", ".join(raw.on)
    rows = f"SELECT {on}, {_clipped(raw)} AS v FROM ({raw.sql})"
    bucketed = f"SELECT {on}, {_bucket_sql('v', points)} AS e, v FROM ({rows})"
    agg = (
        f"SELECT {on}, e, count(*)::BIGINT AS c, min(v) AS lo, max(v) AS hi "
        f"FROM ({bucketed}) WHERE v IS NOT NULL GROUP BY ALL"
    )
    keyed = f"SELECT k.gid, a.* EXCLUDE ({on}) FROM ({agg}) a JOIN ({raw.keys}) k USING ({on})"
    got = con.execute(agg if raw.keys is None else keyed).fetchnumpy()
    gid = np.asarray(got["gid"], dtype=np.int64)
    e = np.asarray(got["e"], dtype=np.int64)
    c = np.asarray(got["c"], dtype=np.int64)
    lo = np.asarray(got["lo"], dtype=np.float64)
    hi = np.asarray(got["hi"], dtype=np.float64)
    wanted = np.isin(gid, np.asarray(gids, dtype=np.int64))
    gid, e, c, lo, hi = gid[wanted], e[wanted], c[wanted], lo[wanted], hi[wanted]
    index = {int(g_): i for i, g_ in enumerate(gids)}
    cells = np.zeros((len(gids), g + 1), dtype=np.int64)
    # a bucket's cell: the number of points at or below its values (NaN: above all)
    cell_lo = np.where(np.isnan(lo), g, np.searchsorted(points, lo, side="right"))
    cell_hi = np.where(np.isnan(hi), g, np.searchsorted(points, hi, side="right"))
    whole = cell_lo == cell_hi
    rows_of = np.array([index[int(x)] for x in gid.tolist()], dtype=np.int64)
    np.add.at(cells, (rows_of[whole], cell_lo[whole]), c[whole])
    queries = 1
    split = np.flatnonzero(~whole)
    if split.size:
        _split(con, raw, bucketed, points, cells, index, (gid, e, c, lo, hi), split)
        queries += 1
    below = np.cumsum(cells, axis=1)[:, :g]
    return {g_: below[i].astype(np.int64) for g_, i in index.items()}, queries


def _split(
    con: Any,
    raw: RawRows,
    bucketed: str,
    points: F64,
    cells: I64,
    index: dict[int, int],
    buckets: tuple[I64, I64, I64, F64, F64],
    split: I64,
) -> None:
    """Add the straddling buckets ``split`` to ``cells``: their rows below each point
    inside them, counted by one query over those buckets."""
    gid, e, c, lo, hi = buckets
    inside: dict[int, F64] = {}  # the points each straddling bucket holds (lo < p <= hi)
    for i in split.tolist():
        top = math.inf if math.isnan(hi[i]) else hi[i]
        inside[i] = np.unique(points[(points > lo[i]) & (points <= top)])
    cuts = sorted({float(p) for ps in inside.values() for p in ps.tolist()})
    on = ", ".join(raw.on)
    es = ", ".join(str(int(x)) for x in sorted(set(e[split].tolist())))
    filters = ", ".join(f"count(*) FILTER (WHERE v < {p!r}::DOUBLE)::BIGINT" for p in cuts)
    agg = f"SELECT {on}, e, {filters} FROM ({bucketed}) WHERE e IN ({es}) GROUP BY ALL"
    keyed = f"SELECT k.gid, a.* EXCLUDE ({on}) FROM ({agg}) a JOIN ({raw.keys}) k USING ({on})"
    got = con.execute(agg if raw.keys is None else keyed).fetchall()
    counted = {(int(r[0]), int(r[1])): dict(zip(cuts, r[2:], strict=True)) for r in got}
    for i in split.tolist():
        g_, below = int(gid[i]), counted[(int(gid[i]), int(e[i]))]
        row, ps = index[g_], inside[i]
        done, cell = 0, int(np.searchsorted(points, lo[i], side="right"))  # lo is a number
        for p in ps.tolist():
            n_below = int(below[p])
            cells[row, cell] += n_below - done
            done, cell = n_below, int(np.searchsorted(points, p, side="right"))
        cells[row, cell] += int(c[i]) - done
