"""Sensitivity of statistics: brute-force exploration and closed forms."""

from dpsense.sensitivity.explorer import empirical_sensitivity, empirical_sensitivity_profile

__all__ = ["empirical_sensitivity", "empirical_sensitivity_profile"]
