"""A join released by ``ds.sql`` against DuckDB's own SQL doing the same join and bounding.

A fact table of ``--rows`` visits (1e7 by default) by 1e6 people, a people table (the unit
table) and a public table of regions; the query joins the three and releases the visits
and their total amount per region (public groups, from the regions table), each person
keeping one region and five visits in it. The baseline is one DuckDB SQL statement on the
same frames: the same join, each person's region chosen by a hash of the person and the
region, five rows kept per person by a hash of the person and the amount, clipped and
aggregated. Both read the same pandas frames in one process; the best of ``--repeats``
runs of each, interleaved. The goal: dpsense within 1.3x.

``--spread``: the harder case, people spread over many groups: grouped by the visit's site
(200 public sites, a private column), each person keeping up to 8 sites and 5 visits in
each.

``--spark``: the same query on Spark DataFrames (cached, one ``local[2]`` session of
``bench_spark.py``) against one Spark SQL statement doing the same join and bounding
(``min_by`` for the group, ``row_number()`` over the person's rows of the group for the 5
rows, Spark's ``hash``), at a size that runs in minutes on 2 cores
(``--rows 2000000 --people 200000``).

Run: ``.venv/bin/python benchmarks/bench_joins.py [--rows 10000000] [--repeats 3] [--spread]
[--spark --rows 2000000 --people 200000]``
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from typing import Any

import duckdb
import numpy as np
import pandas as pd

import dpsense as ds
from bench_sql import best  # interleaved best-of timing, shared with bench_sql

JOINS = (
    "FROM visits v JOIN people p ON v.person_id = p.person_id "
    "JOIN regions r ON p.region_code = r.region_code"
)
QUERY = f"SELECT r.region, COUNT(*) AS visits, SUM(v.amount) AS total {JOINS} GROUP BY r.region"
SPREAD_QUERY = f"SELECT v.site, COUNT(*) AS visits, SUM(v.amount) AS total {JOINS} GROUP BY v.site"


def baseline(group: str, pick: str) -> str:
    """One DuckDB statement doing the release's join and contribution bounding by hand:
    the groups each person keeps (``pick``), then 5 rows per person and group, clipped."""
    return f"""
WITH j AS (SELECT p.person_id AS u, {group} AS g, v.amount AS a {JOINS}),
pick AS ({pick}),
kept AS (
    SELECT j.* FROM j SEMI JOIN pick USING (u, g)
    QUALIFY row_number() OVER (PARTITION BY u, g ORDER BY hash(9, u, a)) <= 5
)
SELECT g, count(*) AS visits, sum(least(greatest(a, 0.0), 100.0)) AS total
FROM kept GROUP BY g ORDER BY g
"""


# one group per person (its region), or up to 8 of the sites each person visits; like the
# release's, each choice is by a hash of the person and the group (or the row's value)
BASELINE = baseline("r.region", "SELECT u, arg_min(g, hash(7, u, g)) AS g FROM j GROUP BY u")
SPREAD_BASELINE = baseline(
    "v.site",
    "SELECT u, unnest(min_by(g, hash(7, u, g), 8)) AS g "
    "FROM (SELECT DISTINCT u, g FROM j) GROUP BY u",
)


def spark_baseline(group: str, pick: str) -> str:
    """The Spark SQL counterpart of :func:`baseline` (no QUALIFY: a filtered window)."""
    return f"""
WITH j AS (SELECT p.person_id AS u, {group} AS g, v.amount AS a {JOINS}),
pick AS ({pick}),
ranked AS (
    SELECT j.*, row_number() OVER (PARTITION BY j.u, j.g ORDER BY hash(9, j.u, j.a)) AS r
    FROM j LEFT SEMI JOIN pick ON j.u = pick.u AND j.g = pick.g
)
SELECT g, count(*) AS visits, sum(least(greatest(a, 0.0), 100.0)) AS total
FROM ranked WHERE r <= 5 GROUP BY g ORDER BY g
"""


SPARK_BASELINE = spark_baseline(
    "r.region", "SELECT u, min_by(g, hash(7, u, g)) AS g FROM j GROUP BY u"
)
SPARK_SPREAD_BASELINE = spark_baseline(
    "v.site",
    "SELECT u, g FROM (SELECT u, g, row_number() OVER (PARTITION BY u ORDER BY hash(7, u, g)) "
    "AS r FROM (SELECT DISTINCT u, g FROM j)) WHERE r <= 8",
)


def tables(rows: int, seed: int = 0, people: int = 1_000_000) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    regions = pd.DataFrame(
        {"region_code": np.arange(50), "region": [f"region {i % 10}" for i in range(50)]}
    )
    return {
        "visits": pd.DataFrame(
            {
                "person_id": rng.integers(0, people, rows),
                "site": rng.integers(0, 200, rows),
                "amount": rng.gamma(2.0, 15.0, rows),  # continuous: few ties
            }
        ),
        "people": pd.DataFrame(
            {"person_id": np.arange(people), "region_code": rng.integers(0, 50, people)}
        ),
        "regions": regions,
    }


def runners(
    rows: int, spread: bool = False, people: int = 1_000_000, spark: bool = False
) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """The release (``ds.sql``) and its baseline (DuckDB's own SQL, or with ``spark`` Spark
    SQL on cached frames) doing the same join and bounding on ``tables(rows)``, as two calls
    (``benchmarks/guard.py`` times them too)."""
    query, baseline = (SPREAD_QUERY, SPREAD_BASELINE) if spread else (QUERY, BASELINE)
    unit = {"max_rows_per_unit": 5, "max_groups_per_unit": 8 if spread else 1}
    keys = {"keys": {"site": list(range(200))}} if spread else {}
    data: dict[str, Any] = tables(rows, people=people)
    session_: Any = None
    if spark:
        warnings.simplefilter("ignore")
        from bench_spark import session

        session_ = session()
        data = {name: session_.createDataFrame(frame).cache() for name, frame in data.items()}
        for name, frame in data.items():
            frame.count()
            frame.createOrReplaceTempView(name)
        baseline = SPARK_SPREAD_BASELINE if spread else SPARK_BASELINE

    def via_dpsense() -> Any:
        return ds.sql(
            query,
            tables=data,
            privacy_unit="person_id",
            public_tables=["regions"],
            **unit,
            **keys,
            bounds={"amount": (0.0, 100.0)},
            epsilon=1.0,
            rng=1,
        ).to_dicts()

    def via_baseline() -> Any:
        if session_ is not None:
            return [tuple(r) for r in session_.sql(baseline).collect()]
        con = duckdb.connect()
        for name, frame in data.items():
            con.register(name, frame)
        out = con.execute(baseline).fetchall()
        con.close()
        return out

    return via_dpsense, via_baseline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--people", type=int, default=1_000_000)
    parser.add_argument("--spread", action="store_true", help="group by 200 sites, g = 8")
    parser.add_argument("--spark", action="store_true", help="on Spark, against Spark SQL")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ds.SeededRandomnessWarning)
    via_dpsense, via_duckdb = runners(args.rows, args.spread, args.people, args.spark)
    released = via_dpsense()
    exact = via_duckdb()
    label = "site" if args.spread else "region"
    assert [r[label] for r in released] == [r[0] for r in exact]
    times = best({"dpsense": via_dpsense, "duckdb": via_duckdb}, args.repeats)
    own = "Spark SQL" if args.spark else "DuckDB SQL"
    print(
        f"rows {args.rows:,}, people {args.people:,}: dpsense {times['dpsense']:.2f} s, "
        f"{own} {times['duckdb']:.2f} s"
    )
    print(f"ratio dpsense / {own}: {times['dpsense'] / times['duckdb']:.2f} (goal <= 1.3)")
    for row, want in list(zip(released, exact, strict=True))[:5]:
        print(f"  {row[label]}: visits {row['visits']:.0f} (exact {want[1]}), "
              f"total {row['total']:.0f} (exact {want[2]:.0f})")  # fmt: skip


if __name__ == "__main__":
    main()
