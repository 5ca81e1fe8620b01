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

from dpsense.errors import BudgetExceededError, DPSenseError, InputError
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
from dpsense.neighbours import NEIGHBOURS
from dpsense.noise import SeededRandomnessWarning
from dpsense.params import smooth_beta
from dpsense.sensitivity import empirical_sensitivity
from dpsense.statistics import (
    INFINITE_DISTANCE,
    Count,
    Mean,
    Median,
    Quantile,
    Statistic,
    Std,
    Sum,
    TrimmedMean,
    Variance,
    make_statistic,
)

__version__ = "0.1.0"

__all__ = [
    "INFINITE_DISTANCE",
    "NEIGHBOURS",
    "BudgetExceededError",
    "Count",
    "DPSenseError",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "GaussianMechanism",
    "InputError",
    "LaplaceMechanism",
    "Mean",
    "Median",
    "Quantile",
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
    "laplace",
    "make_statistic",
    "report_noisy_max",
    "smooth_beta",
]
