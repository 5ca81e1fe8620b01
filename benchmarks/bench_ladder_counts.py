"""The counts of every group's interval ladders on DuckDB: the bucketed aggregation of
``tables.engines.duckdb.ladders`` against an ASOF join of the rows onto the ladders'
points, and DuckDB's own ``median(v) GROUP BY g`` for scale.

Rows: ``--rows`` of ``g`` (``--groups`` groups) and ``v`` = gamma(2, 150) rounded to 0.01,
bounds [0, 1000] (the ``hard`` table of ``bench_tables``); each group's ladders around a
value near its median. Interleaved, best of ``--repeats`` in one process (only ratios mean
something when other processes share the cores). Both methods' counts are checked equal.

Run: ``.venv/bin/python benchmarks/bench_ladder_counts.py [--rows 2000000 --groups 100]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import duckdb
import numpy as np

from dpsense.methods.quantile_interval import ladder_counts
from dpsense.tables.engines.duckdb.groups import RawRows
from dpsense.tables.engines.duckdb.ladders import ladder_counts_all


def _asof(con: Any, requests: list[tuple[int, Any]]) -> list[np.ndarray]:
    rid, gid, k, p = [], [], [], []
    for r, (g, want) in enumerate(requests):
        m = want.points.shape[0]
        rid += [r] * m
        gid += [g] * m
        k += list(range(m))
        p += want.points.tolist()
    con.register(
        "pts_obj",
        {
            "rid": np.array(rid, dtype=np.int64),
            "k": np.array(k, dtype=np.int64),
            "p": np.array(p, dtype=np.float64),
        },
    )
    con.register(
        "req_obj",
        {
            "rid": np.arange(len(requests), dtype=np.int64),
            "g": np.array([g for g, _ in requests], dtype=np.int64),
        },
    )
    got = con.execute(
        "SELECT q.rid, p.k, count(*)::BIGINT AS c FROM "
        "(SELECT r.rid, least(greatest(t.v, 0.0), 1000.0) AS v FROM t JOIN req_obj r "
        "USING (g)) q ASOF JOIN pts_obj p ON q.rid = p.rid AND q.v >= p.p GROUP BY ALL"
    ).fetchnumpy()
    out = []
    for r, (_, want) in enumerate(requests):
        cells = np.zeros(want.points.shape[0], dtype=np.int64)
        mine = got["rid"] == r
        np.add.at(cells, np.asarray(got["k"])[mine], np.asarray(got["c"])[mine])
        # cells[k]: rows in [p_k, p_k+1); #{v < p_j} = n - #{v >= p_j}
        at_or_above = np.cumsum(cells[::-1])[::-1]
        out.append(at_or_above)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    con = duckdb.connect()
    con.execute(
        f"CREATE TABLE t AS SELECT (hash(i, 1) % {args.groups})::BIGINT AS g, "
        "round(-150 * ln((hash(i, 2) % 1000000 + 1) / 1000001.0) "
        "- 150 * ln((hash(i, 3) % 1000000 + 1) / 1000001.0), 2) AS v "
        f"FROM range({args.rows}) r(i)"
    )
    medians = dict(con.execute("SELECT g, median(v) FROM t GROUP BY g").fetchall())
    requests = [(int(g), ladder_counts(float(m) + 0.37, 0.0, 1000.0)) for g, m in medians.items()]
    sizes = dict(con.execute("SELECT g, count(*) FROM t GROUP BY g").fetchall())
    raw = RawRows("SELECT g AS gid, v AS x FROM t", ("gid",), None, 0.0, 1000.0)
    buckets, _ = ladder_counts_all(con, raw, requests)
    above = _asof(con, requests)
    for (g, _), b, a in zip(requests, buckets, above, strict=True):
        assert b.tolist() == (sizes[g] - a).tolist()
    times: dict[str, list[float]] = {"median GROUP BY": [], "buckets": [], "asof": []}
    runs = {
        "median GROUP BY": lambda: con.execute("SELECT g, median(v) FROM t GROUP BY g").fetchall(),
        "buckets": lambda: ladder_counts_all(con, raw, requests),
        "asof": lambda: _asof(con, requests),
    }
    for _ in range(args.repeats):
        for name, run in runs.items():
            t0 = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t0)
    base = min(times["median GROUP BY"])
    for name, ts in times.items():
        print(f"{name:16s} {min(ts):7.3f} s  {min(ts) / base:5.2f}x DuckDB's median")


if __name__ == "__main__":
    main()
