"""The first pass's buckets (``pass_cells``) bracket a held group's windows instead of a
value-hash sample: the windows equal the array's, whether the buckets are narrow (they
bracket exactly), wide (one bucket holds the group: the sample is taken after all) or
cut across by clipping bounds; and a release with buckets equals the histogram path's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.tables.engines.duckdb import groups as duck_groups
from dpsense.tables.engines.duckdb import held_scan
from dpsense.tables.engines.duckdb.groups import DuckGroups, RawRows
from dpsense.tables.engines.duckdb.pass_cells import (
    bucket_bracket,
    bucket_ceiling,
    bucket_sql,
    read_cells,
)
from tests.tables.windows_check import assert_windows_equal_the_arrays

pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")


class _Need:
    def __init__(self, lower: float, upper: float) -> None:
        self.column, self.lower, self.upper = "v", lower, upper


def _data() -> np.ndarray:
    rng = np.random.default_rng(5)
    x = np.concatenate([np.round(rng.normal(0.3, 1.0, 30000), 2), np.full(3000, 0.5)])
    return np.asarray(np.clip(x, -3.0, 3.0), dtype=np.float64)


def _groups(x: np.ndarray, lower: float, upper: float) -> DuckGroups:
    """One held group of values ``x`` bracketed by the buckets of bounds [lower, upper]
    (the values themselves unclipped: the windows are of the raw values)."""
    con = duckdb.connect()
    con.register("xs", pd.DataFrame({"gid": np.zeros(x.shape[0], dtype=np.int64), "v": x}))
    con.execute("CREATE TABLE t AS SELECT * FROM xs")
    con.execute("CREATE TABLE dpsense_keys AS SELECT 0::BIGINT AS gid, 0::BIGINT AS g0")
    b = bucket_sql("v", lower, upper)
    con.execute(
        f"CREATE TEMP TABLE dpsense_cells AS SELECT 0::BIGINT AS g0, {b} AS b, "
        "count(v)::BIGINT AS c_v, min(v) AS lo, max(v) AS m_v FROM t GROUP BY ALL"
    )
    _, buckets = read_cells(con, _Need(lower, upper), "v", ["g0"])
    raw = RawRows("SELECT gid, v AS x FROM t", ("gid",), None, None, None)
    return DuckGroups(con, "SELECT gid, v FROM t", {0: int(x.shape[0])}, {}, raw, (), None, buckets)


LEVELS = [(1, 2, 5), (9, 10, 30), (1, 100, 3), (1, 2, 1600), (1, 2, 20000)]


@pytest.mark.parametrize("bounds", [(-3.0, 3.0), (-1.0, 1.0), (-3.0, 1e6), (0.5, 0.6)])
@pytest.mark.parametrize("whole", [True, False])
def test_bucket_brackets_give_the_arrays_windows(
    bounds: tuple[float, float], whole: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not whole:  # a long tie at the median is cut by the slice: fallbacks
        monkeypatch.setattr(duck_groups, "_WHOLE_ROWS", -1)
    monkeypatch.setattr(duck_groups, "_WIDE_ROWS", 0)  # a bucket of an eighth is wide
    x = _data()
    groups = _groups(x, *bounds)
    assert_windows_equal_the_arrays(groups.group(0), x, LEVELS)
    assert groups.fallbacks == 0 or not whole
    if bounds == (-3.0, 1e6):  # every row in the first bucket: the sample brackets
        assert 0 in groups.samples


def test_a_bucket_bracket_holds_its_ranks() -> None:
    x = np.sort(_data())
    groups = _groups(x, -3.0, 3.0)
    for first, last in [(0, 10), (100, 200), (16000, 17000), (32990, 32999), (-5, 40000)]:
        a, b, inside = bucket_bracket(groups.buckets[0], first, last, lambda v: v)
        assert a < x[max(first, 0)] or a == -np.inf
        assert x[min(last, x.size - 1)] < b or b == np.inf
        rows = np.count_nonzero((x >= a) & (x <= b))  # the neighbours' runs besides
        assert inside <= rows <= inside + np.count_nonzero((x == a) | (x == b))


@pytest.mark.parametrize(
    "stat",
    [
        ds.Median(0.0, 100.0),
        ds.Quantile(0.9, 10.0, 40.0),
        ds.Median(0.0, 1e9),  # every row in the first bucket: the samples bracket
    ],
)
def test_a_release_with_buckets_equals_the_histogram_path(
    stat: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(2)
    table = pd.DataFrame(
        {"g": rng.integers(0, 3, 9000), "v": np.round(rng.gamma(2.0, 15.0, 9000), 2)}
    )
    made: list[DuckGroups] = []
    original = DuckGroups.__init__

    def spy(self: DuckGroups, *args: Any) -> None:
        original(self, *args)
        made.append(self)

    monkeypatch.setattr(DuckGroups, "__init__", spy)
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 100)
    wide = stat.upper == 1e9
    if wide:  # a bucket of an eighth of a group is wide
        monkeypatch.setattr(duck_groups, "_WIDE_ROWS", 0)
    kwargs: dict[str, Any] = {"column": "v", "epsilon": 1.0, "by": "g", "keys": [0, 1, 2, 5]}
    got = [ds.release(table, stat, rng=s, **kwargs) for s in range(4)]
    assert made
    assert all(m.buckets and bool(m.samples) == wide for m in made)
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 10**12)
    want = [ds.release(table, stat, rng=s, **kwargs) for s in range(4)]
    for a, b in zip(got, want, strict=True):
        assert [(k, r.value, r.interval()) for k, r in a] == [
            (k, r.value, r.interval()) for k, r in b
        ]


@pytest.mark.parametrize("top", [-5.0, -0.7, 0.5, 1.3, 2.999, 3.0, 4.0, np.inf])
def test_the_ceiling_counts_the_rows_above_it_exactly(top: float) -> None:
    x = _data()
    other = np.round(np.random.default_rng(8).uniform(-1.0, 2.0, 5000), 3)
    buckets = [_groups(x, -1.0, 1.0).buckets[0], _groups(other, -1.0, 1.0).buckets[0]]
    cut = bucket_ceiling(buckets, top)
    if top > 3.0:  # no bucket reaches it
        assert cut is None
        return
    assert cut is not None
    ceiling, above = cut
    assert ceiling >= top
    assert above == [np.count_nonzero(x > ceiling), np.count_nonzero(other > ceiling)]
