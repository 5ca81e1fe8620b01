"""SQL ``COUNT(col)`` counts the rows whose ``col`` holds a value (issue 32, item 5).

It used to count every row. Now a row counts when ``col`` is not missing (null, or NaN in
a float column), a missing value in ``col`` is never an error (``nulls="error"`` is about
the columns a statistic reads values from), and the other statistics keep their rows. The
checks: at an epsilon so large that the noise rounds to nothing, the released counts are
the exact counts of rows with a value; for a seed, ``COUNT(col)`` alone is exactly
``COUNT(*) ... WHERE col IS NOT NULL``; the Python form ``("col", ds.Count())`` is the
same statistic. ``tests/spark/test_spark_count_col.py`` checks Spark against DuckDB.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.noise.rng import SeededRandom

pd = pytest.importorskip("pandas")

N = 600
BIG = 400.0  # a discrete Laplace count at this epsilon is exact but with probability e^-100


def table() -> Any:
    """Groups a/b/c, a float column with nulls and NaNs, a text column with nulls."""
    rng = np.random.default_rng(32)
    x = rng.uniform(0.0, 10.0, N)
    x[rng.random(N) < 0.3] = np.nan
    s = np.array(["t" if r > 0.4 else None for r in rng.random(N)], dtype=object)
    return pd.DataFrame(
        {
            "id": np.arange(N) // 3,
            # a person's three rows are in one group: bounding keeps them all
            "g": np.array(["a", "b", "c"])[np.repeat(rng.integers(0, 3, N // 3), 3)],
            "x": x,
            "s": s,
        }
    )


def exact(frame: Any) -> dict[str, dict[str, int]]:
    """Per group: rows, rows with x, rows with s."""
    out = {}
    for g, part in frame.groupby("g"):
        out[str(g)] = {
            "n": len(part),
            "c": int(part["x"].notna().sum()),
            "cs": int(part["s"].notna().sum()),
        }
    return out


def _sql(query: str, frame: Any, **kwargs: Any) -> ds.QueryResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded
        return ds.sql(query, tables={"t": frame}, **kwargs)


def _exact_sql(query: str, frame: Any, **kwargs: Any) -> ds.QueryResult:
    """The query grouped by the three keys of g at epsilon BIG (its counts exact)."""
    return _sql(query, frame, epsilon=BIG, keys={"g": ["a", "b", "c"]}, **kwargs)


@pytest.mark.parametrize("unit", [None, "id"])
@pytest.mark.parametrize("nulls", ["error", "drop"])
def test_count_col_counts_the_rows_with_a_value(unit: str | None, nulls: str) -> None:
    frame = table()
    got = _exact_sql(
        "SELECT g, COUNT(*) AS n, COUNT(x) AS c, COUNT(s) AS cs FROM t GROUP BY g",
        frame,
        privacy_unit=unit,
        max_rows_per_unit=3 if unit else 1,
        nulls=nulls,
        rng=1,
    )
    want = exact(frame)
    for row in got.to_dicts():
        assert {k: row[k] for k in ("n", "c", "cs")} == want[row["g"]], row["g"]


def test_count_col_alone_is_count_star_where_col_is_not_null() -> None:
    frame = table()
    for unit in (None, "id"):
        kwargs: dict[str, Any] = {
            "epsilon": 1.0,
            "keys": {"g": ["a", "b", "c"]},
            "privacy_unit": unit,
            "rng": 5,
        }
        counted = _sql("SELECT g, COUNT(x) AS c FROM t GROUP BY g", frame, **kwargs)
        filtered = _sql(
            "SELECT g, COUNT(*) AS c FROM t WHERE x IS NOT NULL GROUP BY g", frame, **kwargs
        )
        assert counted.to_dicts() == filtered.to_dicts()


def test_count_col_with_other_statistics_keeps_their_rows() -> None:
    """With nulls="drop", the rows without x are dropped for AVG(x) and COUNT(x) only
    because AVG reads x; COUNT(s) alone drops nothing for COUNT(*)."""
    frame = table()
    got = _exact_sql(
        "SELECT g, COUNT(*) AS n, COUNT(s) AS cs, AVG(x) AS m FROM t GROUP BY g",
        frame,
        bounds={"x": (0, 10)},
        nulls="drop",
        rng=2,
    )
    kept = frame[frame["x"].notna()]
    want = exact(kept)
    for row in got.to_dicts():
        assert row["n"] == want[row["g"]]["n"]
        assert row["cs"] == want[row["g"]]["cs"]


def test_the_python_pair_is_count_col_and_a_bare_count_counts_rows() -> None:
    frame = table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ds.release(
            frame,
            {"n": ds.Count(), "c": ("x", ds.Count()), "cs": ("s", ds.Count())},
            by="g",
            keys=["a", "b", "c"],
            epsilon=BIG,
            column="x",  # a bare Count() still counts every row
            rng=SeededRandom(3),
        )
    assert isinstance(got, ds.QueryResult)
    want = exact(frame)
    for row in got.to_dicts():
        assert {k: row[k] for k in ("n", "c", "cs")} == want[row["g"]]


def test_count_col_under_nulls_error_never_raises_on_a_missing_value() -> None:
    frame = table()
    assert frame["x"].isna().any()
    out = _sql("SELECT COUNT(x) AS c FROM t", frame, epsilon=BIG, rng=4)
    assert out.to_dicts()[0]["c"] == int(frame["x"].notna().sum())
    # AVG(x) reads x: a missing value is the data owner's precondition, as before
    with pytest.raises(ds.InputError, match="missing"):
        _sql("SELECT AVG(x) AS m FROM t", frame, epsilon=1.0, bounds={"x": (0, 10)}, rng=4)


def test_count_of_a_column_the_table_lacks_is_refused_before_the_charge() -> None:
    acct = ds.Accountant(epsilon=5.0)
    with pytest.raises(ds.InputError, match="'nope'"):
        ds.sql(
            "SELECT COUNT(nope) AS c, COUNT(*) AS n FROM t",
            tables={"t": table()},
            epsilon=1.0,
            accountant=acct,
        )
    assert acct.spent == (0.0, 0.0)
