"""The ``auto`` rule: pick a method from public information only.

The choice depends on the statistic's type, epsilon, delta and the neighbour relation —
never on the data, because the method appears on the receipt and a data-dependent choice
would itself leak. The rule, measured in benchmarks/results/utility.md and quantile_utility.md:

* count, sum: ``global`` (their local sensitivity equals the global one);
* mean: ``ksw`` under add-remove (pure epsilon, never worse than 1.2x the best mean method
  in the study), ``global`` under substitute (n is public: Laplace at w/n);
* quantiles and the median: ``exponential`` — the tie-aware score (sensitivity 1/2 for
  the median under add-remove) and, on a declared resolution grid, permute-and-flip: the
  best of dpsense's own methods (or within Monte Carlo error of it) in every cell of the
  utility grid of benchmarks/results/quantile_utility.md, tied data included, where smooth
  sensitivity is 2-50x worse at small n and ``adaptive`` pays for its private test;
* variance, standard deviation, trimmed mean: ``smooth`` (Student's t for pure epsilon,
  Laplace when delta > 0): their global sensitivity does not shrink with n.
"""

from __future__ import annotations

from dpsense.neighbours import Neighbours
from dpsense.statistics import Count, Mean, Quantile, Quantiles, Statistic, Sum

__all__ = ["choose_method"]


def choose_method(
    statistic: Statistic, *, epsilon: float, delta: float, neighbours: Neighbours
) -> tuple[str, dict[str, object]]:
    """The method (and its options) that ``method="auto"`` uses."""
    if isinstance(statistic, Count | Sum):
        return "global", {}
    if isinstance(statistic, Mean):
        return ("ksw", {}) if neighbours == "add-remove" else ("global", {})
    if isinstance(statistic, Quantile | Quantiles):
        return "exponential", {}
    return "smooth", {}
