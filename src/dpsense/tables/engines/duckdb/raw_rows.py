"""Where a DuckDB release's window and histogram passes read a column's rows.

Split from ``groups``: the raw (unclipped) rows of a held column, keyed by the by-columns'
own values, and the thresholds on them that select a bracket of clipped values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["RawRows"]

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class RawRows:
    """Where the window pass reads the rows: ``sql`` yields the group columns ``on`` and
    ``x``, the value before clipping to ``[lower, upper]``; ``keys`` is SQL mapping those
    group columns to ``gid`` (None when ``on`` is ``("gid",)`` itself). Conditions on the
    raw value select the rows whose clipped value lies in a bracket, so DuckDB filters the
    column as it reads it and the clip happens on the few rows that leave it."""

    sql: str
    on: tuple[str, ...]
    keys: str | None
    lower: float | None
    upper: float | None

    def threshold(self, a: float, side: str) -> float:
        """The raw-value threshold of the clipped-value condition ``v >= a`` (``side``
        "low") or ``v <= a`` ("high"): the same rows, as clipping is monotone and a bracket
        end lies in [lower, upper]."""
        if side == "low":
            return -math.inf if self.lower is not None and a <= self.lower else a
        return math.inf if self.upper is not None and a >= self.upper else a

    def clip(self, x: F64) -> F64:
        if self.lower is None or self.upper is None:
            return x
        return np.minimum(np.maximum(x, self.lower), self.upper)
