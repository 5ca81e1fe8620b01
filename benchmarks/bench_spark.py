"""Grouped releases on a PySpark DataFrame against Spark's own grouped aggregates, one session.

The table is one of ``benchmarks/bench_tables.py``'s (``--table easy|hard|hard-int``, the
same generator and cached Parquet file, at ``--rows`` rows), read by Spark (``--cache``:
cached in memory first, so that no timing includes the Parquet scan). Timed, interleaved
and best of ``--repeats`` (other processes may share the cores: only the ratios mean
something), in one ``local[2]`` session:

* Spark: ``groupBy("g").agg(median("v"))`` collected, ``percentile_approx(v, 0.5)``,
  ``avg(clip(v))`` and ``count(*)``;
* dpsense: ``ds.release(df, statistic, column="v", by="g", keys=..., epsilon=1)`` for the
  median, the mean and the count, every row a unit and with ``privacy_unit="person",
  max_rows_per_unit=5`` (one group per person, the default).

Also the peak of driver-side Python allocations (``tracemalloc``) of each release, and,
with ``--profile``, the time of each Spark job of one release (the Spark UI is off).

Results: ``benchmarks/results/spark.md`` (``--write``). Needs ``pip install
'dpsense[spark]'`` and Java.

Run: ``.venv/bin/python benchmarks/bench_spark.py --table hard --rows 10000000 --write``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import dpsense as ds
from bench_tables import TABLES, interleaved, peak_bytes, table_path

RESULTS = Path(__file__).resolve().parent / "results"


def session() -> Any:
    # contribution bounding may hash Arrow batches with DuckDB in the executors' Python
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dpsense-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", "4g")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def bench(spark: Any, kind: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    from pyspark.sql import functions as sf

    path = table_path(kind, args.rows, args.groups, args.people)
    df = spark.read.parquet(str(path))
    if args.cache:
        df = df.cache()
        df.count()
    hi = 100.0 if kind == "easy" else 1000.0
    resolution = {"resolution": 1.0} if kind != "hard" else {}
    clipped = sf.greatest(sf.least(sf.col("v"), sf.lit(hi)), sf.lit(0.0))
    stats = {
        "median": (ds.Median(0.0, hi, **resolution), sf.median("v")),
        "mean": (ds.Mean(0.0, hi), sf.avg(clipped)),
        "count": (ds.Count(), sf.count(sf.lit(1))),
    }
    keys = list(range(args.groups))
    out = []
    for name in args.stats:
        statistic, aggregate = stats[name]

        def own(aggregate: Any = aggregate) -> object:
            return df.groupBy("g").agg(aggregate).collect()

        def approx() -> object:
            return df.groupBy("g").agg(sf.percentile_approx("v", 0.5)).collect()

        def release(unit: bool, statistic: Any = statistic) -> object:
            extra: dict[str, Any] = {"privacy_unit": "person", "max_rows_per_unit": 5}
            return ds.release(
                df,
                statistic,
                column=None if isinstance(statistic, ds.Count) else "v",
                by="g",
                keys=keys,
                epsilon=1.0,
                rng=1,
                **(extra if unit else {}),
            )

        def window() -> object:
            # the least a privacy unit needs: every row grouped by person (top 5 rows)
            from pyspark.sql import Window

            ranked = df.withColumn(
                "r", sf.row_number().over(Window.partitionBy("person").orderBy("g", "v"))
            )
            return ranked.where(sf.col("r") <= 5).groupBy("g").count().collect()

        own()  # warm up
        fns = {"spark": own, "rows": lambda: release(False), "person": lambda: release(True)}
        if name == "median":
            fns["approx"] = approx
            fns["window"] = window
        skipped = {"rows", "person"} - set(args.modes)
        if "person" in skipped:
            fns.pop("window", None)
        for mode in skipped:
            del fns[mode]
        best = interleaved(fns, args.repeats)
        print(kind, name, {k: round(v, 2) for k, v in best.items()}, flush=True)
        nan = float("nan")
        row = {"table": kind, "stat": name, **{m: nan for m in skipped}, **best}
        if name == "median":
            row.setdefault("window", nan)
        for mode in ("rows", "person"):
            row[f"mem_{mode}"] = (
                peak_bytes(lambda unit=mode == "person": release(unit))
                if mode in args.modes
                else float("nan")
            )
        out.append(row)
        extra = (
            f"  rows / percentile_approx {row['rows'] / row['approx']:.2f}x"
            if "approx" in row
            else ""
        )
        print(
            f"{kind:8} {name:6} spark {row['spark']:.2f} s  rows {row['rows'] / row['spark']:.2f}x"
            f"  person {row['person'] / row['spark']:.2f}x  peak {row['mem_rows'] / 2**20:.0f}/"
            f"{row['mem_person'] / 2**20:.0f} MB{extra}",
            flush=True,
        )
        if args.profile:
            for unit in [m == "person" for m in args.modes]:
                print(f"  jobs of the {name} release, privacy unit {unit}:")
                for line in profile(df, lambda unit=unit: release(unit)):
                    print("   ", line)
    if args.cache:
        df.unpersist()
    return out


def profile(df: Any, fn: Any) -> list[str]:
    """Each action one call of ``fn`` runs (``collect``, ``toLocalIterator``, ``count``) on
    a DataFrame of ``df``'s class: its caller and wall time (the Spark UI is off)."""
    import traceback

    cls = type(df)
    lines: list[str] = []
    saved = {name: getattr(cls, name) for name in ("collect", "toLocalIterator", "count")}

    def timed(name: str, method: Any) -> Any:
        def run(self: Any, *a: Any, **k: Any) -> Any:
            frame = traceback.extract_stack(limit=2)[0]
            start = time.perf_counter()
            got = method(self, *a, **k)
            if name == "toLocalIterator":
                got = list(got)
            where = f"{Path(frame.filename).name}:{frame.lineno}"
            lines.append(f"{name:15} {where:24} {time.perf_counter() - start:6.2f} s")
            return got

        return run

    for name, method in saved.items():
        setattr(cls, name, timed(name, method))
    start = time.perf_counter()
    try:
        fn()
    finally:
        for name, method in saved.items():
            setattr(cls, name, method)
    lines.append(f"total {time.perf_counter() - start:.2f} s")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--table", choices=(*TABLES, "all"), default="hard")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--people", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stats", nargs="+", default=["median", "mean", "count"])
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=("rows", "person"),
        default=["rows", "person"],
        help="the releases timed: every row a unit, and/or privacy_unit='person'",
    )
    parser.add_argument("--cache", action="store_true", help="cache the table in Spark")
    parser.add_argument("--profile", action="store_true", help="time each Spark job")
    parser.add_argument("--write", action="store_true", help="write results/spark.md")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    spark = session()
    kinds = TABLES if args.table == "all" else (args.table,)
    results = [r for kind in kinds for r in bench(spark, kind, args)]
    spark.stop()
    command = (
        f"benchmarks/bench_spark.py --table {args.table} --rows {args.rows}"
        f"{' --cache' if args.cache else ''} --write"
    )
    lines = [
        "# Grouped releases on a Spark DataFrame (same session, local[2])",
        "",
        f"{args.rows:,} rows of `benchmarks/bench_tables.py`'s tables (the same Parquet "
        f"files{', cached in Spark' if args.cache else ', read by Spark each time'}), "
        f"{args.groups} groups, {args.people:,} people; public keys, epsilon 1; best of "
        f"{args.repeats}, interleaved with Spark's own query (ratios only: the cores were "
        f"shared). Generated by `{command}`.",
        "",
        "| table | statistic | Spark (s) | rows as units / Spark | person, 5 rows / Spark "
        "| Python peak, rows / person (MB) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['table']} | {r['stat']} | {r['spark']:.2f} | {r['rows'] / r['spark']:.2f} "
            f"| {r['person'] / r['spark']:.2f} | {r['mem_rows'] / 2**20:.1f} / "
            f"{r['mem_person'] / 2**20:.1f} |"
        )
    approx = [r for r in results if "approx" in r]
    lines += [
        "",
        "Spark's own per-person window (`row_number()` partitioned by person, 5 rows kept, "
        "then `groupBy(g).count()`), the least a privacy unit needs: "
        + " ".join(
            f"{r['table']}: {r['window']:.2f} s; privacy-unit median / (median + window) = "
            f"{r['person'] / (r['spark'] + r['window']):.2f}."
            for r in approx
        ),
    ]
    lines += [
        "",
        "Spark's queries: `median(v)`, `avg(greatest(least(v, hi), 0))`, `count(1)` "
        "`groupBy(g)`, collected. "
        + " ".join(
            f"`percentile_approx(v, 0.5)` on {r['table']}: {r['approx'] / r['spark']:.2f}x "
            "the median."
            for r in approx
        ),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "spark.md").write_text(text)


if __name__ == "__main__":
    main()
