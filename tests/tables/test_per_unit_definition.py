"""Per-unit aggregation against its definition, by brute force on small random tables
(docs/queries.md §7).

A table of rows (person, year, amount, flag): some people have several rows per year,
some none. The per-person table a query's subquery builds must hold exactly the rows of
the definition (pandas: the filtered rows grouped by person and year; one row per person
per year, never more); and after the release's one bounding of that table (the arguments
the per-person step hands the release: its unit, one row per unit, g groups, clipped to
the bounds), removing one person must change each year's clipped sum by at most the clip
width, its row count by at most one, in at most g years.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from dpsense.query.per_unit import PER_UNIT_ROWS, resolve_per_unit
from dpsense.query.plan import ReleaseArgs
from dpsense.query.sql import parse_sql
from dpsense.query.sql_per_unit import per_unit_handle
from dpsense.tables.engines.duckdb.bound import TablePlan, bound_table
from dpsense.tables.engines.duckdb.joined import open_joined

pd = pytest.importorskip("pandas")

SALT = (515151, 272727)
LOWER, UPPER = -5.0, 40.0
YEARS = [2020, 2021, 2022]
GROUPED = (
    "SELECT year, SUM(total) AS s FROM (SELECT person, year, SUM(amount) AS total, "
    "COUNT(*) AS n, MAX(amount) AS top FROM orders WHERE flag <> 2 GROUP BY person, year) "
    "GROUP BY year"
)
PER_PERSON = (
    "WITH per AS (SELECT person, SUM(amount) AS total, AVG(amount) AS mean, MIN(amount) AS "
    "low, COUNT(amount) AS n FROM orders WHERE flag <> 2 GROUP BY person) "
    "SELECT SUM(total) AS s FROM per"
)


def table(seed: int) -> Any:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 70))
    return pd.DataFrame(
        {
            "person": rng.integers(0, 12, n),
            "year": rng.choice(YEARS, n),
            "amount": rng.normal(6, 9, n).round(2),
            "flag": rng.integers(0, 4, n),
        }
    )


def derived(frame: Any, query: str, g: int = 1) -> tuple[Any, ReleaseArgs]:
    """The per-person table of ``query`` over ``frame`` and the release's arguments."""
    spec = parse_sql(query)
    handle = per_unit_handle(spec, frame, "person")
    by = "year" if "year" in handle.by else None
    return resolve_per_unit(handle, ReleaseArgs(by=by, max_groups_per_unit=g))


def rows_of(data: Any) -> list[tuple[Any, ...]]:
    with open_joined(data) as source:
        return [tuple(r) for r in source.con.execute("SELECT * FROM src").fetchall()]


@pytest.mark.parametrize("seed", range(5))
def test_the_per_person_rows_are_the_definitions(seed: int) -> None:
    frame = table(seed)
    data, args = derived(frame, GROUPED)
    assert args.privacy_unit == "person"
    assert args.max_rows_per_unit == PER_UNIT_ROWS == 1
    got = rows_of(data)
    kept = frame[frame["flag"] != 2]
    want = kept.groupby(["person", "year"])["amount"].agg(["sum", "count", "max"]).reset_index()
    assert Counter((int(p), int(y)) for p, y, *_ in got) == Counter(
        (int(p), int(y)) for p, y in zip(want["person"], want["year"], strict=True)
    )  # one row per person per year, never more
    assert len({(p, y) for p, y, *_ in got}) == len(got)
    by_key = {(int(p), int(y)): v for p, y, *v in got}
    for p, y, s, c, m in want.itertuples(index=False):
        assert by_key[(int(p), int(y))] == pytest.approx([s, float(c), m])


@pytest.mark.parametrize("seed", range(3))
def test_the_per_person_values_of_a_cte_are_the_definitions(seed: int) -> None:
    frame = table(seed)
    data, args = derived(frame, PER_PERSON)
    kept = frame[frame["flag"] != 2]
    want = kept.groupby("person")["amount"].agg(["sum", "mean", "min", "count"])
    got = {int(p): v for p, *v in rows_of(data)}
    assert sorted(got) == sorted(int(p) for p in want.index)
    for p, row in want.iterrows():
        assert got[int(p)] == pytest.approx([row["sum"], row["mean"], row["min"], row["count"]])
    assert args.by is None


def bounded(frame: Any, g: int) -> tuple[list[float], list[int]]:
    """The release's one bounding of the per-person table: per year, the clipped sum of
    the kept per-person totals and their number."""
    data, args = derived(frame, GROUPED, g)
    plan = TablePlan(
        "total",
        ("year",),
        args.privacy_unit,
        args.max_rows_per_unit,
        args.max_groups_per_unit,
        "error",
        LOWER,
        UPPER,
        SALT,
    )
    keys = [(y,) for y in YEARS]
    with open_joined(data) as source:
        values = dict(bound_table(source, plan, keys).values(range(len(keys))))
    kept = [values.get(i, np.array([])) for i in range(len(keys))]
    return [float(np.sum(v)) for v in kept], [len(v) for v in kept]


@pytest.mark.parametrize(("seed", "g"), [(11, 1), (12, 2), (13, 1), (14, 3)])
def test_removing_a_person_moves_each_year_by_at_most_its_sensitivity(seed: int, g: int) -> None:
    frame = table(seed)
    full, counts = bounded(frame, g)
    width = max(abs(LOWER), abs(UPPER))
    moved_most = 0.0
    for person in range(12):
        near, near_counts = bounded(frame[frame["person"] != person], g)
        moves = [abs(a - b) for a, b in zip(full, near, strict=True)]
        assert all(d <= width + 1e-9 for d in moves)
        assert all(abs(a - b) <= 1 for a, b in zip(counts, near_counts, strict=True))
        assert sum(1 for a, b in zip(counts, near_counts, strict=True) if a != b) <= g
        moved_most = max(moved_most, *moves)
    assert moved_most > 0  # some person's removal is seen
