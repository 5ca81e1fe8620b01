"""Windows of order statistics from a bracket of a group's sorted values (numpy only).

The exponential-mechanism quantile reads, around its target rank, the distinct values
holding ranks ``lo..hi`` and the values just before and after, with their multiplicities
and the numbers of records below and above (``_quantile_sampler.window_ranks``). An
engine answers from a bracket: the rows below it, the rows inside it, and the sorted part
of those that left the engine. Rows outside the part become sentinel entries; a window
that reaches one is not in the bracket (None: the caller reads the whole group).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final, Protocol

import numpy as np
from numpy.typing import NDArray

from dpsense.mechanisms._quantile_sampler import window_ranks

__all__ = [
    "BATCH_ROWS",
    "GroupAnswers",
    "HeldGroup",
    "HistogramRecords",
    "cut_window",
    "split_by_group",
    "window_of",
    "window_rows",
]

if TYPE_CHECKING:
    from dpsense.statistics._exact import RecordGrid

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

BATCH_ROWS: Final = 4_000_000
"""Largest number of histogram rows fetched into Python at once (32 MB of doubles)."""


SAMPLE_MOD: Final = 32
"""The sample keeps the values whose hash is 0 modulo this (about one row in 32)."""


class GroupAnswers(Protocol):
    """What a :class:`HeldGroup` asks of the groups an engine holds (``DuckGroups``,
    ``spark_groups.SparkGroups``, ``spark_held.SparkRowGroups``)."""

    sizes: dict[int, int]

    def window(self, gid: int, num: int, den: int, w: int) -> tuple[F64, I64, int, int] | None:
        """The window of ``window_ranks`` of group ``gid``."""
        ...

    def count(self, gid: int, op: str, v: float) -> int:
        """The group's number of records ``x`` with ``x op v`` (op "<" or ">")."""
        ...

    def values(self, gid: int) -> F64:
        """Every record of the group, sorted."""
        ...

    def counts_below(self, gid: int, points: F64) -> I64:
        """The group's numbers of records below each point, in one pass."""
        ...

    def announce_counts(self, gid: int, want: Any) -> None:
        """The points (``quantile_interval.LadderCounts``) the group will ask counts at:
        the engine may count every announced group's at once."""
        ...

    def grid_sum(self, gid: int, grid: RecordGrid) -> int:
        """The exact sum of ``grid.integers`` over the group's records."""
        ...

    def quanta_sum(self, gid: int, lower: float, upper: float, quanta: int) -> int:
        """The exact sum of the records' KSW quanta."""
        ...


class HeldGroup:
    """One group an engine holds: a :class:`~dpsense.statistics._records.HeldRecords` and
    a :class:`~dpsense.mechanisms._quantile_sampler.RecordSource` answered by the engine."""

    def __init__(self, groups: GroupAnswers, gid: int) -> None:
        self.groups = groups
        self.gid = gid

    @property
    def size(self) -> int:
        return self.groups.sizes[self.gid]

    def quantile_window(self, num: int, den: int, w: int) -> tuple[F64, I64, int, int] | None:
        return self.groups.window(self.gid, num, den, w)

    def count_below(self, v: float) -> int:
        return self.groups.count(self.gid, "<", v)

    def count_above(self, v: float) -> int:
        return self.groups.count(self.gid, ">", v)

    def counts_below(self, points: F64) -> I64:
        return self.groups.counts_below(self.gid, points)

    def announce_counts(self, want: Any) -> None:
        self.groups.announce_counts(self.gid, want)

    def sorted_values(self) -> F64:
        return self.groups.values(self.gid)

    def grid_sum(self, grid: RecordGrid) -> int:
        return self.groups.grid_sum(self.gid, grid)

    def quanta_sum(self, lower: float, upper: float, quanta: int) -> int:
        return self.groups.quanta_sum(self.gid, lower, upper, quanta)


class HistogramRecords:
    """A group's clipped records as their histogram (sorted distinct values and their
    multiplicities), answering what the methods ask without rebuilding the records: the
    window of a quantile and the exact sums in O(distinct values) (tied data: a few
    hundred rows for any number of records). Every answer equals the answer of the
    records themselves, so the release is the release of the array."""

    def __init__(self, values: F64, counts: I64) -> None:
        self.values = values
        self.counts = counts
        self._n = int(counts.sum())

    @property
    def size(self) -> int:
        return self._n

    def quantile_window(self, num: int, den: int, w: int) -> tuple[F64, I64, int, int] | None:
        ranks = window_ranks(self._n, num, den, w)
        return None if ranks is None else cut_window(self.values, self.counts, *ranks, self._n)

    def count_below(self, v: float) -> int:
        return int(self.counts[: np.searchsorted(self.values, v, "left")].sum())

    def count_above(self, v: float) -> int:
        return int(self.counts[np.searchsorted(self.values, v, "right") :].sum())

    def counts_below(self, points: F64) -> I64:
        cumulative = np.concatenate([[0], np.cumsum(self.counts)])
        return cumulative[np.searchsorted(self.values, points, "left")].astype(np.int64)

    def sorted_values(self) -> F64:
        return np.repeat(self.values, self.counts)

    def grid_sum(self, grid: RecordGrid) -> int:
        return _weighted(grid.integers(self.values), self.counts)

    def quanta_sum(self, lower: float, upper: float, quanta: int) -> int:
        unit = np.clip((np.clip(self.values, lower, upper) - lower) / (upper - lower), 0.0, 1.0)
        return _weighted(np.rint(unit * quanta).astype(np.int64), self.counts)


def _weighted(k: I64, counts: I64) -> int:
    """sum(k * counts), exactly (Python integers: no int64 overflow)."""
    return sum(int(a) * int(c) for a, c in zip(k.tolist(), counts.tolist(), strict=True))


def _distinct(sorted_x: F64) -> tuple[F64, I64]:
    """Distinct values of a sorted array and their multiplicities."""
    if sorted_x.shape[0] == 0:
        return sorted_x, np.zeros(0, dtype=np.int64)
    new = np.empty(sorted_x.shape[0], dtype=bool)
    new[0] = True
    np.not_equal(sorted_x[1:], sorted_x[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    return sorted_x[starts], np.diff(np.append(starts, sorted_x.shape[0])).astype(np.int64)


def window_rows(c: I64, lo: int, hi: int) -> NDArray[np.bool_]:
    """Which histogram rows (multiplicities ``c`` of sorted distinct values) form the
    window of ranks ``lo..hi``: the rows holding those ranks, the row before the one
    holding ``lo`` and the row after the one holding ``hi``."""
    cb = np.cumsum(c) - c
    nxt = np.append(c[1:], 0)
    prv = np.insert(c[:-1], 0, 0)
    core = (cb <= hi) & (cb + c > lo)
    pred = (cb + c <= lo) & (cb + c + nxt > lo)
    succ = (cb > hi) & (cb - prv <= hi)
    return np.asarray(core | pred | succ, dtype=np.bool_)


def window_of(n: int, below: int, m: int, s0: int, part: F64, lo: int, hi: int) -> Any:
    """The window of ranks lo..hi from a bracket: ``below`` rows under it, ``m`` inside,
    of which the sorted ``part`` starts at offset ``s0``; None when the window reaches
    past the part (the bracket missed it)."""
    values, counts = _distinct(part)
    s1 = s0 + int(counts.sum())
    above = n - below - m
    # rows of the bracket outside the part join the sentinels, and so do the values at a
    # cut end of the part (some of their copies may lie outside it)
    below += s0
    if s0 > 0 and values.shape[0]:
        below, values, counts = below + int(counts[0]), values[1:], counts[1:]
    above += m - s1
    if s1 < m and values.shape[0]:
        above, values, counts = above + int(counts[-1]), values[:-1], counts[:-1]
    # the rows outside the bracket as sentinels: the window must not reach them
    low, high = int(below > 0), int(above > 0)
    values = np.concatenate(([-math.inf] * low, values, [math.inf] * high))
    counts = np.concatenate(([below] * low, counts, [above] * high)).astype(np.int64)
    keep = window_rows(counts, lo, hi)
    if (low and keep[0]) or (high and keep[-1]):
        return None
    return cut_window(values, counts, lo, hi, n, keep)


def cut_window(
    values: F64, counts: I64, lo: int, hi: int, n: int, keep: NDArray[np.bool_] | None = None
) -> tuple[F64, I64, int, int]:
    """The window rows of a histogram and the numbers of records below and above them."""
    if keep is None:
        keep = window_rows(counts, lo, hi)
    first = int(np.argmax(keep))
    before = int(counts[:first].sum())
    values, counts = values[keep], counts[keep]
    return values.copy(), counts.copy(), before, n - before - int(counts.sum())


def split_by_group(gids: I64, x: F64) -> dict[int, F64]:
    """The values ``x`` of each group id in ``gids`` (an unnested list column: each
    group's values usually arrive as one run, and are sorted into runs otherwise)."""
    if gids.shape[0] == 0:
        return {}
    starts = np.flatnonzero(np.concatenate(([True], gids[1:] != gids[:-1])))
    if np.unique(gids[starts]).shape[0] != starts.shape[0]:  # a group in several runs
        order = np.argsort(gids, kind="stable")
        gids, x = gids[order], x[order]
        starts = np.flatnonzero(np.concatenate(([True], gids[1:] != gids[:-1])))
    ends = np.append(starts[1:], gids.shape[0])
    return {int(gids[a]): x[a:b] for a, b in zip(starts, ends, strict=True)}
