"""Public names and defaults, in a module that imports nothing else of dpsense.

The command line builds its options and help from these (``dpsense release --help`` does
not load the engines, the methods or the ledger to print them); the modules that use them
import them from here, so each has one definition.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ACCURACY_ALPHA",
    "BOUNDS_SHARE",
    "FAR_BOUND",
    "INTERVALS",
    "INTERVAL_SHARE",
    "METHODS",
    "SAMPLING_SHARE",
    "SMOOTH_INTERVAL_SHARE",
]

METHODS: Final = (
    "auto",
    "global",
    "smooth",
    "ptr",
    "exponential",
    "adaptive",
    "ksw",
    "bounded-ls",
)
"""The ``method=`` values of ``ds.release``."""

INTERVALS: Final = ("privacy", "privacy+sampling")
"""The ``interval=`` values of ``ds.release`` and ``ds.sql`` (``--interval``): what the
interval covers, the statistic of the data as released, or the population's value when the
data are a simple random sample of it (docs/intervals.md §8)."""

BOUNDS_SHARE: Final = 0.3
"""The default share of epsilon spent on the bounds, measured (docs/bounds_in_release.md §4):
its median and mean errors are within 2 times the best share's in every cell of the study
(the smallest worst case of the shares tried; 0.15 is better in the typical cell, 2.4 times
worse in its worst)."""

INTERVAL_SHARE: Final = 0.15
"""The share of a quantile's epsilon spent on its interval's two endpoints (drawn jointly):
the point keeps the rest (docs/intervals.md §3). Measured
(benchmarks/results/quantile_interval_width.md): with the joint draw, 0.15 gives intervals
no wider than two separate draws at 0.2 did, and the point 6% more of the budget."""

SMOOTH_INTERVAL_SHARE: Final = 0.25
"""The share of a smooth-sensitivity release's epsilon spent on a private upper bound on
its noise scale, for its interval (docs/intervals.md §4)."""

SAMPLING_SHARE: Final = 0.25
"""The share of a statistic's epsilon spent on the ingredients of its population interval
(``interval="privacy+sampling"``: a private count, and a private sum of squares for a mean
or two more order statistics for a quantile); the point keeps the rest
(docs/intervals.md §8)."""

ACCURACY_ALPHA: Final = 0.05
"""Accuracy columns and receipts give the half-width at 95%."""

FAR_BOUND: Final = 2.0**50
"""Bounds found privately this far out (about 1e15) are rarely a column's real range: the
release warns (``FarBoundsWarning``) and its interval is flagged unreliable."""
