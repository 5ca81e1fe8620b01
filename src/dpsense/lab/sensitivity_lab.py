"""Experiment 1: local against global sensitivity, by brute force, at Hamming distance 1 to 3.

Small samples of ages are rounded to a coarse grid so that every dataset of their size can
be enumerated: the local sensitivity at a sample (largest change of the statistic over the
datasets within Hamming distance h of it) against the global sensitivity (largest local
sensitivity over every dataset of that size), both by :func:`empirical_sensitivity`
(add-remove neighbours, the grid as the universe).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dpsense.lab._common import Advance, num, panel_row, relation, sampler
from dpsense.lab.config import AGE_BOUNDS, FloatArray, LabConfig, LabData
from dpsense.sensitivity import empirical_sensitivity
from dpsense.statistics import BoundedStatistic, Mean, Median

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["SensitivityResult", "run_sensitivity", "sensitivity_units"]

STATISTICS = ("median", "mean")
GLOBAL_EVALUATIONS = 50_000_000
"""Enough for 7 ages on an 11-value grid at h = 3 (a few seconds)."""


@dataclass(frozen=True)
class SensitivityResult:
    """Local sensitivities (one per sample and h) and global ones (one per h)."""

    n: int
    step: float
    hammings: tuple[int, ...]
    local: dict[str, FloatArray]
    """statistic -> array (samples, len(hammings))."""
    global_: dict[str, FloatArray]
    """statistic -> array (len(hammings),)."""

    def mean_local(self, statistic: str) -> FloatArray:
        return np.asarray(self.local[statistic].mean(axis=0), dtype=np.float64)

    @property
    def finding(self) -> str:
        first, last = 0, len(self.hammings) - 1
        samples = self.local["median"].shape[0]
        parts = []
        for statistic in STATISTICS:
            local = self.mean_local(statistic)
            glob = self.global_[statistic]
            parts.append(
                f"the {statistic}'s local sensitivity averaged {num(local[first])} years, "
                f"{relation(local[first], glob[first])} its global sensitivity "
                f"({num(glob[first])} years)"
            )
        h_last = self.hammings[last]
        gaps = " and ".join(
            f"{num(self.mean_local(s)[last])} years local against {num(self.global_[s][last])} "
            f"global for the {s}"
            for s in STATISTICS
        )
        return (
            f"Brute force over every dataset of {self.n} ages (multiples of {num(self.step)} "
            f"years): at Hamming distance {self.hammings[first]}, on {samples} samples of "
            f"the data, "
            f"{parts[0]}, and {parts[1]}. At distance {h_last} it is {gaps}."
        )

    def figure(self) -> Figure:
        fig, axes = panel_row(3.8, len(STATISTICS))
        hs = np.array(self.hammings, dtype=np.float64)
        for ax, statistic in zip(axes, STATISTICS, strict=True):
            local = self.local[statistic]
            for j, h in enumerate(self.hammings):
                spread = np.linspace(-0.12, 0.12, local.shape[0])
                ax.scatter(h + spread, local[:, j], s=14, color="#1f77b4", alpha=0.45)
            ax.plot(hs, self.mean_local(statistic), "o-", color="#1f77b4", label="local (mean)")
            ax.plot(hs, self.global_[statistic], "s--", color="#d62728", label="global")
            ax.set_xticks(hs, [str(h) for h in self.hammings])
            ax.set_xlabel("Hamming distance h")
            ax.set_ylabel("sensitivity (years)")
            ax.set_title(f"{statistic} of {self.n} ages")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.legend(loc="best", fontsize=9)
        return fig


def sensitivity_units(config: LabConfig) -> int:
    return len(STATISTICS) * (config.sensitivity_samples + config.max_hamming)


def _statistic(name: str) -> BoundedStatistic:
    return Median(*AGE_BOUNDS) if name == "median" else Mean(*AGE_BOUNDS)


def run_sensitivity(config: LabConfig, data: LabData, advance: Advance) -> SensitivityResult:
    """Local sensitivity at ``sensitivity_samples`` samples and the global one, h = 1..H."""
    lo, hi = AGE_BOUNDS
    step = config.sensitivity_step
    universe = np.arange(lo, hi + step / 2, step)
    gen = sampler(config.seed, "sensitivity")
    rounded = np.clip(np.round(data.ages / step) * step, lo, hi)
    samples = [
        np.sort(gen.choice(rounded, config.sensitivity_n, replace=False))
        for _ in range(config.sensitivity_samples)
    ]
    hammings = tuple(range(1, config.max_hamming + 1))
    local: dict[str, FloatArray] = {}
    glob: dict[str, FloatArray] = {}
    for name in STATISTICS:
        stat = _statistic(name)
        rows = []
        for x in samples:
            rows.append(
                [
                    empirical_sensitivity(stat, x, universe, hamming=h, progress=False)
                    for h in hammings
                ]
            )
            advance(1)
        local[name] = np.array(rows, dtype=np.float64)
        values = []
        for h in hammings:
            values.append(
                empirical_sensitivity(
                    stat,
                    samples[0],
                    universe,
                    hamming=h,
                    scope="global",
                    max_evaluations=GLOBAL_EVALUATIONS,
                    progress=False,
                )
            )
            advance(1)
        glob[name] = np.array(values, dtype=np.float64)
    return SensitivityResult(config.sensitivity_n, step, hammings, local, glob)
