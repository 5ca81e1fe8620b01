"""Experiment 4: the noise of the Laplace, Gaussian and exponential mechanisms.

Many draws of each mechanism at one epsilon (sensitivity 1) against the distribution it
should have: the Laplace density of scale 1/epsilon (Dwork, McSherry, Nissim & Smith 2006),
the Gaussian density of the analytic sigma for (epsilon, 1e-6) (Balle & Wang 2018), and the
exponential mechanism's exact selection probabilities (McSherry & Talwar 2007) when it
picks the median of a sample of ages among the integers 0..100 with utility
-|#{x < c} - #{x > c}| (sensitivity 1 under add-remove).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np

from dpsense.lab._common import Advance, num, panel_row, sampler, seeded
from dpsense.lab.config import AGE_BOUNDS, FloatArray, LabConfig, LabData
from dpsense.lab.study_setup import DELTA
from dpsense.mechanisms import ExponentialMechanism, GaussianMechanism, LaplaceMechanism

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["NoiseResult", "noise_units", "run_noise"]

EXPONENTIAL_SAMPLE: Final = 25
"""Ages in the exponential mechanism's example (a small sample shows a wide spread)."""


@dataclass(frozen=True)
class NoiseResult:
    """The draws of each mechanism and what theory says they should be."""

    epsilon: float
    laplace: FloatArray
    laplace_scale: float
    gaussian: FloatArray
    gaussian_sigma: float
    candidates: FloatArray
    probabilities: FloatArray
    chosen: FloatArray
    sample_median: float

    @property
    def total_variation(self) -> float:
        """Total variation between the exponential draws' frequencies and the exact law."""
        counts = np.array([np.sum(self.chosen == c) for c in self.candidates], dtype=np.float64)
        return float(0.5 * np.abs(counts / self.chosen.size - self.probabilities).sum())

    @property
    def finding(self) -> str:
        near = float(np.mean(np.abs(self.chosen - self.sample_median) <= 5.0))
        return (
            f"With {self.laplace.size:,} draws each at epsilon {self.epsilon:g}: the Laplace "
            f"noise's mean absolute value is {num(float(np.abs(self.laplace).mean()))} "
            f"(theory: the scale, {num(self.laplace_scale)}); the Gaussian noise's standard "
            f"deviation is {num(float(self.gaussian.std()))} (theory: sigma = "
            f"{num(self.gaussian_sigma)}); the exponential mechanism's choices are within "
            f"total variation {num(self.total_variation)} of its exact probabilities, and "
            f"{100 * near:.0f}% of them lie within 5 years of the sample's median "
            f"({num(self.sample_median)})."
        )

    def figure(self) -> Figure:
        fig, (ax_l, ax_g, ax_e) = panel_row(3.4, 3)
        for ax, draws, name in (
            (ax_l, self.laplace, "Laplace"),
            (ax_g, self.gaussian, "Gaussian"),
        ):
            spread = float(np.quantile(np.abs(draws), 0.995))
            grid = np.linspace(-spread, spread, 400)
            ax.hist(draws, bins=60, range=(-spread, spread), density=True, color="#9ecae1")
            if name == "Laplace":
                b = self.laplace_scale
                density = np.exp(-np.abs(grid) / b) / (2 * b)
                title = f"Laplace, scale {num(b)}"
            else:
                s = self.gaussian_sigma
                density = np.exp(-0.5 * (grid / s) ** 2) / (s * math.sqrt(2 * math.pi))
                title = f"Gaussian, sigma {num(s)}"
            ax.plot(grid, density, color="#d62728", label="density")
            ax.set_title(title)
            ax.set_xlabel("noise")
            ax.legend(fontsize=8, loc="upper right")
        ax_l.set_ylabel("density")
        counts = np.array([np.sum(self.chosen == c) for c in self.candidates], dtype=np.float64)
        ax_e.bar(self.candidates, counts / self.chosen.size, width=1.0, color="#9ecae1")
        ax_e.plot(
            self.candidates,
            self.probabilities,
            color="#d62728",
            drawstyle="steps-mid",
            label="exact law",
        )
        ax_e.axvline(self.sample_median, color="#555555", linestyle=":", label="sample median")
        # zoom on the candidates with a visible chance (the rest of 0..100 is flat at ~0)
        shown = self.candidates[self.probabilities > 1e-4]
        ax_e.set_xlim(float(shown.min()) - 3.0, float(shown.max()) + 3.0)
        ax_e.set_title(f"exponential, median of {EXPONENTIAL_SAMPLE} ages")
        ax_e.set_xlabel("chosen age")
        ax_e.set_ylabel("probability")
        ax_e.legend(fontsize=8, loc="upper right")
        return fig


def noise_units(config: LabConfig) -> int:
    del config
    return 3


def run_noise(config: LabConfig, data: LabData, advance: Advance) -> NoiseResult:
    """``noise_draws`` draws of each mechanism (sensitivity 1)."""
    eps, draws = config.noise_epsilon, config.noise_draws
    laplace = LaplaceMechanism(sensitivity=1.0, epsilon=eps)
    lap = laplace.release(np.zeros(draws), rng=seeded(config.seed, "noise", "laplace"))
    advance(1)
    gaussian = GaussianMechanism(sensitivity=1.0, epsilon=eps, delta=DELTA)
    gauss = gaussian.release(np.zeros(draws), rng=seeded(config.seed, "noise", "gaussian"))
    advance(1)
    gen = sampler(config.seed, "noise", "sample")
    ages = np.clip(data.ages, *AGE_BOUNDS)
    sample = gen.choice(ages, min(EXPONENTIAL_SAMPLE, ages.size), replace=False)
    candidates = np.arange(AGE_BOUNDS[0], AGE_BOUNDS[1] + 1.0)
    below = np.searchsorted(np.sort(sample), candidates, side="left")
    above = sample.size - np.searchsorted(np.sort(sample), candidates, side="right")
    utility = -np.abs(below - above).astype(np.float64)
    mechanism = ExponentialMechanism(sensitivity=1.0, epsilon=eps)
    picked = mechanism.sample_indices(
        utility, draws, rng=seeded(config.seed, "noise", "exponential")
    )
    advance(1)
    return NoiseResult(
        eps,
        np.asarray(lap.value, dtype=np.float64),
        lap.scale,
        np.asarray(gauss.value, dtype=np.float64),
        gaussian.sigma,
        candidates,
        mechanism.probabilities(utility),
        candidates[picked],
        float(np.sort(sample)[(sample.size - 1) // 2]),
    )
