"""Grouped releases from a Parquet file against DuckDB's own GROUP BY, in one process.

Three tables (``--table easy|hard|hard-int|all``), each ``--rows`` rows, generated once by
DuckDB from hashes of the row number (deterministic: no ``random()``) and cached as Parquet
under the temp dir, keyed by their parameters:

* ``easy``: ``person`` (``--people`` people, each mostly in one of ``--groups`` groups,
  about rows/people rows each), ``g`` and ``v`` (integers in [0, 100], many ties);
  ``ds.Median(0, 100, resolution=1)`` etc.
* ``hard``: the table users bring. ``person`` and ``g`` drawn independently per row (each
  person's ~20 rows spread over the groups), ``v`` = gamma(2, 150) rounded to 0.01
  (continuous: about 7e4 distinct values per group at 2e7 rows); bounds [0, 1000].
* ``hard-int``: the same with ``v`` = round(gamma(2, 150) / 10) (heavily tied integers).

Timed, interleaved and best of ``--repeats`` (another process may share the cores: only
the ratios mean something): DuckDB's own ``median(v)`` / ``avg(clip(v))`` / ``count(*)``
``GROUP BY g`` to Python, and the dpsense releases with public keys, every row a unit and
with ``privacy_unit="person", max_rows_per_unit=5`` (one group per person, the default);
the latter also against DuckDB's ``count(DISTINCT person) GROUP BY g`` and against DuckDB's
own SQL doing the same bounding (``bounding_sql``: each person's group and 5 rows chosen by
hashes, then the aggregate).
Also the peak of Python-side allocations (``tracemalloc``, numpy arrays included) of each
release, next to the size of the value column as a numpy array (rows x 8 bytes).

Results: ``benchmarks/results/tables.md``.

Run: ``.venv/bin/python benchmarks/bench_tables.py [--table all --rows 20000000]``
(``--rows 2000000`` for a quick run).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

import dpsense as ds

RESULTS = Path(__file__).resolve().parent / "results"
TABLES = ("easy", "hard", "hard-int")


def peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _uniform(salt: int) -> str:
    """A uniform double in (0, 1) from a hash of the row number i (one stream per salt;
    ``hash(i * 8 + salt)``: DuckDB's ``hash(i, salt)`` streams are correlated)."""
    return f"((hash(i * 8 + {salt}) >> 11)::DOUBLE + 0.5) / 9007199254740992.0"


def table_sql(kind: str, rows: int, groups: int, people: int) -> str:
    """The SELECT that generates table ``kind`` (columns person, g, v)."""
    if kind == "easy":
        normal = f"sqrt(-2 * ln({_uniform(3)})) * cos(2 * pi() * {_uniform(4)})"
        return (
            f"SELECT (i % {people})::BIGINT AS person, "
            f"(CASE WHEN hash(i * 8 + 1) % 10 = 0 THEN hash(i * 8 + 2) % {groups} "
            f"ELSE (i % {people}) % {groups} END)::BIGINT AS g, "
            f"least(100, greatest(0, round(50 + 15 * {normal})))::DOUBLE AS v "
            f"FROM range({rows}) t(i)"
        )
    gamma = f"(-150.0 * (ln({_uniform(3)}) + ln({_uniform(4)})))"  # gamma(2, 150)
    value = f"round({gamma}, 2)" if kind == "hard" else f"round({gamma} / 10.0)"
    return (
        f"SELECT (hash(i * 8 + 1) % {people})::BIGINT AS person, "
        f"(hash(i * 8 + 2) % {groups})::BIGINT AS g, {value}::DOUBLE AS v "
        f"FROM range({rows}) t(i)"
    )


def table_path(kind: str, rows: int, groups: int, people: int) -> Path:
    """The cached Parquet file of a table (written on first use)."""
    folder = Path(tempfile.gettempdir()) / "dpsense-bench-tables"
    folder.mkdir(exist_ok=True)
    path = folder / f"{kind}-{rows}-{groups}-{people}-v1.parquet"
    if not path.exists():
        start = time.perf_counter()
        part = path.with_suffix(".part")
        duckdb.execute(
            f"COPY ({table_sql(kind, rows, groups, people)}) TO '{part}' (FORMAT PARQUET)"
        )
        part.rename(path)
        print(f"wrote {kind}: {rows:,} rows in {time.perf_counter() - start:.1f} s")
    return path


def interleaved(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best of ``repeats`` for each function, the functions run in turn each round."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def bounding_sql(path: Path, aggregate: str) -> str:
    """DuckDB's own SQL doing a release's contribution bounding by hand (one group per
    person, chosen by a hash; then 5 of its rows there, chosen by a hash), then
    ``aggregate`` by group: the baseline of a release with a privacy unit."""
    return f"""
WITH pick AS (SELECT person, arg_min(g, hash(g, 7)) AS g FROM '{path}' GROUP BY person),
kept AS (
    SELECT t.* FROM '{path}' t SEMI JOIN pick USING (person, g)
    QUALIFY row_number() OVER (PARTITION BY person, g ORDER BY hash(v, 9)) <= 5
)
SELECT g, {aggregate} FROM kept GROUP BY g
"""


def bench(
    kind: str,
    rows: int,
    groups: int,
    people: int,
    repeats: int,
    stats: list[str],
    modes: list[str],
) -> list[dict[str, Any]]:
    """For each statistic, the best times (s) of DuckDB's own ``GROUP BY`` (``duckdb``),
    the release with every row a unit (``rows``), with ``privacy_unit="person"`` and 5 rows
    each (``person``), DuckDB's ``count(DISTINCT person)`` and DuckDB's SQL doing the same
    bounding (``bounded``), interleaved; and the Python peaks (bytes) of the releases.
    ``benchmarks/guard.py`` calls it too."""
    path = table_path(kind, rows, groups, people)
    hi = 100.0 if kind == "easy" else 1000.0
    resolution = {"resolution": 1.0} if kind != "hard" else {}
    known = {
        "median": (ds.Median(0.0, hi, **resolution), "median(v)"),
        "mean": (ds.Mean(0.0, hi), f"avg(greatest(least(v, {hi}), 0.0))"),
        "count": (ds.Count(), "count(*)"),
    }
    keys = list(range(groups))
    con = duckdb.connect()
    out = []
    for name in stats:
        statistic, aggregate = known[name]

        def duck(aggregate: str = aggregate) -> object:
            return con.execute(f"SELECT g, {aggregate} FROM '{path}' GROUP BY g").fetchall()

        def release(unit: bool, statistic: Any = statistic) -> object:
            extra: dict[str, Any] = {"privacy_unit": "person", "max_rows_per_unit": 5}
            return ds.release(
                path,
                statistic,
                column=None if isinstance(statistic, ds.Count) else "v",
                by="g",
                keys=keys,
                epsilon=1.0,
                rng=1,
                **(extra if unit else {}),
            )

        duck()  # warm the file cache
        fns: dict[str, Callable[[], object]] = {"duckdb": duck}
        if "rows" in modes:
            fns["rows"] = lambda: release(False)
        if "person" in modes:
            fns["person"] = lambda: release(True)
            # a fair baseline for a release with a privacy unit: the engine's own
            # grouped query that also has to group the people (any exact contribution
            # bounding groups the rows by person at least once)
            fns["distinct"] = lambda: con.execute(
                f"SELECT g, count(DISTINCT person) FROM '{path}' GROUP BY g"
            ).fetchall()
            # the baseline that does the same work: the same bounding, in DuckDB's own SQL
            fns["bounded"] = lambda aggregate=aggregate: con.execute(
                bounding_sql(path, aggregate)
            ).fetchall()
        nan = float("nan")
        best = {
            "rows": nan,
            "person": nan,
            "distinct": nan,
            "bounded": nan,
            **interleaved(fns, repeats),
        }
        out.append(
            {
                "table": kind,
                "stat": name,
                "duckdb": best["duckdb"],
                "rows": best["rows"],
                "person": best["person"],
                "distinct": best["distinct"],
                "bounded": best["bounded"],
                "mem_rows": peak_bytes(lambda: release(False)) if "rows" in fns else 0,
                "mem_person": peak_bytes(lambda: release(True)) if "person" in fns else 0,
            }
        )
        r = out[-1]
        print(
            f"{kind:8} {name:6} duckdb {r['duckdb']:.2f} s  rows {r['rows'] / r['duckdb']:.2f}x"
            f"  person {r['person'] / r['duckdb']:.2f}x"
            f" ({r['person'] / r['distinct']:.2f}x distinct,"
            f" {r['person'] / r['bounded']:.2f}x bounding SQL)  peak {r['mem_rows'] / 2**20:.0f}/"
            f"{r['mem_person'] / 2**20:.0f} MB",
            flush=True,
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--table", choices=(*TABLES, "all"), default="all")
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--people", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stats", nargs="+", default=["median", "mean", "count"])
    parser.add_argument(
        "--modes", nargs="+", default=["rows", "person"], help="rows as units, per person"
    )
    parser.add_argument("--no-write", action="store_true", help="do not write tables.md")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    kinds = TABLES if args.table == "all" else (args.table,)
    results = [
        r
        for kind in kinds
        for r in bench(
            kind, args.rows, args.groups, args.people, args.repeats, args.stats, args.modes
        )
    ]
    lines = [
        "# Grouped releases from a Parquet file (same process)",
        "",
        f"{args.rows:,} rows, {args.groups} groups, {args.people:,} people; public keys, "
        f"epsilon 1; best of {args.repeats}, interleaved with DuckDB's own query (ratios "
        "only: the cores were shared). Generated by `benchmarks/bench_tables.py "
        f"--table {args.table} --rows {args.rows}`.",
        "",
        "Tables: `easy` (integers in [0, 100], each person mostly in one group), `hard` "
        "(gamma(2, 150) to two decimals, bounds [0, 1000], each person's ~20 rows spread "
        "over the groups), `hard-int` (the same divided by 10 and rounded: heavily tied).",
        "",
        "| table | statistic | DuckDB (s) | rows as units / DuckDB | person, 5 rows / DuckDB "
        "| person / DuckDB count(DISTINCT person) | person / DuckDB's SQL, same bounding "
        "| Python peak, rows / person (MB) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['table']} | {r['stat']} | {r['duckdb']:.2f} | {r['rows'] / r['duckdb']:.2f} "
            f"| {r['person'] / r['duckdb']:.2f} | {r['person'] / r['distinct']:.2f} "
            f"| {r['person'] / r['bounded']:.2f} "
            f"| {r['mem_rows'] / 2**20:.1f} / "
            f"{r['mem_person'] / 2**20:.1f} |"
        )
    lines += [
        "",
        "DuckDB's queries: `median(v)`, `avg(greatest(least(v, hi), 0))`, `count(*)` "
        "`GROUP BY g`; the same bounding in DuckDB's SQL: each person's group chosen by a "
        "hash, 5 of their rows there by a hash (`bench_tables.bounding_sql`), then the "
        f"aggregate `GROUP BY g`. The value column alone takes {args.rows * 8 / 2**20:.0f} MB as a "
        "numpy array.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "tables.md").write_text(text)


if __name__ == "__main__":
    main()
