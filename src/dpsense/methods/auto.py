"""The ``auto`` rule: pick a method from public information only.

The choice depends on the statistic's type, epsilon, delta and the neighbour relation —
never on the data, because the method appears on the receipt and a data-dependent choice
would itself leak. The rule, measured in benchmarks/results/utility.md:

* count, sum: ``global`` (their local sensitivity equals the global one);
* mean: ``ksw`` under add-remove (pure epsilon, never worse than 1.2x the best mean method
  in the study), ``global`` under substitute (n is public: Laplace at w/n);
* quantiles and the median: ``adaptive`` — a differentially private stability test (part
  of the mechanism, paid from its budget) chooses between smooth sensitivity and the
  exponential mechanism, because neither wins everywhere: smooth sensitivity is orders of
  magnitude better deep inside ties, the exponential mechanism on spread-out data;
* variance, standard deviation, trimmed mean: ``smooth`` (Student's t for pure epsilon,
  Laplace when delta > 0): their global sensitivity does not shrink with n.
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
        return "adaptive", {}
    return "smooth", {}
