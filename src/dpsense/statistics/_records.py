"""Clipped records held by an engine, and what the methods may ask of them.

A table engine that keeps a large group's records where they are (Spark) hands the
methods an object of this protocol instead of an array: the number of records and the
exact integer sums that the sum, the mean and the KSW mean are made of. Every answer is
exact, so a release from held records is the release from the array of the same records
(the same value for the same seed). Order statistics are asked through
:class:`dpsense.mechanisms._quantile_sampler.RecordSource`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from dpsense.statistics._exact import RecordGrid

__all__ = ["HeldRecords", "grid_sum", "record_count"]


@runtime_checkable
class HeldRecords(Protocol):
    """Clipped records that live in an engine (one group of a table release)."""

    @property
    def size(self) -> int:
        """The number of records n (non-private: never publish)."""
        ...

    def grid_sum(self, grid: RecordGrid) -> int:
        """The exact sum of ``grid.integers(x)`` over the records."""
        ...

    def quanta_sum(self, lower: float, upper: float, quanta: int) -> int:
        """The exact sum of ``rint(clip((x - lower) / (upper - lower), 0, 1) * quanta)``
        over the records (numpy's rint: halves to even)."""
        ...


def record_count(xc: NDArray[np.float64] | HeldRecords) -> int:
    """The number of records of an array or of held records."""
    return xc.size if isinstance(xc, HeldRecords) else int(xc.shape[0])


def grid_sum(grid: RecordGrid, xc: NDArray[np.float64] | HeldRecords) -> int:
    """The exact sum of ``grid.integers(x)``, wherever the records are."""
    return xc.grid_sum(grid) if isinstance(xc, HeldRecords) else grid.integer_sum(xc)
