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

from dpsense.accountant import Accountant
from dpsense.accounting import LedgerError
from dpsense.bounds import private_bounds
from dpsense.errors import BudgetExceededError, DPSenseError, InputError
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
from dpsense.methods.ratio import private_ratio
from dpsense.methods.sample_aggregate import sample_and_aggregate
from dpsense.neighbours import NEIGHBOURS
from dpsense.noise import SeededRandomnessWarning
from dpsense.params import smooth_beta
from dpsense.query import QueryResult
from dpsense.release import release
from dpsense.report import report
from dpsense.sensitivity import empirical_sensitivity
from dpsense.sql_release import sql
from dpsense.statistics import (
    INFINITE_DISTANCE,
    Count,
    Mean,
    Median,
    Quantile,
    Quantiles,
    Statistic,
    Std,
    Sum,
    TrimmedMean,
    Variance,
    make_statistic,
)
from dpsense.tables import GroupedRelease

__version__ = "0.1.0"

__all__ = [
    "INFINITE_DISTANCE",
    "NEIGHBOURS",
    "Accountant",
    "BudgetExceededError",
    "Count",
    "DPSenseError",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "GaussianMechanism",
    "GroupedRelease",
    "InputError",
    "LaplaceMechanism",
    "LedgerError",
    "Mean",
    "Median",
    "Quantile",
    "Quantiles",
    "QueryResult",
    "Release",
    "SeededRandomnessWarning",
    "Statistic",
    "Std",
    "Sum",
    "TrimmedMean",
    "Variance",
    "__version__",
    "discrete_gaussian",
    "discrete_laplace",
    "empirical_sensitivity",
    "exponential",
    "gaussian",
    "lab",
    "laplace",
    "make_statistic",
    "private_bounds",
    "private_ratio",
    "release",
    "report",
    "report_noisy_max",
    "sample_and_aggregate",
    "smooth_beta",
    "sql",
]
