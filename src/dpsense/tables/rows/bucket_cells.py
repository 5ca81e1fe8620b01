"""A quantile interval's counts below its public points, from buckets of rows.

Both engines' first passes (``engines.duckdb.pass_cells``, ``engines.spark.pass_cells``)
group their rows by a bucket guessed from the points too, and keep per entry its rows and
smallest and largest value. Exact whatever the guess: a cell is the set of clipped values
with the same number of points at or below them, an interval of values (NaN, sorted
above every number, clips to ``upper``), and clipping is monotone. So when an entry's
clipped smallest and largest values lie in one cell (their cells found by
``searchsorted`` on the points themselves, as doubles), every row of the entry does, and
its rows are counted in that cell; an entry that straddles a point makes the counts
unusable (None), and the engine counts them with a job of their own.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
from numpy.typing import NDArray

from dpsense.methods.quantile_interval import INTERVAL_STEPS, endpoint_grid

__all__ = ["MAX_CELL_GROUPS", "bucket_affine", "counts_from_buckets"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

MAX_CELL_GROUPS: Final = 4096
"""Public keys beyond this: no buckets in the first pass (groups x 65 buckets to hash)."""


def bucket_affine(lower: float, upper: float) -> tuple[float, float] | None:
    """``(scale, shift)``: a value's bucket 0..INTERVAL_STEPS is about ``floor(x * scale +
    shift)``, clamped (each engine writes it in its own SQL); None when the bounds give no
    finite guess."""
    if not (math.isfinite(lower) and math.isfinite(upper) and lower < upper):
        return None
    scale = INTERVAL_STEPS / (upper - lower)
    shift = -lower * scale
    if not (math.isfinite(scale) and math.isfinite(shift) and scale > 0):
        return None
    return scale, shift


def counts_from_buckets(
    lower: float,
    upper: float,
    gid: I64,
    present: I64,
    lo: F64,
    hi: F64,
) -> tuple[F64, dict[int, I64]] | None:
    """The points and each group's ``#{clip(x) < c}`` at every point c, from the buckets
    (one entry per group and bucket: its rows with x not NULL, its smallest and largest
    x, NaN sorting above every number); None when a bucket straddles a point."""
    points = endpoint_grid(lower, upper)
    g = int(points.shape[0])

    def cell(v: F64) -> I64:  # the number of points at or below the clipped value
        clipped = np.where(np.isnan(v), upper, np.clip(v, lower, upper))
        return np.asarray(np.searchsorted(points, clipped, side="right"), dtype=np.int64)

    numbers = present > 0  # buckets holding only NULLs have no smallest value
    cell_lo, cell_hi = cell(lo[numbers]), cell(hi[numbers])
    if np.any(cell_lo != cell_hi):
        return None
    groups, at = np.unique(gid, return_inverse=True)
    cells = np.zeros((groups.shape[0], g + 1), dtype=np.int64)
    np.add.at(cells, (at[numbers], cell_lo), present[numbers])
    below = np.cumsum(cells, axis=1)[:, :g]
    return points, {int(x): below[i].copy() for i, x in enumerate(groups.tolist())}
