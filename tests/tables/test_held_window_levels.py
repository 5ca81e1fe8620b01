"""A query's quantiles over groups DuckDB holds: a level for which no group wants a window
is not an error.

The shared window pass fetches, for every quantile level a query announced, the windows of
the groups that still need one; when the cache of an earlier level already answers every
group of another level, that level wants no group. Before the fix the pass took
``min(floor, *starts)`` over an empty ``starts`` and raised ``TypeError`` (a traceback, and
an outcome that depended on the data's sizes and values).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpsense as ds
from dpsense.tables.engines.duckdb import held_scan

QUERY = {
    "n": ds.Count(),
    "median": ("v", ds.Median(0, 1000)),
    "mean": ("v", ds.Mean(0, 1000)),
    "p90": ("v", ds.Quantile(0.9, 0, 1000)),
}


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every group of more than 50 rows is held in DuckDB."""
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 50)
    monkeypatch.setattr(held_scan, "HOLD_DISTINCT", 0)


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"g": rng.integers(0, 3, n), "v": np.round(rng.gamma(2.0, 150.0, n), 2)})


@pytest.mark.usefixtures("held")
@pytest.mark.parametrize("n", [200, 1000, 5000])
def test_a_query_of_two_quantiles_on_held_groups_releases(n: int) -> None:
    """n = 5000 raised TypeError before the fix."""
    out = ds.release(_table(n, n), QUERY, by="g", keys=[0, 1, 2], epsilon=1.0, rng=1)
    frame = out.to_pandas()
    assert list(frame["g"]) == [0, 1, 2]
    for name in ("median", "p90"):
        assert frame[name].between(0, 1000).all()


@pytest.mark.usefixtures("held")
def test_the_same_request_releases_without_one_row() -> None:
    """Neighbouring tables (one row removed): both release, with the same charge."""
    table = _table(5000, 5000)
    releases = [
        ds.release(t, QUERY, by="g", keys=[0, 1, 2], epsilon=1.0, rng=1)
        for t in (table, table.iloc[1:])
    ]
    assert [r.epsilon for r in releases] == [1.0, 1.0]
    assert releases[0].columns() == releases[1].columns()
