"""The plan and the result of the engine's bounding (the SQL of the rows to bound is the
DuckDB engine's, :mod:`dpsense.tables.engines.duckdb.rows_sql`).

:class:`TablePlan` says what to read and how to bound it (all public); a
:class:`BoundedTable` is the bounded table inside DuckDB with its groups (``dpsense_hist``:
gid, v, c) and the groups an engine keeps. ``engine.bound_table`` and
``held_scan.held_table`` build them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpsense.data.source import TableSource
from dpsense.tables.rows.plan import TablePlan
from dpsense.tables.rows.windows import BATCH_ROWS, HistogramRecords

__all__ = ["BoundedTable", "TablePlan", "summarise"]


@dataclass
class BoundedTable:
    """The bounded table inside DuckDB, with its groups."""

    source: TableSource
    keys: list[tuple[Any, ...]]
    """Each group's by-values (native types), in group-id order."""
    units: np.ndarray
    """Each group's number of distinct units after bounding (non-private: never publish)."""
    rows: np.ndarray
    """Each group's number of rows after bounding (non-private)."""
    distinct: np.ndarray
    """Each group's number of distinct values (the rows of its histogram)."""
    has_values: bool
    held: Mapping[int, Any] = field(default_factory=dict)
    """Large groups an engine keeps (Spark): gid -> an object answering for their records
    (``tables.spark_groups.SparkGroup``), yielded by :meth:`values` instead of an array."""

    def values(self, gids: Sequence[int], *, histograms: bool = False) -> Iterator[tuple[int, Any]]:
        """(gid, sorted clipped values) for each gid in increasing order; for a group in
        ``held``, the object that answers for its records. With ``histograms``, the other
        groups come as their histogram (:class:`~dpsense.tables.rows.windows.HistogramRecords`,
        whose ``sorted_values`` rebuilds the array when a method needs every record).

        DuckDB hands over each group as a histogram (distinct values and their counts, in
        order), fetched in batches of at most ``BATCH_ROWS`` histogram rows. On tied data
        (integers, a resolution grid) the histogram is tiny whatever the number of rows,
        and a quantile or a sum reads it without rebuilding the records.
        """
        order = sorted(gids)
        i = 0
        con = self.source.con
        while i < len(order):
            if order[i] in self.held:
                yield order[i], self.held[order[i]]
                i += 1
                continue
            j, total = i, 0
            while (
                j < len(order)
                and order[j] not in self.held
                and (j == i or total + self.distinct[order[j]] <= BATCH_ROWS)
            ):
                total += int(self.distinct[order[j]])
                j += 1
            chunk = order[i:j]
            if not self.has_values:  # a count: only the number of rows is read
                for gid in chunk:
                    n = np.array([int(self.rows[gid])], dtype=np.int64)
                    zero = np.zeros(1)
                    yield gid, HistogramRecords(zero, n) if histograms else np.repeat(zero, n)
            else:
                got = con.execute(
                    "SELECT gid, v, c FROM dpsense_hist WHERE gid BETWEEN ? AND ? ORDER BY gid, v",
                    [chunk[0], chunk[-1]],
                ).fetchnumpy()
                gid_col = np.asarray(got["gid"], dtype=np.int64)
                vals = np.asarray(got["v"], dtype=np.float64)
                counts = np.asarray(got["c"], dtype=np.int64)
                for gid in chunk:
                    lo = int(np.searchsorted(gid_col, gid, side="left"))
                    hi = int(np.searchsorted(gid_col, gid, side="right"))
                    v, c = vals[lo:hi], counts[lo:hi]
                    yield gid, HistogramRecords(v, c) if histograms else np.repeat(v, c)
            i = j


def summarise(
    source: TableSource,
    group_keys: list[tuple[Any, ...]],
    units: np.ndarray | None,
    has_values: bool,
) -> BoundedTable:
    """The BoundedTable over ``dpsense_hist`` (gid, v, c) in ``source.con``: each group's
    rows and distinct values counted there; ``units`` None means every row is a unit."""
    ngroups = len(group_keys)
    summary = source.con.execute(
        "SELECT gid, sum(c)::BIGINT AS n, count(*)::BIGINT AS d FROM dpsense_hist GROUP BY gid"
    ).fetchnumpy()
    rows = np.zeros(ngroups, dtype=np.int64)
    distinct = np.zeros(ngroups, dtype=np.int64)
    g_idx = np.asarray(summary["gid"], dtype=np.int64)
    rows[g_idx] = np.asarray(summary["n"], dtype=np.int64)
    distinct[g_idx] = np.asarray(summary["d"], dtype=np.int64)
    return BoundedTable(
        source, group_keys, rows.copy() if units is None else units, rows, distinct, has_values
    )
