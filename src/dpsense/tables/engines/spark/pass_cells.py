"""A quantile interval's counts below its public points, read from Spark's first pass.

``methods.quantile_interval`` asks each held group for ``#{v < c}`` at the 65 points
``endpoint_grid(lower, upper)`` of the statistic (v clipped to [lower, upper], as Spark's
stage already is). ``SparkGroups.counts_below`` and ``SparkRowGroups.counts_below``
answer them with a job of their own (65 conditional sums over every row); here the
release's first pass answers them instead, as DuckDB's does (``duckdb.pass_cells``): it
groups its rows by ``gid`` *and* a bucket, a monotone guess of the row's cell from the
points' mean spacing (:func:`bucket_column`), and keeps per entry its rows and smallest
and largest value. The pass's own aggregates are then summed over the buckets.

Exact whatever the guess (the argument of ``rows.bucket_cells``, whose
``counts_from_buckets`` does the arithmetic): clipping is monotone and a cell is an
interval of values, so when an entry's smallest and largest values lie in one cell, all
its rows do. An entry that straddles a point (a value on a point up to the guess's
rounding, points too uneven for the guess) leaves the counts unset, and
``counts_below`` runs its job as before. A NULL value has a NULL bucket, so such rows form
entries of their own, with no smallest value: below no point, as in the job (``v < c`` is
never true for NULL). Measured at 2e6 rows on local[2], interleaved in one process (a
grouped median, 100 groups): the release with every row a unit takes 0.56x the time of
the one with the separate job, with a privacy unit 0.91x.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpsense.methods.quantile_interval import INTERVAL_STEPS, endpoint_grid
from dpsense.tables.rows.bucket_cells import MAX_CELL_GROUPS, bucket_affine, counts_from_buckets

__all__ = ["BucketCells", "bucket_column", "cell_bounds"]


def bucket_column(sf: Any, lower: float, upper: float) -> Any | None:
    """The Spark column of the bucket 0..INTERVAL_STEPS of ``v`` (about the index of the
    last point at or below it; clamped as a double before the cast, so that no value
    overflows under ANSI mode: NaN, the largest double for Spark, in the last; NULL for
    NULL), or None when the bounds give no finite guess."""
    affine = bucket_affine(lower, upper)
    if affine is None:
        return None
    k = INTERVAL_STEPS
    scale, shift = affine
    v = sf.col("v")
    clamped = sf.least(
        sf.greatest(v * sf.lit(scale) + sf.lit(shift), sf.lit(0.0)), sf.lit(float(k))
    )
    # greatest and least skip NULLs: a NULL value keeps a NULL bucket (no value beside it)
    return sf.when(v.isNotNull(), sf.floor(clamped).cast("int"))


def cell_bounds(plan: Any, ngroups: int) -> tuple[float, float] | None:
    """The bounds whose interval counts the first pass takes: a quantile's (hold
    "window") with finite bounds and at most ``MAX_CELL_GROUPS`` groups, else None."""
    if plan.hold != "window" or plan.column is None or ngroups > MAX_CELL_GROUPS:
        return None
    if plan.lower is None or plan.upper is None:
        return None
    return float(plan.lower), float(plan.upper)


class BucketCells:
    """The entries (gid, rows, smallest value, largest value) the first pass gave, and the
    counts below the points they make."""

    def __init__(self, lower: float, upper: float) -> None:
        self.lower, self.upper = lower, upper
        self.gid: list[int] = []
        self.present: list[int] = []
        self.lo: list[float] = []
        self.hi: list[float] = []

    def add(self, gid: int, rows: int, lo: float | None, hi: float | None) -> None:
        """One entry (``lo``/``hi`` None: its values are NULL, below no point)."""
        self.gid.append(gid)
        self.present.append(rows)
        self.lo.append(math.nan if lo is None else float(lo))
        self.hi.append(math.nan if hi is None else float(hi))

    def counts(self) -> tuple[Any, dict[int, Any]] | None:
        """The points and each group's counts below them (a group absent: no rows), or
        None when an entry straddles a point."""
        if not self.gid:
            return endpoint_grid(self.lower, self.upper), {}
        return counts_from_buckets(
            self.lower,
            self.upper,
            np.asarray(self.gid, dtype=np.int64),
            np.asarray(self.present, dtype=np.int64),
            np.asarray(self.lo, dtype=np.float64),
            np.asarray(self.hi, dtype=np.float64),
        )
