"""The ``auto`` rule: pick a method from public information only.

The choice depends on the statistic's type, epsilon, delta and the neighbour relation —
never on the data, because a data-dependent choice would itself leak (the method appears
on the receipt). The rule and the utility study behind it are in docs/frameworks.md.
"""

from __future__ import annotations

from dpsense.neighbours import Neighbours
from dpsense.statistics import Count, Mean, Quantile, Statistic, Sum

__all__ = ["choose_method"]


def choose_method(
    statistic: Statistic, *, epsilon: float, delta: float, neighbours: Neighbours
) -> tuple[str, dict[str, object]]:
    """The method (and its options) that ``method="auto"`` uses."""
    if isinstance(statistic, Count | Sum):
        return "global", {}
    if isinstance(statistic, Mean):
        return ("ksw", {}) if neighbours == "add-remove" else ("global", {})
    if isinstance(statistic, Quantile):
        return "smooth", {}
    return "smooth", {}
