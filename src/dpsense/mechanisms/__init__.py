"""Base mechanisms: additive noise (Laplace, Gaussian, discrete) and selection."""

from __future__ import annotations

from dpsense.mechanisms._common import MechanismResult
from dpsense.mechanisms.additive import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    discrete_gaussian,
    discrete_laplace,
    gaussian,
    laplace,
)
from dpsense.mechanisms.calibration import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
)
from dpsense.mechanisms.selection import (
    ExponentialMechanism,
    Selection,
    exponential,
    report_noisy_max,
)

__all__ = [
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "MechanismResult",
    "Selection",
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "discrete_gaussian",
    "discrete_laplace",
    "exponential",
    "gaussian",
    "laplace",
    "report_noisy_max",
]
