"""Input costs: a CSV column against DuckDB's own reader, lists against arrays, import time.

* A CSV file of ``--rows`` rows (an id and a value column) is written once; ``load_column``
  (what ``dpsense release data.csv --column value`` uses) is timed against DuckDB reading
  the same column to numpy in the same process (best of R).
* ``ds.release`` on a Python list against the same values as a numpy array.
* ``python -c "import dpsense"`` against ``python -c "import numpy"`` (median of runs,
  fresh processes).

Results: ``benchmarks/results/io.md``.

Run: ``.venv/bin/python benchmarks/bench_io.py [--rows 10000000]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np

import dpsense as ds
from dpsense.data import load_column

RESULTS = Path(__file__).resolve().parent / "results"


def best_of(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def import_time(module: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
    lines = ["# Input costs (`benchmarks/bench_io.py`)", ""]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.csv"
        values = np.random.default_rng(1).normal(50.0, 10.0, args.rows)
        con = duckdb.connect()
        con.register("frame", {"id": np.arange(args.rows), "value": values})
        con.execute(f"COPY (SELECT * FROM frame) TO '{path}' (HEADER, DELIMITER ',')")
        ours = best_of(lambda: load_column(path, "value"), args.repeats)
        theirs = best_of(
            lambda: con.execute("SELECT value FROM read_csv(?)", [str(path)]).fetchnumpy(),
            args.repeats,
        )
        con.close()
    lines += [
        f"CSV column of {args.rows:,} rows: load_column {ours:.3f} s, DuckDB read_csv to "
        f"numpy {theirs:.3f} s: ratio {ours / theirs:.2f} (target <= 2).",
        "",
    ]
    n = 1_000_000
    x = np.random.default_rng(2).normal(50.0, 10.0, n)
    as_list = x.tolist()
    stat = ds.Median(0.0, 100.0)
    rng = ds.noise.rng.SeededRandom(3)
    t_list = best_of(lambda: ds.release(as_list, stat, epsilon=1.0, rng=rng), args.repeats)
    t_array = best_of(lambda: ds.release(x, stat, epsilon=1.0, rng=rng), args.repeats)
    lines += [
        f"ds.release on {n:,} values: list {t_list:.3f} s, numpy array {t_array:.3f} s "
        f"(ratio {t_list / t_array:.1f}; the list is converted once, in C).",
        "",
    ]
    t_numpy = import_time("numpy", 7)
    t_dpsense = import_time("dpsense", 7)
    lines += [
        f"`python -c 'import dpsense'` {t_dpsense:.3f} s, `import numpy` {t_numpy:.3f} s: "
        f"difference {t_dpsense - t_numpy:.3f} s (target <= 0.35; median of 7 fresh processes).",
    ]
    print("\n".join(lines))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "io.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
