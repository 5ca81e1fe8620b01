"""Figures for the data owner (non-private diagnostics); needs ``dpsense[plot]``.

matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

from dpsense.plots.sensitivity import plot_explorer, plot_sensitivity_profile

__all__ = ["plot_explorer", "plot_sensitivity_profile"]
