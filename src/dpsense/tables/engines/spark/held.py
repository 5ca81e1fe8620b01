"""Large groups of a Spark release without privacy unit, kept in Spark as rows.

When every row is a unit, nothing needs the histogram of clipped values (a GROUP BY over
every distinct (group, value) pair, which on continuous data shuffles about as many rows
as the table has). The release of such a table takes the design of the DuckDB engine's
held groups (``duck_groups``), with Spark jobs:

* one job counts each group's rows and, for the exponential-mechanism quantile, takes a
  value-hash sample of it (about one distinct value in ``SAMPLE_MOD``, all copies of it);
  for the sum and the means it also sums the records mapped to the statistic's public
  grid, exactly (``decimal(38, 0)``); for a quantile's interval, its counts below the
  interval's points (``pass_cells``). Groups of at most ``STREAM_DISTINCT`` rows (for a
  quantile, of tied data too: few distinct values in the sample) get their histogram as
  usual; the others stay in Spark;
* the quantile's window of order statistics, one job for every held group: the sample
  gives each group a bracket [a, b] of values around the target ranks, with a safety
  margin; the job counts the rows below a and sorts the rows inside [a, b], of which only
  a slice around the window ranks reaches the driver. The rows outside the slice become
  two sentinel entries (-inf and +inf, with their counts); a group whose window reaches a
  sentinel (its bracket missed, which the margin makes rare) is answered from its exact
  histogram, one job for all such groups;
* the two counts of the sampler's rare tail step, one job each; anything that reads every
  record (the sampler's full path) builds every held group's histogram once.

Every answer is exact, so the release equals the one from an array of the same records,
for the same seed; the sample and the brackets decide only the running time.
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np

from dpsense.data.source import TableSource
from dpsense.mechanisms._quantile_sampler import window_ranks
from dpsense.methods.ksw import QUANTA
from dpsense.statistics._exact import RecordGrid
from dpsense.tables.engines.spark import groups as spark_groups
from dpsense.tables.engines.spark.groups import (
    F64,
    I64,
    SparkGroup,
    SparkHeld,
    compare,
    grid_k,
    held_values,
    load_histogram,
    quanta_k,
)
from dpsense.tables.engines.spark.pass_cells import BucketCells, bucket_column, cell_bounds
from dpsense.tables.rows.bounded import BoundedTable, TablePlan, summarise
from dpsense.tables.rows.windows import SAMPLE_MOD, _distinct, window_rows

__all__ = ["PAD", "SparkRowGroups", "bracket", "held_spark_table", "margin"]

PAD: Final = 256
"""Ranks beyond the window each side that reach the driver (room for the neighbours' ties)."""
SAMPLE: Final = f"pmod(hash(v), {SAMPLE_MOD}) = 0"
"""Spark SQL true for the sampled values (Spark's Murmur3 hash of the double: all copies of
a value are sampled together)."""


def margin(n: int, sampled: int, union: int, w: int) -> float:
    """Ranks added each side of the window to the sample's estimate of its ends.

    The estimate of a fraction q of the group has two errors: which of the group's rows
    fall on the sampled values (variance about q(1-q)/k for k distinct values sampled:
    whole runs of ties are sampled together), and which values the hash samples at all,
    the same for every group (about q(1-q)/K, K the distinct values sampled over all the
    held groups). With q(1-q) <= 1/4, the margin is four standard deviations of their sum,
    plus the window itself (speed only: a miss costs one more job)."""
    return 2.0 * n * math.sqrt(1.0 / sampled + 1.0 / union) + w + 2


def bracket(
    values: F64, counts: I64, n: int, lo: int, hi: int, w: int, union: int
) -> tuple[float, float]:
    """Values a <= x_(lo) and b >= x_(hi), likely, from a group of ``n`` records whose
    value-hash sample holds the sorted distinct ``values`` with their ``counts`` (speed
    only: a bracket that misses sends the group to its exact histogram); ``union``: the
    distinct values sampled over all the held groups."""
    total = int(counts.sum())
    if total == 0:
        return -math.inf, math.inf
    est = np.cumsum(counts) * (n / total)  # estimated #{x <= v_j}
    pad = margin(n, values.shape[0], max(union, values.shape[0]), w)
    i = int(np.searchsorted(est, lo - pad, side="right")) - 1
    j = int(np.searchsorted(est, hi + pad, side="left")) + 1
    a = float(values[i]) if i >= 0 else -math.inf
    b = float(values[j]) if j < values.shape[0] else math.inf
    return a, b


def _functions() -> Any:
    from pyspark.sql import functions as sf

    return sf


class SparkRowGroups(SparkHeld):
    """The large groups of one release, answered from ``stage`` (a DataFrame of the clipped
    rows as ``gid, v``) by Spark jobs."""

    def __init__(
        self,
        stage: Any,
        sizes: dict[int, int],
        samples: dict[int, tuple[F64, I64]],
        con: Any,
    ) -> None:
        super().__init__(sizes, con)
        self.stage = stage
        self.samples = samples
        """Each group's value-hash sample: sorted distinct values and their counts."""
        self._loaded = False
        self.fallbacks = 0
        """Groups whose bracket missed their window (answered from their histogram)."""
        self.histograms = 0
        """Groups whose whole histogram was built (a missed bracket or a full read)."""

    def group(self, gid: int) -> SparkGroup:
        return SparkGroup(self, gid)

    def _held(self, gids: list[int] | None = None) -> Any:
        sf = _functions()
        return self.stage.where(sf.col("gid").isin(sorted(self.sizes if gids is None else gids)))

    def _collect(self, frame: Any) -> list[Any]:
        rows = frame.collect()
        self.jobs += 1
        return list(rows)

    def _all_windows(self, num: int, den: int, w: int) -> dict[int, Any]:
        ranks = {
            g: r for g, n in self.sizes.items() if (r := window_ranks(n, num, den, w)) is not None
        }
        if not ranks:
            return {}
        none = (np.zeros(0), np.zeros(0, dtype=np.int64))  # no sample: the whole group
        union = np.unique(np.concatenate([none[0], *(v for v, _ in self.samples.values())]))
        brackets = [
            (g, lo, hi, *bracket(*self.samples.get(g, none), self.sizes[g], lo, hi, w, union.size))
            for g, (lo, hi) in ranks.items()
        ]
        found = self._bracket_slices(brackets, int(w) + PAD)
        out: dict[int, Any] = {}
        missed: list[int] = []
        for g, (lo, hi) in ranks.items():
            below, m, s0, part = found.get(g, (0, 0, 0, []))
            self.rows_collected += len(part or [])
            values, counts, low, high = _slice_histogram(self.sizes[g], below, m, s0, part or [])
            keep = window_rows(counts, lo, hi)
            if (low and keep[0]) or (high and keep[-1]):
                missed.append(g)  # the bracket missed the window
                continue
            out[g] = _window(values, counts, keep, self.sizes[g])
        if missed:
            self.fallbacks += len(missed)
            for g, (values, counts) in self._histograms(missed).items():
                lo, hi = ranks[g]
                out[g] = _window(values, counts, window_rows(counts, lo, hi), self.sizes[g])
        return out

    def _bracket_slices(
        self, brackets: list[tuple[Any, ...]], pad: int
    ) -> dict[int, tuple[int, int, int, Any]]:
        """Per group, the rows below its bracket and the sorted rows inside it, of which
        only a slice around the window ranks reaches the driver (start and length clamped
        to the bracket's size, so that the int casts of slice never overflow): by group,
        (rows below, rows inside, the slice's offset, the slice)."""
        sf = _functions()
        bounds = self.stage.sparkSession.createDataFrame(
            brackets, "gid long, lo long, hi long, a double, b double"
        )
        inside = (
            self.stage.join(sf.broadcast(bounds), on="gid", how="inner")
            .groupBy("gid", "lo", "hi")
            .agg(
                sf.expr("count_if(v < a)").alias("below"),
                sf.expr("array_sort(collect_list(v) FILTER (WHERE v >= a AND v <= b))").alias(
                    "inside"
                ),
            )
            .withColumn("m", sf.size("inside"))
            .withColumn("s0", sf.expr(f"least(greatest(lo - below - {pad}, 0), m)"))
            .withColumn("e", sf.expr(f"least(greatest(hi - below + 1 + {pad}, s0), m)"))
        )
        got = self._collect(
            inside.select(
                "gid",
                "below",
                "m",
                "s0",
                sf.expr("slice(inside, CAST(s0 AS INT) + 1, CAST(e - s0 AS INT))").alias("part"),
            )
        )
        return {int(r["gid"]): (int(r["below"]), int(r["m"]), int(r["s0"]), r["part"]) for r in got}

    def _histograms(self, gids: list[int]) -> dict[int, tuple[F64, I64]]:
        """The groups' distinct values (sorted) and their multiplicities, one job."""
        sf = _functions()
        rows = self._collect(
            self._held(gids).groupBy("gid", "v").agg(sf.count(sf.lit(1)).alias("c"))
        )
        self.rows_collected += len(rows)
        self.histograms += len(gids)
        gid = np.array([int(r["gid"]) for r in rows], dtype=np.int64)
        v = np.array([float(r["v"]) for r in rows], dtype=np.float64)
        c = np.array([int(r["c"]) for r in rows], dtype=np.int64)
        order = np.lexsort((v, gid))
        gid, v, c = gid[order], v[order], c[order]
        out = {}
        for g in gids:
            lo, hi = np.searchsorted(gid, g, side="left"), np.searchsorted(gid, g, side="right")
            out[g] = (v[lo:hi], c[lo:hi])
        return out

    def count(self, gid: int, op: str, v: float) -> int:
        sf = _functions()
        n = self.stage.where((sf.col("gid") == gid) & compare(sf.col("v"), op, v)).count()
        self.jobs += 1
        return int(n)

    def counts_below(self, gid: int, points: F64) -> I64:
        """One job answers every held group (an interval's grid is the same for all of
        them), cached by the points, unless the first job counted them
        (:meth:`preset_counts`)."""
        key = tuple(float(c) for c in points)
        cache = self._below
        if key not in cache:
            sf = _functions()
            sums = [
                sf.coalesce(sf.sum(sf.when(sf.col("v") < c, 1)), sf.lit(0)).alias(f"n{i}")
                for i, c in enumerate(key)
            ]
            rows = self.stage.groupBy("gid").agg(*sums).collect()
            self.jobs += 1
            cache[key] = {
                int(r["gid"]): np.array([int(r[f"n{i}"]) for i in range(len(key))], np.int64)
                for r in rows
            }
        return cache[key].get(gid, np.zeros(points.size, dtype=np.int64))

    def values(self, gid: int) -> F64:
        """Every record of the group, sorted. The first call streams every held group's
        histogram into a DuckDB table; each group is then rebuilt from there."""
        if not self._loaded:
            sf = _functions()
            hist = self._held().groupBy("gid", "v").agg(sf.count(sf.lit(1)).alias("c"))
            load_histogram(self.con, hist.select("gid", "v", "c"), "dpsense_held")
            self._loaded = True
            self.jobs += 1
            self.histograms += len(self.sizes)
        values, rows = held_values(self.con, gid)
        self.rows_collected += rows
        return values

    def grid_sum(self, gid: int, grid: RecordGrid) -> int:
        return self._sum(gid, *grid_k(_functions(), grid))

    def quanta_sum(self, gid: int, lower: float, upper: float, quanta: int) -> int:
        return self._sum(gid, *quanta_k(_functions(), lower, upper, quanta))

    def preset_sums(self, key: tuple[Any, ...], sums: dict[int, int]) -> None:
        """Sums computed in the first job (the same column as :meth:`_sum`)."""
        self._sums[key] = sums

    def _sum(self, gid: int, key: tuple[Any, ...], k: Any) -> int:
        """sum(k(v)) per held group, exactly (decimal(38, 0)); one job for all."""
        if key not in self._sums:
            sf = _functions()
            exact = sf.sum(k.cast("decimal(38,0)")).cast("string").alias("s")
            rows = self._collect(self._held().groupBy("gid").agg(exact))
            self._sums[key] = {int(r["gid"]): int(r["s"]) for r in rows}
        return self._sums[key].get(gid, 0)


def _slice_histogram(
    n: int, below: int, m: int, s0: int, part: list[float]
) -> tuple[F64, I64, bool, bool]:
    """A group's histogram as the window job sees it: the distinct values of the slice
    (``part``, the bracket's sorted rows ``s0..``), with the rest of the group's ``n``
    rows as two sentinel entries, -inf (the ``below`` rows under the bracket and the
    bracket's rows before the slice) and +inf (the rest). A value at a cut end of the
    slice joins its sentinel: some of its copies may lie outside the slice. Also whether
    each sentinel is there."""
    values, counts = _distinct(np.asarray(part, dtype=np.float64))
    s1 = s0 + int(counts.sum())
    above = n - below - m + (m - s1)
    below += s0
    if s0 > 0 and values.shape[0]:
        below, values, counts = below + int(counts[0]), values[1:], counts[1:]
    if s1 < m and values.shape[0]:
        above, values, counts = above + int(counts[-1]), values[:-1], counts[:-1]
    low, high = int(below > 0), int(above > 0)
    values = np.concatenate(([-math.inf] * low, values, [math.inf] * high))
    counts = np.concatenate(([below] * low, counts, [above] * high)).astype(np.int64)
    return values, counts, bool(low), bool(high)


def _window(values: F64, counts: I64, keep: Any, n: int) -> tuple[F64, I64, int, int]:
    """The window rows ``keep`` of a histogram, with the numbers of records before and
    after them."""
    first = int(np.argmax(keep))
    before = int(counts[:first].sum())
    values, counts = values[keep], counts[keep]
    return values.copy(), counts.copy(), before, n - before - int(counts.sum())


def _preset_sums(plan: TablePlan) -> list[tuple[tuple[Any, ...], Any]]:
    """The exact sum the release reads (a grid sum, or the KSW quanta), computed in the
    counting job: (cache key, Spark column of the summand)."""
    sf = _functions()
    if plan.lower is None or plan.upper is None:
        return []
    if plan.hold == "grid":
        return [grid_k(sf, RecordGrid.for_bounds(plan.lower, plan.upper))]
    if plan.hold == "quanta":
        return [quanta_k(sf, plan.lower, plan.upper, QUANTA)]
    return []


def _count_groups(
    stage: Any,
    hold: str,
    preset: list[tuple[tuple[Any, ...], Any]],
    ngroups: int,
    bounds: tuple[float, float] | None = None,
) -> tuple[dict[int, list[int]], np.ndarray, dict[int, tuple[F64, I64]], Any]:
    """One job: each group's rows, with the value-hash sample of a quantile and the
    preset exact sums; the preset sums by group, rows per group, samples by group and,
    with ``bounds``, the interval's counts below the points (``pass_cells``; None if an
    entry straddles a point)."""
    sf = _functions()
    if hold == "window":
        return _window_pass(stage, ngroups, bounds)
    aggs = [sf.count(sf.lit(1)).alias("n")]
    for i, (_, k) in enumerate(preset):
        aggs.append(sf.sum(k.cast("decimal(38,0)")).cast("string").alias(f"s{i}"))
    got = stage.groupBy("gid").agg(*aggs).collect()
    rows = np.zeros(ngroups, dtype=np.int64)
    sums: dict[int, list[int]] = {}
    for r in got:
        g = int(r["gid"])
        rows[g] = int(r["n"])
        sums[g] = [int(r[f"s{i}"]) for i in range(len(preset))]
    return sums, rows, {}, None


def _window_pass(
    stage: Any, ngroups: int, bounds: tuple[float, float] | None
) -> tuple[dict[int, list[int]], np.ndarray, dict[int, tuple[F64, I64]], Any]:
    """The first job of a quantile: rows grouped by ``gid``, the sampled value (NULL for
    the rows not sampled: plain hash aggregation) and, with ``bounds``, the bucket of
    ``pass_cells`` with its smallest and largest value; then by ``gid`` and bucket, the
    sampled values as lists (a few rows reach the driver)."""
    sf = _functions()
    frame = stage.withColumn("sv", sf.when(sf.expr(SAMPLE), sf.col("v")))
    bucket = None if bounds is None else bucket_column(sf, *bounds)
    keys, extremes, cells = ["gid"], [], None
    if bucket is not None and bounds is not None:
        frame = frame.withColumn("b", bucket)
        keys.append("b")
        extremes = [sf.min("v").alias("lo"), sf.max("v").alias("hi")]
        cells = BucketCells(*bounds)
    first = frame.groupBy(*keys, "sv").agg(sf.count(sf.lit(1)).alias("n"), *extremes)
    # every copy of a sampled value, as the rows hold them (a list of doubles per entry)
    sample = sf.expr(
        "flatten(collect_list(array_repeat(sv, CAST(n AS INT))) FILTER (WHERE sv IS NOT NULL))"
    )
    if cells is not None:
        extremes = [sf.min("lo").alias("lo"), sf.max("hi").alias("hi")]
    got = first.groupBy(*keys).agg(sf.sum("n").alias("n"), sample.alias("s"), *extremes).collect()
    rows = np.zeros(ngroups, dtype=np.int64)
    sampled: dict[int, list[float]] = {}
    for r in got:
        g, n = int(r["gid"]), int(r["n"])
        rows[g] += n
        sampled.setdefault(g, []).extend(r["s"] or [])
        if cells is not None:
            cells.add(g, n, r["lo"], r["hi"])
    samples: dict[int, tuple[F64, I64]] = {}
    for g, values in sampled.items():
        v, c = np.unique(np.asarray(values, dtype=np.float64), return_counts=True)
        samples[g] = (v, c.astype(np.int64))
    return {}, rows, samples, None if cells is None else cells.counts()


def _stream_small_groups(
    con: Any, stage: Any, small: list[int], rows: np.ndarray, samples: dict[int, Any]
) -> None:
    """The histograms of the groups not held in Spark, streamed into ``dpsense_hist``."""
    if not small:
        con.execute("CREATE OR REPLACE TEMP TABLE dpsense_hist (gid BIGINT, v DOUBLE, c BIGINT)")
        return
    sf = _functions()
    hist = (
        stage.where(sf.col("gid").isin(small))
        .groupBy("gid", "v")
        .agg(sf.count(sf.lit(1)).alias("c"))
        .select("gid", "v", "c")
    )
    # an estimate of its rows decides only how it is streamed (one collect or by parts)
    estimate = sum(
        min(int(rows[g]), SAMPLE_MOD * (samples[g][0].shape[0] + 8))
        if g in samples
        else int(rows[g])
        for g in small
    )
    load_histogram(con, hist, rows=estimate)


def held_spark_table(
    source: Any, plan: TablePlan, stage: Any, group_keys: list[tuple[Any, ...]]
) -> BoundedTable:
    """Every row a unit, groups by gid (``stage``: the clipped rows as ``gid, v``): one
    job counts each group's rows (with the sample of a quantile, or the exact sum the
    release reads); groups of more than ``STREAM_DISTINCT`` rows (for a quantile, with
    more than about that many distinct values too) stay in Spark, the others get their
    histogram, streamed into the DuckDB table ``dpsense_hist`` as usual."""
    hold = plan.hold
    stage = stage.select("gid", "v")
    preset = _preset_sums(plan)
    bounds = cell_bounds(plan, len(group_keys))
    sums, rows, samples, cells = _count_groups(stage, hold, preset, len(group_keys), bounds)
    limit = spark_groups.STREAM_DISTINCT
    held = rows > limit
    if hold == "window":  # tied data: a small histogram is cheaper than the window job
        sampled = np.array([samples.get(g, (np.zeros(0),))[0].shape[0] for g in range(len(rows))])
        held &= sampled * SAMPLE_MOD > limit
    large = [int(g) for g in np.flatnonzero(held)]
    small = [int(g) for g in np.flatnonzero((rows > 0) & ~held)]
    con = source.con
    _stream_small_groups(con, stage, small, rows, samples)
    table = summarise(
        TableSource(con, "dpsense_hist", ["gid", "v", "c"], source.label), group_keys, None, True
    )
    table.rows[large] = rows[large]
    table.units[large] = rows[large]
    if large:
        groups = SparkRowGroups(
            stage,
            {g: int(rows[g]) for g in large},
            {g: samples[g] for g in large if g in samples},
            con,
        )
        for i, (key, _) in enumerate(preset):
            groups.preset_sums(key, {g: s[i] for g, s in sums.items()})
        if cells is not None:
            groups.preset_counts(*cells)
        table.held = {g: groups.group(g) for g in large}
    return table
