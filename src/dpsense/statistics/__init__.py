"""Statistics with closed-form global, local, distance-k and smooth sensitivity.

The classes load on first use (PEP 562): :mod:`dpsense.statistics.names`, the catalog of
their names, imports nothing, so the command line lists them without numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dpsense.statistics.names import CATALOG, STATISTIC_NAMES

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers
    from dpsense.statistics._profile import INFINITE_DISTANCE, Profile
    from dpsense.statistics.base import BoundedStatistic, Statistic
    from dpsense.statistics.build import make_statistic, statistic_key
    from dpsense.statistics.moments import Count, Mean, Sum
    from dpsense.statistics.quantile import Median, Quantile
    from dpsense.statistics.quantiles import Quantiles
    from dpsense.statistics.trimmed import TrimmedMean
    from dpsense.statistics.variance import Std, Variance

__all__ = [
    "INFINITE_DISTANCE",
    "STATISTIC_NAMES",
    "BoundedStatistic",
    "Count",
    "Mean",
    "Median",
    "Profile",
    "Quantile",
    "Quantiles",
    "Statistic",
    "Std",
    "Sum",
    "TrimmedMean",
    "Variance",
    "make_statistic",
    "statistic_key",
]

_LAZY: dict[str, str] = {
    "INFINITE_DISTANCE": "_profile",
    "Profile": "_profile",
    "BoundedStatistic": "base",
    "Statistic": "base",
    "make_statistic": "build",
    "statistic_key": "build",
    **{s.cls: s.module for s in CATALOG},
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
