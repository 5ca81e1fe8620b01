"""The counts of every held group's interval ladders in one Spark job.

A quantile's interval (``methods.quantile_interval``) reads, per group, ``#{v < c}`` at
points on two ladders around the group's released value, so each group has points of its
own. A grouped release draws every group's value first and announces each group's ladders
(:meth:`PendingLadders.announce`); the first group that asks for its counts has all of
them counted by one job: the announced ladders (request, group, points) are broadcast,
joined to the held rows (or histogram rows) by group, and each row counts at its cell,
the number of its request's points at or below it (``size(filter(points, p -> p <= v))``:
exact comparisons with public doubles; NaN above every point, as in numpy).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from dpsense.methods.quantile_interval import LadderCounts

__all__ = ["PendingLadders", "ladder_counts_job"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]


def ladder_counts_job(
    frame: Any, weight: Any, requests: list[tuple[int, LadderCounts]]
) -> tuple[list[I64], int]:
    """``#{v < c}`` at each request's points for its group, from ``frame`` (``gid, v``
    with ``weight`` rows each), in one job, and the number of rows it collected (one per
    request whose group has records)."""
    from pyspark.sql import functions as sf

    small = frame.sparkSession.createDataFrame(
        [(r, int(g), [float(p) for p in w.points]) for r, (g, w) in enumerate(requests)],
        "rid long, gid long, pts array<double>",
    )
    v = sf.col("v")
    cell = sf.when(v.isNull(), sf.size("pts")).otherwise(
        sf.size(sf.filter("pts", lambda p: p <= v))
    )
    per_cell = (
        frame.join(sf.broadcast(small), "gid")
        .groupBy("rid", cell.alias("k"))
        .agg(sf.sum(weight).alias("n"))
    )
    # one row per request reaches the driver: its cells with records, as a list
    got = per_cell.groupBy("rid").agg(sf.collect_list(sf.struct("k", "n")).alias("l")).collect()
    cells = [np.zeros(w.points.shape[0] + 1, dtype=np.int64) for _, w in requests]
    for row in got:
        for k, n in row["l"]:
            cells[int(row["rid"])][int(k)] += int(n)
    return [np.cumsum(c)[:-1].astype(np.int64) for c in cells], len(got)


class PendingLadders:
    """The ladders a Spark release's held groups announced and the counts answered."""

    def __init__(self) -> None:
        self.pending: list[tuple[int, LadderCounts]] = []
        self.answered: dict[tuple[int, tuple[float, ...]], I64] = {}

    def announce(self, gid: int, want: LadderCounts) -> None:
        self.pending.append((gid, want))

    def answer(self, frame: Any, weight: Any, gid: int, points: F64) -> tuple[I64 | None, int, int]:
        """The group's counts at ``points`` if they were announced (every announced
        ladder counted by one job when the first is asked for), the jobs run and the rows
        they collected."""
        key = (gid, tuple(float(p) for p in points))
        jobs = rows = 0
        if key not in self.answered and any(
            g == gid and np.array_equal(w.points, points) for g, w in self.pending
        ):
            got, rows = ladder_counts_job(frame, weight, self.pending)
            jobs = 1
            for (g, w), counts in zip(self.pending, got, strict=True):
                self.answered[(g, tuple(float(p) for p in w.points))] = counts
            self.pending = []
        return self.answered.get(key), jobs, rows
