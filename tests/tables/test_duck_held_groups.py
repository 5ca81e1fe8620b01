"""Large groups stay in DuckDB when every row is a unit: only a window of order statistics
around each target rank and exact sums reach Python, and the releases equal those of the
histogram path (every group's values in Python) with the same seed.

``HOLD_ROWS`` and ``HOLD_DISTINCT`` are lowered so that small test tables have "large"
groups; the counters of ``DuckGroups`` show what was asked.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.mechanisms._quantile_sampler import ArrayRecords, sample_quantile_indices
from dpsense.mechanisms.quantile import quantile_score
from dpsense.methods.ksw import QUANTA
from dpsense.noise.rng import SeededRandom
from dpsense.statistics._exact import RecordGrid
from dpsense.statistics._grid import PowerOfTwoGrid
from dpsense.tables.engines.duckdb import groups as duck_groups
from dpsense.tables.engines.duckdb import held_scan
from dpsense.tables.engines.duckdb.groups import DuckGroups, rint_sql
from tests.tables.windows_check import assert_windows_equal_the_arrays

pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")
N = 6000


@pytest.fixture(scope="module")
def table() -> Any:
    rng = np.random.default_rng(11)
    return pd.DataFrame(
        {
            "g": rng.integers(0, 3, N),
            "v": np.round(rng.gamma(2.0, 15.0, N), 2),  # a few ties among continuous values
        }
    )


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> list[DuckGroups]:
    """Every group of more than 100 rows is held; every DuckGroups made is listed."""
    made: list[DuckGroups] = []
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 100)
    monkeypatch.setattr(held_scan, "HOLD_DISTINCT", 0)
    original = DuckGroups.__init__

    def spy(self: DuckGroups, *args: Any) -> None:
        original(self, *args)
        made.append(self)

    monkeypatch.setattr(DuckGroups, "__init__", spy)
    return made


def _rows(result: Any) -> Any:
    if isinstance(result, ds.GroupedRelease):
        return [(key, np.asarray(rel.value).tolist(), rel.refused) for key, rel in result]
    return (np.asarray(result.value).tolist(), result.refused)


STATS = {
    "median": (ds.Median(0.0, 100.0), {}),
    "quantile": (ds.Quantile(0.9, 0.0, 100.0), {}),
    # the target rank inside the run of values clipped to a bound (about 25 and 58 here)
    "median-clipped-low": (ds.Median(30.0, 100.0), {}),
    "quantile-clipped-high": (ds.Quantile(0.9, 0.0, 50.0), {}),
    "sum": (ds.Sum(0.0, 80.0), {}),  # bounds that clip
    "mean-ksw": (ds.Mean(0.0, 100.0), {}),
    "mean-global": (ds.Mean(20.0, 70.0), {"method": "global"}),
}
GROUPINGS: dict[str, dict[str, Any]] = {
    "ungrouped": {},
    "public-keys": {"by": "g", "keys": [0, 1, 2, 7]},
}


@pytest.mark.parametrize("grouping", list(GROUPINGS))
@pytest.mark.parametrize("stat", list(STATS))
def test_held_groups_release_what_the_histogram_path_releases(
    table: Any, held: list[DuckGroups], monkeypatch: pytest.MonkeyPatch, stat: str, grouping: str
) -> None:
    statistic, extra = STATS[stat]
    kwargs = {"column": "v", "epsilon": 1.5, **extra, **GROUPINGS[grouping]}
    got = [_rows(ds.release(table, statistic, rng=seed, **kwargs)) for seed in range(6)]
    assert len(held) == 6
    assert all(len(h.sizes) >= 1 for h in held)
    if not isinstance(statistic, ds.Quantile):  # the sums came with the first pass
        assert all(h.queries == 0 for h in held)
    else:  # the brackets held every window, clipped runs at a bound included
        assert all(h.fallbacks == 0 for h in held)
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 10**12)  # the histogram path
    monkeypatch.setattr(held_scan, "HOLD_SUM_ROWS", 10**12)
    want = [_rows(ds.release(table, statistic, rng=seed, **kwargs)) for seed in range(6)]
    assert got == want
    assert len(held) == 6  # no group held the second time


def test_methods_that_read_every_record_still_match(
    table: Any, held: list[DuckGroups], monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = [
        (ds.Median(0.0, 100.0), {"method": "smooth"}),
        (ds.Quantiles([0.25, 0.5, 0.75], 0.0, 100.0), {}),
        (ds.Median(0.0, 100.0, resolution=0.5), {}),  # permute-and-flip reads them all
    ]
    kwargs: dict[str, Any] = {"column": "v", "epsilon": 1.0, "by": "g", "keys": [0, 1, 2]}
    got = [_rows(ds.release(table, s, rng=9, **kwargs, **extra)) for s, extra in cases]
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 10**12)
    monkeypatch.setattr(held_scan, "HOLD_SUM_ROWS", 10**12)
    want = [_rows(ds.release(table, s, rng=9, **kwargs, **extra)) for s, extra in cases]
    assert got == want


@pytest.mark.parametrize("batch", ["one batch", "a batch per group"])
def test_held_groups_read_whole_come_from_one_histogram_pass(
    table: Any, held: list[DuckGroups], monkeypatch: pytest.MonkeyPatch, batch: str
) -> None:
    """At a small epsilon the window reaches the ends of the data and the sampler reads
    every record of each held group: one pass builds every held group's histogram, which
    leaves DuckDB in batches of consecutive groups; the release is the histogram path's."""
    if batch != "one batch":
        monkeypatch.setattr(duck_groups, "BATCH_ROWS", 10)
    stats = [ds.Median(0.0, 100.0), ds.Quantile(0.9, 0.0, 100.0)]
    kwargs: dict[str, Any] = {"column": "v", "epsilon": 0.02, "by": "g", "keys": [0, 1, 2]}
    got = [_rows(ds.release(table, s, rng=seed, **kwargs)) for s in stats for seed in (1, 2)]
    assert len(held) == 4
    # the histogram pass, then one fetch per batch (three groups here); the intervals'
    # counts of every group came from the first pass
    assert [h.queries for h in held] == [2 if batch == "one batch" else 4] * 4
    monkeypatch.setattr(held_scan, "HOLD_ROWS", 10**12)
    want = [_rows(ds.release(table, s, rng=seed, **kwargs)) for s in stats for seed in (1, 2)]
    assert got == want


def test_the_hold_decision_does_not_depend_on_formats(
    table: Any, held: list[DuckGroups], tmp_path: Any
) -> None:
    path = tmp_path / "t.parquet"
    table.sample(frac=1.0, random_state=3).to_parquet(path)
    kwargs: dict[str, Any] = {"column": "v", "epsilon": 1.0, "by": "g", "keys": [0, 1, 2]}
    assert _rows(ds.release(path, ds.Median(0.0, 100.0), rng=4, **kwargs)) == _rows(
        ds.release(table, ds.Median(0.0, 100.0), rng=4, **kwargs)
    )
    assert len(held) == 2


def _one_group(x: np.ndarray, sample: np.ndarray | None = None) -> DuckGroups:
    """A DuckGroups over one group of values ``x`` (``sample``: the sampled values, by
    default the engine's value-hash sample)."""
    con = duckdb.connect()
    con.register("xs", pd.DataFrame({"gid": np.zeros(x.shape[0], dtype=np.int64), "v": x}))
    con.execute("CREATE TABLE t AS SELECT * FROM xs")
    if sample is None:
        got = con.execute(f"SELECT v FROM t WHERE {duck_groups.sample_test('v')}").fetchnumpy()
        sample = np.asarray(got["v"], dtype=np.float64)
    values, counts = np.unique(sample, return_counts=True)
    return DuckGroups(con, "SELECT gid, v FROM t", {0: int(x.shape[0])}, {0: (values, counts)})


def _data(tie: float = 0.5) -> np.ndarray:
    rng = np.random.default_rng(4)
    x = np.concatenate(
        [
            np.round(rng.normal(0.3, 1.0, 30000), 2),
            np.full(3000, tie),  # a tie longer than the slice's margin
            [-2.5, -1.5, 2.5, 0.5 + 2**-30, -(2**-1074), 3.0, -3.0, 1.5, -0.5],  # halves
        ]
    )
    return np.asarray(np.clip(x, -3.0, 3.0), dtype=np.float64)


@pytest.mark.parametrize(
    "sample",
    ["engine", "empty", "all", "biased-low", "biased-high", "one-value"],
)
@pytest.mark.parametrize("tie", [0.5, 0.3, 0.01])
@pytest.mark.parametrize("whole", [True, False])
def test_windows_equal_the_arrays_whatever_the_sample(
    sample: str, tie: float, whole: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sample only sets the bracket: a bad one (empty, everything, all far from the
    target, one value) gives the same windows, through the whole-bracket or fallback path;
    so does a run of ties at the target longer than the slice around it; brackets that
    leave DuckDB whole (``whole``) or sorted and sliced there."""
    if not whole:
        monkeypatch.setattr(duck_groups, "_WHOLE_ROWS", -1)
    x = _data(tie)
    samples = {
        "engine": None,
        "empty": np.zeros(0),
        "all": x,
        "biased-low": np.sort(x)[:200],
        "biased-high": np.sort(x)[-200:],
        "one-value": np.full(50, 0.5),
    }
    groups = _one_group(x, samples[sample])
    g = groups.group(0)
    levels = [(1, 2, 5), (9, 10, 30), (1, 100, 3), (1, 2, 1600), (1, 2, 20000)]
    assert_windows_equal_the_arrays(g, x, levels)


def test_counts_sums_and_values_equal_numpy() -> None:
    x = _data()
    g = _one_group(x).group(0)
    for v in (-3.0, -0.7, 0.5, 0.5 + 2**-30, 3.0, 9.0):
        assert g.count_below(v) == int(np.count_nonzero(x < v))
        assert g.count_above(v) == int(np.count_nonzero(x > v))
    assert np.array_equal(g.sorted_values(), np.sort(x))
    for lower, upper in [(-3.0, 3.0), (-1.0, 2.0), (-0.1, 0.1), (-3.0, 1e-3)]:
        grid = RecordGrid.for_bounds(lower, upper)
        xc = np.clip(x, lower, upper)
        assert g.grid_sum(grid) == int(grid.integers(xc).sum())
        unit = np.clip((xc - lower) / (upper - lower), 0.0, 1.0)
        assert g.quanta_sum(lower, upper, QUANTA) == int(np.rint(unit * QUANTA).sum())


def test_rint_halves_to_even_like_numpy() -> None:
    xs = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999999999999994, 2.5000000000000004, -3.7]
    xs += [1e15 + 0.5, -(1e15 + 0.5), 4503599627370495.5]
    got = (
        duckdb.connect()
        .execute(f"SELECT {rint_sql('x')} FROM (SELECT unnest(?::DOUBLE[]) AS x)", [xs])
        .fetchall()
    )
    assert [int(r[0]) for r in got] == [int(v) for v in np.rint(xs)]


def test_the_sampler_draws_the_same_from_duckdb_and_from_the_array() -> None:
    """A narrow forced window makes the tail step (its two counts asked of DuckDB)
    likely; the draws equal the array's, tail steps included."""
    x = np.sort(np.array([-2.0, -1.1, -0.4, -0.4, 0.0, 0.3, 0.35, 0.9, 1.2, 1.7, 2.2, 2.9, 3.0]))
    groups = _one_group(x, x)
    grid = PowerOfTwoGrid.build(-3.0, 3.0, "test")
    score = quantile_score(0.5, 1.0, "add-remove", "test")
    for window in (2, None):
        queries = groups.queries
        a = sample_quantile_indices(SeededRandom(1), x.copy(), grid, score, 12, _window=window)
        b = sample_quantile_indices(
            SeededRandom(1), groups.group(0), grid, score, 12, _window=window
        )
        assert np.array_equal(a, b)
        if window == 2:  # the tail step ran, answered by DuckDB
            assert groups.queries - queries > 2


@pytest.mark.parametrize("side", ["before", "after"])
@pytest.mark.parametrize("sample", ["engine", "all"])
@pytest.mark.parametrize("whole", [True, False])
def test_a_long_tie_next_to_the_window_keeps_its_full_count(
    side: str, sample: str, whole: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The value just before rank lo (``before``) or just after rank hi (``after``) is a
    run of ties longer than the slice's margin: the slice (brackets sorted and sliced in
    DuckDB, not ``whole``) cuts the run, and the window must still carry the run's full
    multiplicity."""
    if not whole:
        monkeypatch.setattr(duck_groups, "_WHOLE_ROWS", -1)
    # n // 2 = lo + 5 = hi - 6 (p = 1/2, w = 5): the tie ends at rank lo - 1 or starts
    # at rank hi + 1
    under, over = (10_000, 13_010) if side == "before" else (16_000, 12_986)
    x = np.concatenate(
        [np.arange(1, under + 1) / 1e4 - 2.0, np.zeros(3000), np.arange(1, over + 1) / 1e4]
    )
    groups = _one_group(x, x if sample == "all" else None)
    num, den, w = 1, 2, 5
    want = ArrayRecords(x.copy()).quantile_window(num, den, w)
    got = groups.group(0).quantile_window(num, den, w)
    assert want is not None
    assert got is not None
    assert 3000 in want[1].tolist()
    assert np.array_equal(got[0], want[0])
    assert np.array_equal(got[1], want[1])
    assert got[2:] == want[2:]


@pytest.mark.parametrize("stat", ["median", "mean-ksw", "sum"])
def test_the_checks_in_the_first_pass_see_rows_outside_the_keys(table: Any, stat: str) -> None:
    """The value checks ride in the first pass of the held path: a missing group key (a
    row no public key matches) is still an error, and nulls="drop" drops exactly the
    rows with a missing value (the pass is taken again)."""
    from dpsense.errors import InputError

    statistic, extra = STATS[stat]
    bad = table.astype({"g": "float64"})
    bad.loc[[5, 17], "g"] = np.nan
    bad.loc[[40], "v"] = np.nan
    kwargs: dict[str, Any] = {"column": "v", "epsilon": 1.0, "by": "g", "keys": [0, 1], **extra}
    with pytest.raises(InputError, match="missing values"):
        ds.release(bad, statistic, rng=1, **kwargs)
    got = ds.release(bad, statistic, rng=1, nulls="drop", **kwargs)
    assert _rows(got) == _rows(ds.release(bad.dropna(), statistic, rng=1, **kwargs))


@pytest.mark.parametrize("sample", ["engine", "all", "distinct-once", "run-misplaced"])
@pytest.mark.parametrize("whole", [True, False])
def test_windows_read_from_raw_values_equal_the_clipped_arrays(
    sample: str, whole: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The window pass filters the raw (unclipped) values: a bracket end at a bound must
    take the whole run of values clipped to it. About 31% of the values lie below -0.5
    and 31% above 0.5; the levels put the window inside each run, at its edge and
    between. Samples may misjudge the runs: "distinct-once" counts each value once,
    "run-misplaced" gives the run at the lower bound one copy and its mass to the next
    value, so that a bracket just above the run starts at the bound itself. Brackets
    leave DuckDB whole (``whole``) or sorted and sliced there."""
    if not whole:
        monkeypatch.setattr(duck_groups, "_WHOLE_ROWS", -1)
    rng = np.random.default_rng(8)
    x = np.round(rng.normal(0.0, 1.0, 20000), 4)
    lower, upper = -0.5, 0.5
    x[:5], x[5:10] = lower, upper  # raw values at the bounds themselves
    c = np.clip(x, lower, upper)
    con = duckdb.connect()
    con.register("xs", pd.DataFrame({"gid": np.zeros(x.shape[0], dtype=np.int64), "x": x}))
    con.execute("CREATE TABLE t AS SELECT * FROM xs")
    if sample == "engine":
        got = con.execute(f"SELECT x FROM t WHERE {duck_groups.sample_test('x')}").fetchnumpy()
        values, counts = np.unique(np.clip(got["x"], lower, upper), return_counts=True)
    elif sample == "all":
        values, counts = np.unique(c, return_counts=True)
    elif sample == "distinct-once":
        values = np.unique(c)
        counts = np.ones(values.shape[0], dtype=np.int64)
    else:
        values, counts = np.unique(c, return_counts=True)
        counts[1] += counts[0] - 1
        counts[0] = 1
    clipped = f"SELECT gid, greatest(least(x, {upper}), {lower}) AS v FROM t"
    raw = duck_groups.RawRows("SELECT gid, x FROM t", ("gid",), None, lower, upper)
    groups = DuckGroups(con, clipped, {0: int(x.shape[0])}, {0: (values, counts)}, raw)
    below = int(np.count_nonzero(c == lower))
    n = x.shape[0]
    edges = (below + 3, below + 30, n - below - 4, n - below - 31)  # a window starts at an edge
    for rank in (below - 300, below - 3, below, below + 40, n // 2, n - below - 5, *edges):
        for w in (3, 30):
            num, den = rank, n
            want = ArrayRecords(c.copy()).quantile_window(num, den, w)
            got_w = groups.group(0).quantile_window(num, den, w)
            assert (got_w is None) == (want is None)
            if want is None or got_w is None:
                continue
            assert np.array_equal(got_w[0], want[0]), (rank, w)
            assert np.array_equal(got_w[1], want[1]), (rank, w)
            assert got_w[2:] == want[2:], (rank, w)


def test_values_split_by_group_whatever_the_order_of_their_runs() -> None:
    from dpsense.tables.rows.windows import split_by_group

    x = np.arange(10, dtype=np.float64)
    runs = split_by_group(np.array([3, 3, 1, 1, 1, 7, 2, 2, 2, 2]), x)  # one run each
    assert {g: v.tolist() for g, v in runs.items()} == {
        3: [0.0, 1.0],
        1: [2.0, 3.0, 4.0],
        7: [5.0],
        2: [6.0, 7.0, 8.0, 9.0],
    }
    mixed = split_by_group(np.array([3, 1, 3, 1, 1, 7, 2, 2, 3, 2]), x)  # interleaved
    assert {g: sorted(v.tolist()) for g, v in mixed.items()} == {
        3: [0.0, 2.0, 8.0],
        1: [1.0, 3.0, 4.0],
        7: [5.0],
        2: [6.0, 7.0, 9.0],
    }
    assert split_by_group(np.zeros(0, dtype=np.int64), np.zeros(0)) == {}
