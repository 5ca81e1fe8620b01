"""A quantile interval's counts below its points, taken by Spark's first pass.

``engines.spark.pass_cells``: the first job of a release (every row a unit: the rows by
group; with a privacy unit: the histogram's sizes) groups by a bucket guessed from the
points too, and is exact by each entry's smallest and largest value, else the separate
counts job runs. Checked against a brute-force count over values on the points and
beside them, at and beyond the bounds, infinities, NaN and NULL (dropped by the release,
counted below no point by the pass itself), an empty group, bounds where the guess is
useless; and the seeded releases equal pandas'.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import dpsense as ds
from dpsense.methods.quantile_interval import endpoint_grid
from dpsense.tables.engines.spark import frame as spark_frame
from dpsense.tables.engines.spark import held as spark_held
from dpsense.tables.engines.spark.groups import SparkGroups, SparkHeld
from dpsense.tables.engines.spark.held import SparkRowGroups
from dpsense.tables.engines.spark.pass_cells import cell_bounds
from tests.tables.test_interval_counts import RELEASED, _brute, _on_points

pytestmark = [pytest.mark.spark, pytest.mark.engines]

pd = pytest.importorskip("pandas")

KEYS = list(range(7))


def _table(lower: float, upper: float, on: bool) -> Any:
    v = _on_points(lower, upper, 1500, 11, on)
    rng = np.random.default_rng(12)
    g = rng.integers(0, 5, v.shape[0])
    g[g == 4] = 5  # key 4: no rows
    v = np.concatenate([v, [np.nan] * 3])  # dropped by the release
    g = np.concatenate([g, [0, 1, 2]])
    return pd.DataFrame({"g": g, "v": v, "person": np.arange(v.shape[0])})


def _spy(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any]]:
    """Every group's counts as served, and the points of every preset."""
    served: list[Any] = []
    preset: list[Any] = []
    for cls in (SparkGroups, SparkRowGroups):

        def spy(self: Any, gid: int, points: Any, original: Any = cls.counts_below) -> Any:
            got = original(self, gid, points)
            served.append((gid, points.copy(), got.copy()))
            return got

        monkeypatch.setattr(cls, "counts_below", spy)
    original = SparkHeld.preset_counts

    def spy_preset(self: Any, points: Any, counts: Any) -> None:
        preset.append(points.copy())
        original(self, points, counts)

    monkeypatch.setattr(SparkHeld, "preset_counts", spy_preset)
    return served, preset


@pytest.mark.parametrize("unit", [False, True], ids=["rows", "person"])
@pytest.mark.parametrize("on", [True, False], ids=["on points", "off points"])
@pytest.mark.parametrize("bounds", RELEASED, ids=str)
def test_first_pass_counts_equal_brute_force(
    spark: Any,
    held: list[Any],
    monkeypatch: pytest.MonkeyPatch,
    bounds: tuple[float, float],
    on: bool,
    unit: bool,
) -> None:
    from tests.spark_session import to_spark

    served, preset = _spy(monkeypatch)
    lower, upper = bounds
    frame = _table(lower, upper, on)
    extra: dict[str, Any] = {"privacy_unit": "person", "max_rows_per_unit": 1} if unit else {}
    kwargs = dict(column="v", by="g", keys=KEYS, epsilon=1.0, rng=1, nulls="drop", **extra)
    statistic = ds.Median(lower, upper)
    got = ds.release(to_spark(spark, frame), statistic, **kwargs)
    want = ds.release(frame, statistic, **kwargs)
    assert [(k, r.value, r.interval()) for k, r in got] == [
        (k, r.value, r.interval()) for k, r in want
    ]
    assert len(held) == 1
    assert set(held[0].sizes) == {0, 1, 2, 3, 5}
    v, g = frame["v"].to_numpy(), frame["g"].to_numpy()
    assert {gid for gid, _, _ in served} == set(held[0].sizes)
    for gid, points, counts in served:
        assert np.array_equal(points, endpoint_grid(lower, upper))
        mine = v[(g == gid) & ~np.isnan(v)]
        assert counts.tolist() == _brute(mine, lower, upper), (bounds, gid)
    if bounds == (0.0, 100.0) or (not on and bounds != RELEASED[5]):  # 450 doubles: on points
        assert len(preset) == 1  # the first pass counted them, no job of their own
        assert np.array_equal(preset[0], endpoint_grid(lower, upper))


def _edge_rows() -> tuple[Any, Any]:
    """(gid, v) with NULL, NaN, infinities, values on the points, beside them and at and
    beyond the bounds [0, 100]; gid 2 has only NULLs and NaN, gid 3 no rows."""
    pts = endpoint_grid(0.0, 100.0)
    near = np.concatenate([pts, np.nextafter(pts, -np.inf), np.nextafter(pts, np.inf)])
    values: list[Any] = [*near, -np.inf, np.inf, -5.0, 105.0, np.nan, None, 50.0, 50.0]
    gid = [i % 2 for i in range(len(values))] + [2, 2, 2]
    values += [None, np.nan, None]
    return np.asarray(gid), values


def _brute_edges(gid: Any, values: list[Any], g: int) -> list[int]:
    """#{clip(v) < c} in group g (Spark's stage holds clipped values), NULL and NaN below
    no point."""
    x = np.array([np.nan if v is None else v for v, k in zip(values, gid, strict=True) if k == g])
    return _brute(x.astype(np.float64), 0.0, 100.0)


@pytest.mark.parametrize("where", ["rows", "histogram"])
def test_the_pass_counts_null_nan_and_edges_exactly(spark: Any, where: str) -> None:
    """The passes themselves, on values a release never gives them (NULL, NaN,
    unclipped): NULL and NaN below every point, as the separate job counts them."""
    gid, values = _edge_rows()
    rows = [(int(k), None if v is None else float(v)) for k, v in zip(gid, values, strict=True)]
    stage = spark.createDataFrame(rows, "gid long, v double")
    plan = SimpleNamespace(column="v", lower=0.0, upper=100.0, hold="window")
    bounds = cell_bounds(plan, 4)
    assert bounds == (0.0, 100.0)
    if where == "rows":
        _, sizes, _, cells = spark_held._count_groups(stage, "window", [], 4, bounds)
    else:
        hist = stage.groupBy("gid", "v").count().withColumnRenamed("count", "c")
        sizes, _, cells = spark_frame._group_sizes(hist, 4, bounds)
    assert sizes.tolist() == [int(np.count_nonzero(gid == g)) for g in range(4)]
    assert cells is not None
    points, counts = cells
    assert np.array_equal(points, endpoint_grid(0.0, 100.0))
    for g in range(4):
        want = _brute_edges(gid, values, g)
        assert counts.get(g, np.zeros(points.size, dtype=np.int64)).tolist() == want, g


def test_a_bucket_that_straddles_a_point_is_seen_whatever_is_sampled(spark: Any) -> None:
    """Bounds [0.1, 0.7]: the guess puts the point c_j in bucket j - 1, with the values
    just below it. One group holds c_j (not sampled) and a value of bucket j - 1 below it
    that the hash samples: the entries of the rows pass (by sampled value) must still give
    the bucket its smallest value, so that the straddle is seen and the job counts."""
    from pyspark.sql import functions as sf

    lower, upper = 0.1, 0.7
    points = endpoint_grid(lower, upper)
    scale = 64 / (upper - lower)
    shift = -lower * scale
    j = next(i for i in range(1, 64) if np.floor(points[i] * scale + shift) == i - 1)
    below = np.linspace(points[j - 1], points[j], 400)[1:-1]
    below = below[np.floor(below * scale + shift) == j - 1]
    probe = spark.createDataFrame([(float(x),) for x in [points[j], *below]], "v double")
    flags = probe.select("v", sf.expr(spark_held.SAMPLE).alias("s")).collect()
    sampled = {float(r["v"]): bool(r["s"]) for r in flags}
    assert not sampled[float(points[j])]
    x = next(float(v) for v in below if sampled[float(v)])
    stage = spark.createDataFrame([(0, float(points[j])), (0, x)], "gid long, v double")
    bounds = cell_bounds(SimpleNamespace(column="v", lower=lower, upper=upper, hold="window"), 1)
    assert bounds is not None
    _, sizes, _, cells = spark_held._count_groups(stage, "window", [], 1, bounds)
    assert sizes.tolist() == [2]
    if cells is not None:  # only if exact
        assert cells[1][0].tolist() == _brute(np.array([points[j], x]), lower, upper)
    assert cells is None  # the bucket straddles c_j: no counts from the pass
