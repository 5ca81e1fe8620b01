"""Large groups of a Spark release, kept in Spark: only what a method asks reaches Python.

A group whose histogram of clipped values has more than :data:`STREAM_DISTINCT` rows
(continuous data) is not moved to the driver. The release of such a group asks instead
for what its method needs, computed by Spark on the group's histogram:

* the exponential-mechanism quantile: the distinct values around the target rank (a window
  of public size, with their multiplicities and the counts below and above), in one job
  for every large group; the two counts of the rare tail step, one small job each;
* the sum and the means: exact integer sums (``decimal(38, 0)``) of the records mapped to
  the statistic's public grid, in one job for every large group.

Anything else (other methods, several quantiles, permute-and-flip grids, the sampler's
full path on pathological data) reads the group's records after all, streamed as for a
small group. Every answer is exact, so the release equals the one from an array of the
same records, for the same seed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from dpsense.mechanisms._quantile_sampler import window_ranks
from dpsense.statistics._exact import RecordGrid
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.rows.windows import HeldGroup

__all__ = [
    "STREAM_DISTINCT",
    "SparkGroup",
    "SparkGroups",
    "SparkHeld",
    "grid_k",
    "held_large_groups",
    "held_values",
    "load_histogram",
    "numbered_groups",
    "quanta_k",
]

_CHUNK: Final = 1_000_000
"""Histogram rows moved from Spark to DuckDB at a time."""
STREAM_DISTINCT: Final = 1 << 12
"""Groups with at most this many distinct values are streamed to the driver whole."""

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def compare(col: Any, op: str, v: float) -> Any:
    """The Spark condition ``col op v`` (op "<" or ">")."""
    return col < float(v) if op == "<" else col > float(v)


def _rint(sf: Any, x: Any) -> Any:
    """numpy's ``rint`` (halves to even) of a double column: ``t = floor(x)``, then up by
    one when the fraction ``x - t`` is above one half, or exactly one half and t is odd.
    The fraction is exact for 1/2 <= |x| < 2^52 and, for -1/2 < x < 0, rounds to at most
    1 with t = -1 and gives 0, as rint does; larger doubles are integers already."""
    t = sf.floor(x)
    frac = x - t.cast("double")
    up = (frac > 0.5) | ((frac == 0.5) & (sf.pmod(t, sf.lit(2)) == 1))
    return t + sf.when(up, sf.lit(1)).otherwise(sf.lit(0))


def grid_k(sf: Any, grid: RecordGrid) -> tuple[tuple[Any, ...], Any]:
    """The cache key and the column of ``grid.integers(v)`` (numpy's rint, then clamped)."""
    v = sf.col("v")
    k = sf.greatest(
        sf.least(_rint(sf, (v - sf.lit(grid.centre)) / sf.lit(grid.grid)), sf.lit(grid.k_high)),
        sf.lit(grid.k_low),
    )
    return ("grid", grid.centre, grid.grid, grid.k_low, grid.k_high), k


def quanta_k(sf: Any, lower: float, upper: float, quanta: int) -> tuple[tuple[Any, ...], Any]:
    """The cache key and the column of ``rint(clip((clip(v, l, u) - l) / (u - l), 0, 1) *
    quanta)``, as ``methods.ksw.unit_sums`` computes it in numpy."""
    v = sf.greatest(sf.least(sf.col("v"), sf.lit(upper)), sf.lit(lower))
    unit = (v - sf.lit(lower)) / sf.lit(upper - lower)
    unit = sf.greatest(sf.least(unit, sf.lit(1.0)), sf.lit(0.0))
    return ("quanta", lower, upper, quanta), _rint(sf, unit * sf.lit(float(quanta)))


class SparkHeld(ABC):
    """What the groups a Spark release holds share: their sizes, the release's DuckDB
    cursor (which receives the groups if they are read whole), the answers already
    computed and the counters tests and benchmarks read."""

    def __init__(self, sizes: dict[int, int], con: Any) -> None:
        self.sizes = sizes
        self.con = con
        self._windows: dict[tuple[int, int, int], dict[int, Any]] = {}
        self._sums: dict[tuple[Any, ...], dict[int, int]] = {}
        self._below: dict[tuple[float, ...], dict[int, I64]] = {}
        self.jobs = 0
        """Spark jobs run for the windows, counts, sums and histograms."""
        self.rows_collected = 0
        """Values (or histogram rows) that reached the driver."""

    def window(self, gid: int, num: int, den: int, w: int) -> tuple[F64, I64, int, int] | None:
        """The window of :func:`window_ranks` of group ``gid``; one Spark job
        (``_all_windows``) computes it for every held group at once (same level and
        width, each with its own n)."""
        key = (num, den, w)
        if key not in self._windows:
            self._windows[key] = self._all_windows(num, den, w)
        return self._windows[key].get(gid)

    def preset_counts(self, points: F64, counts: dict[int, I64]) -> None:
        """Counts below ``points`` taken in the release's first pass (``pass_cells``):
        served by ``counts_below`` for exactly these points (a group absent had no rows)."""
        zero = np.zeros(points.size, dtype=np.int64)
        self._below[tuple(float(c) for c in points)] = {g: counts.get(g, zero) for g in self.sizes}

    @abstractmethod
    def _all_windows(self, num: int, den: int, w: int) -> dict[int, Any]:
        """Every held group's window for one level and width (each kind of held group
        reads them its own way)."""


class SparkGroups(SparkHeld):
    """The large groups of one release: their histogram (gid, v, c) persisted in Spark."""

    def __init__(
        self, hist: Any, sizes: dict[int, int], distinct: dict[int, int], con: Any
    ) -> None:
        super().__init__(sizes, con)
        self.hist = hist
        self.distinct = distinct
        """Each group's number of histogram rows (to choose how to stream them)."""
        self._streamed = False

    def group(self, gid: int) -> SparkGroup:
        return SparkGroup(self, gid)

    def _sf(self) -> Any:
        from pyspark.sql import functions as sf

        return sf

    def _collect(self, frame: Any) -> list[Any]:
        rows = frame.collect()
        self.jobs += 1
        self.rows_collected += len(rows)
        return list(rows)

    def _all_windows(self, num: int, den: int, w: int) -> dict[int, Any]:
        from pyspark.sql import Window

        sf = self._sf()
        ranks = {
            g: r for g, n in self.sizes.items() if (r := window_ranks(n, num, den, w)) is not None
        }
        if not ranks:
            return {}
        spark = self.hist.sparkSession
        bounds = spark.createDataFrame(
            [(g, lo, hi) for g, (lo, hi) in ranks.items()], "gid long, lo long, hi long"
        )
        order = Window.partitionBy("gid").orderBy("v")
        before = order.rowsBetween(Window.unboundedPreceding, -1)
        h = (
            self.hist.join(sf.broadcast(bounds), on="gid", how="inner")
            .withColumn("cb", sf.coalesce(sf.sum("c").over(before), sf.lit(0)))
            .withColumn("nc", sf.lead("c").over(order))
            .withColumn("pc", sf.lag("c").over(order))
        )
        cb, c, lo, hi = sf.col("cb"), sf.col("c"), sf.col("lo"), sf.col("hi")
        core = (cb <= hi) & (cb + c > lo)
        predecessor = (cb + c <= lo) & (cb + c + sf.col("nc") > lo)
        successor = (cb > hi) & (cb - sf.col("pc") <= hi)
        rows = self._collect(
            h.where(core | predecessor | successor)
            .select("gid", "v", "c", "cb")
            .orderBy("gid", "v")
        )
        out: dict[int, Any] = {}
        by_gid: dict[int, list[Any]] = {}
        for row in rows:
            by_gid.setdefault(int(row["gid"]), []).append(row)
        for g, got in by_gid.items():
            values = np.array([float(r["v"]) for r in got], dtype=np.float64)
            counts = np.array([int(r["c"]) for r in got], dtype=np.int64)
            below = int(got[0]["cb"])
            above = self.sizes[g] - int(got[-1]["cb"]) - int(counts[-1])
            out[g] = (values, counts, below, above)
        return out

    def count(self, gid: int, op: str, v: float) -> int:
        sf = self._sf()
        rows = self._collect(
            self.hist.where((sf.col("gid") == gid) & compare(sf.col("v"), op, v)).agg(
                sf.coalesce(sf.sum("c"), sf.lit(0)).alias("n")
            )
        )
        return int(rows[0]["n"])

    def counts_below(self, gid: int, points: F64) -> I64:
        """One job answers every group (an interval's grid is the same for all of them),
        cached by the points, unless the first pass counted them (:meth:`preset_counts`)."""
        key = tuple(float(c) for c in points)
        cache = self._below
        if key not in cache:
            sf = self._sf()
            sums = [
                sf.coalesce(sf.sum(sf.when(sf.col("v") < c, sf.col("c"))), sf.lit(0)).alias(f"n{i}")
                for i, c in enumerate(key)
            ]
            rows = self._collect(self.hist.groupBy("gid").agg(*sums))
            cache[key] = {
                int(r["gid"]): np.array([int(r[f"n{i}"]) for i in range(len(key))], np.int64)
                for r in rows
            }
        return cache[key].get(gid, np.zeros(points.size, dtype=np.int64))

    def values(self, gid: int) -> F64:
        """Every record of the group, sorted. The first call streams every large group's
        histogram into a DuckDB table (``load_histogram``); each group is then rebuilt
        from there, as small groups are."""
        if not self._streamed:
            load_histogram(self.con, self.hist, "dpsense_held", sum(self.distinct.values()))
            self._streamed = True
            self.jobs += 1
        values, rows = held_values(self.con, gid)
        self.rows_collected += rows
        return values

    def grid_sum(self, gid: int, grid: RecordGrid) -> int:
        return self._sum(gid, *grid_k(self._sf(), grid))

    def quanta_sum(self, gid: int, lower: float, upper: float, quanta: int) -> int:
        return self._sum(gid, *quanta_k(self._sf(), lower, upper, quanta))

    def _sum(self, gid: int, key: tuple[Any, ...], k: Any) -> int:
        """sum(k(v) * c) per large group, exactly (decimal(38, 0)); one job for all."""
        if key not in self._sums:
            sf = self._sf()
            exact = k.cast("decimal(38,0)") * sf.col("c").cast("decimal(38,0)")
            rows = self._collect(
                self.hist.groupBy("gid").agg(sf.sum(exact).cast("string").alias("s"))
            )
            self._sums[key] = {int(r["gid"]): int(r["s"]) for r in rows}
        return self._sums[key].get(gid, 0)


class SparkGroup(HeldGroup):
    """One large group, answered by Spark."""


def held_values(con: Any, gid: int) -> tuple[F64, int]:
    """Every record of group ``gid``, sorted, rebuilt from the histogram that
    :func:`load_histogram` wrote to the DuckDB table ``dpsense_held``; and the number of
    histogram rows read."""
    got = con.execute("SELECT v, c FROM dpsense_held WHERE gid = ? ORDER BY v", [gid]).fetchnumpy()
    counts = np.asarray(got["c"], dtype=np.int64)
    return np.repeat(np.asarray(got["v"], dtype=np.float64), counts), len(got["v"])


def load_histogram(
    con: Any, hist: Any, table: str = "dpsense_hist", rows: int | None = None
) -> None:
    """Stream (gid, v, c) rows from Spark into DuckDB table ``table``: one ``collect`` when
    ``rows`` (the number of histogram rows, if known) is at most one chunk, else partition
    by partition (``toLocalIterator``: one job per partition, bounded memory)."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} (gid BIGINT, v DOUBLE, c BIGINT)")
    gid: list[int] = []
    v: list[float] = []
    c: list[int] = []

    def flush() -> None:
        if not gid:
            return
        con.register(
            "dpsense_chunk",
            {
                "gid": np.asarray(gid, dtype=np.int64),
                "v": np.asarray(v, dtype=np.float64),
                "c": np.asarray(c, dtype=np.int64),
            },
        )
        con.execute(f"INSERT INTO {table} SELECT gid, v, c FROM dpsense_chunk")
        con.unregister("dpsense_chunk")
        gid.clear()
        v.clear()
        c.clear()

    small = rows is not None and rows <= _CHUNK
    for row in hist.collect() if small else hist.toLocalIterator():
        gid.append(row[0])
        v.append(row[1])
        c.append(row[2])
        if len(gid) >= _CHUNK:
            flush()
    flush()


def numbered_groups(
    source: Any, plan: TablePlan, hist: Any, units_frame: Any
) -> tuple[list[tuple[Any, ...]], Any, list[Any] | None]:
    """The groups found in the data, numbered in the order of their values: their keys,
    the histogram with a ``gid`` and (with a privacy unit) each group's unit count."""
    from pyspark.sql import functions as sf

    by = plan.by
    gs = [f"g{i}" for i in range(len(by))]
    found = hist.select(*gs).distinct().orderBy(*gs).collect()
    group_keys = [tuple(r) for r in found]
    if not group_keys:
        numbered = hist.select(sf.lit(0).cast("long").alias("gid"), "v", "c").limit(0)
        return group_keys, numbered, ([] if units_frame is not None else None)
    spark = source.frame.sparkSession
    gid_frame = spark.createDataFrame(
        [(*k, i) for i, k in enumerate(group_keys)], [*gs, "gid"]
    ).select(
        *[sf.col(f"g{i}").cast(source.types[b]).alias(f"g{i}") for i, b in enumerate(by)],
        sf.col("gid").cast("long"),
    )
    # null-safe join on every by-column (no nulls remain, but types must match)
    numbered = hist.join(sf.broadcast(gid_frame), on=gs, how="inner").select("gid", "v", "c")
    unit_rows = (
        units_frame.join(sf.broadcast(gid_frame), on=gs, how="inner")
        .select("gid", "count")
        .collect()
        if units_frame is not None
        else None
    )
    return group_keys, numbered, unit_rows


def held_large_groups(
    source: Any,
    plan: TablePlan,
    numbered: Any,
    rows: np.ndarray,
    distinct: np.ndarray,
    persisted: list[Any],
) -> tuple[SparkGroups | None, list[int], Any]:
    """The groups of more than ``STREAM_DISTINCT`` distinct values stay in Spark
    (persisted until the release is over); the rest of ``numbered`` is streamed."""
    large = (
        [g for g in range(len(rows)) if distinct[g] > STREAM_DISTINCT]
        if plan.column is not None
        else []
    )
    if not large:
        return None, large, numbered
    from pyspark.sql import functions as sf

    persisted.remove(numbered)
    source.on_close.append(numbered.unpersist)
    marks = source.frame.sparkSession.createDataFrame([(g,) for g in large], "gid long")
    big = numbered.join(sf.broadcast(marks), on="gid", how="left_semi")
    held = SparkGroups(
        big,
        {g: int(rows[g]) for g in large},
        {g: int(distinct[g]) for g in large},
        source.con,
    )
    return held, large, numbered.join(sf.broadcast(marks), on="gid", how="left_anti")
