"""dpsense: differentially private statistics that spend noise where the data needs it.

Measure how sensitive a statistic is on the real data — globally, locally, at distance k
and smoothed — and release answers through mechanisms that use that knowledge safely.

>>> import dpsense as ds
>>> median = ds.Median(0, 100)
>>> median([20, 35, 41, 41, 58])
41.0
>>> median.global_sensitivity()
100.0
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from dpsense.errors import (
    BudgetExceededError,
    DPSenseError,
    DPSenseWarning,
    FarBoundsWarning,
    InputError,
    LargeEpsilonWarning,
)
from dpsense.statistics.names import CATALOG

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers
    from dpsense.accountant import Accountant
    from dpsense.accounting import LedgerError
    from dpsense.caps import caps_report
    from dpsense.lab import lab
    from dpsense.mechanisms import (
        DiscreteGaussianMechanism,
        DiscreteLaplaceMechanism,
        ExponentialMechanism,
        GaussianMechanism,
        LaplaceMechanism,
        discrete_gaussian,
        discrete_laplace,
        exponential,
        gaussian,
        laplace,
        report_noisy_max,
    )
    from dpsense.methods import Release
    from dpsense.neighbours import NEIGHBOURS
    from dpsense.noise import SeededRandomnessWarning
    from dpsense.params import smooth_beta
    from dpsense.planning import Plan, plan
    from dpsense.query import QueryResult
    from dpsense.query.join_form import Joined, join
    from dpsense.query.one_step import private_bounds, private_ratio, sample_and_aggregate
    from dpsense.query.per_unit import PerUnit, per_unit
    from dpsense.release import release
    from dpsense.report import report
    from dpsense.sensitivity import empirical_sensitivity
    from dpsense.sql_release import sql
    from dpsense.statistics import *  # noqa: F403  (every class of the catalog)
    from dpsense.statistics import INFINITE_DISTANCE, Statistic, make_statistic
    from dpsense.tables import GroupedRelease

# Subpackages load on first use (PEP 562): `import dpsense` costs little more than numpy,
# and `dpsense --version` does not import DuckDB, SciPy or the engines.
_LAZY: dict[str, str] = {
    "Accountant": "dpsense.accountant",
    "BudgetExceededError": "dpsense.errors",
    "caps_report": "dpsense.caps",
    "DPSenseError": "dpsense.errors",
    "DiscreteGaussianMechanism": "dpsense.mechanisms",
    "DiscreteLaplaceMechanism": "dpsense.mechanisms",
    "ExponentialMechanism": "dpsense.mechanisms",
    "GaussianMechanism": "dpsense.mechanisms",
    "GroupedRelease": "dpsense.tables",
    "INFINITE_DISTANCE": "dpsense.statistics",
    "InputError": "dpsense.errors",
    "FarBoundsWarning": "dpsense.errors",
    "DPSenseWarning": "dpsense.errors",
    "LargeEpsilonWarning": "dpsense.errors",
    "LaplaceMechanism": "dpsense.mechanisms",
    "LedgerError": "dpsense.accounting",
    "NEIGHBOURS": "dpsense.neighbours",
    "QueryResult": "dpsense.query",
    "Release": "dpsense.methods",
    "SeededRandomnessWarning": "dpsense.noise",
    "Statistic": "dpsense.statistics",
    "discrete_gaussian": "dpsense.mechanisms",
    "discrete_laplace": "dpsense.mechanisms",
    "empirical_sensitivity": "dpsense.sensitivity",
    "exponential": "dpsense.mechanisms",
    "gaussian": "dpsense.mechanisms",
    "join": "dpsense.query.join_form",
    "Joined": "dpsense.query.join_form",
    "per_unit": "dpsense.query.per_unit",
    "PerUnit": "dpsense.query.per_unit",
    "lab": "dpsense.lab",
    "laplace": "dpsense.mechanisms",
    "make_statistic": "dpsense.statistics",
    "plan": "dpsense.planning",
    "Plan": "dpsense.planning",
    "private_bounds": "dpsense.query.one_step",
    "private_ratio": "dpsense.query.one_step",
    "release": "dpsense.release",
    "report": "dpsense.report",
    "report_noisy_max": "dpsense.mechanisms",
    "sample_and_aggregate": "dpsense.query.one_step",
    "smooth_beta": "dpsense.params",
    "sql": "dpsense.sql_release",
    **{s.cls: "dpsense.statistics" for s in CATALOG},  # every statistic of the catalog
}


# names that are both a public function and the submodule that defines it: the package
# attribute stays the function (as it always was), the submodule is in sys.modules
_SHADOWED = frozenset({"release", "lab", "report"})


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return  # the import system binding the submodule: keep the function
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dpsense' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "INFINITE_DISTANCE",
    "NEIGHBOURS",
    "Accountant",
    "BudgetExceededError",
    "DPSenseError",
    "DPSenseWarning",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "FarBoundsWarning",
    "GaussianMechanism",
    "GroupedRelease",
    "InputError",
    "Joined",
    "LaplaceMechanism",
    "LargeEpsilonWarning",
    "LedgerError",
    "PerUnit",
    "Plan",
    "QueryResult",
    "Release",
    "SeededRandomnessWarning",
    "Statistic",
    "__version__",
    "caps_report",
    "discrete_gaussian",
    "discrete_laplace",
    "empirical_sensitivity",
    "exponential",
    "gaussian",
    "join",
    "lab",
    "laplace",
    "make_statistic",
    "per_unit",
    "plan",
    "private_bounds",
    "private_ratio",
    "release",
    "report",
    "report_noisy_max",
    "sample_and_aggregate",
    "smooth_beta",
    "sql",
]
__all__ += [s.cls for s in CATALOG]
