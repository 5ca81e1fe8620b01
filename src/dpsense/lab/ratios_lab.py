"""Experiment 3: private ratios a/b (naive, local-bound, KSW), error against the group size.

For each n, n people are drawn from the data once; b counts those in the group, a those in
the subgroup, and each method releases a/b ``ratio_trials`` times (:func:`private_ratio`,
add-remove, one person one row). Naive: noisy a over noisy b. Local-bound: a privately
bounded local sensitivity (approximate DP, delta 1e-6). KSW: the two-count estimator of
Kulesza, Suresh & Wang (2024).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np

from dpsense.lab._common import COLOURS, Advance, log_log_axes, num, relation, sampler, seeded
from dpsense.lab.config import FloatArray, LabConfig, LabData
from dpsense.lab.study_setup import DELTA
from dpsense.query.one_step import private_ratio

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["RATIO_LABELS", "RatiosResult", "ratios_units", "run_ratios"]

RATIO_LABELS: Final = {"naive": "naive", "local-bound": "local-bound", "ksw": "KSW"}


@dataclass(frozen=True)
class RatiosResult:
    """Mean absolute error of each method at each n."""

    label: str
    epsilon: float
    ns: tuple[int, ...]
    trials: int
    truth: FloatArray
    mae: dict[str, FloatArray]

    def _at(self, j: int) -> str:
        errors = {m: float(v[j]) for m, v in self.mae.items()}
        ranked = sorted(errors, key=lambda m: errors[m])
        best, worst = ranked[0], ranked[-1]
        return (
            f"at n = {self.ns[j]:,} people the smallest error is {RATIO_LABELS[best]}'s "
            f"({num(errors[best])}), {relation(errors[best], errors[worst])} "
            f"{RATIO_LABELS[worst]}'s ({num(errors[worst])})"
        )

    @property
    def finding(self) -> str:
        return (
            f"Private {self.label} at epsilon {self.epsilon:g}: {self._at(0)}; "
            f"{self._at(len(self.ns) - 1)}."
        )

    def figure(self) -> Figure:
        from dpsense.pages import new_figure

        fig = new_figure(10, 4.0)
        ax = fig.add_subplot()
        for method, errors in self.mae.items():
            ax.plot(self.ns, errors, "o-", color=COLOURS[method], label=RATIO_LABELS[method])
        log_log_axes(
            ax,
            (self.ns, [f"{n:,}" for n in self.ns]),
            "n (people drawn from the data)",
            "mean absolute error of a/b",
            f"{self.label}, epsilon = {self.epsilon:g}",
        )
        ax.legend(fontsize=9)
        return fig


def ratios_units(config: LabConfig) -> int:
    return len(RATIO_LABELS) * len(config.ratio_ns)


def run_ratios(config: LabConfig, data: LabData, advance: Advance) -> RatiosResult:
    """Each method at each n (sizes above the data's are left out)."""
    people = data.ages.shape[0]
    ns = tuple(n for n in config.ratio_ns if n <= people) or (people,)
    gen = sampler(config.seed, "ratios")
    counts = []
    for n in ns:
        chosen = gen.choice(people, n, replace=False)
        counts.append((int(data.in_subgroup[chosen].sum()), int(data.in_group[chosen].sum())))
    truth = np.array([a / b if b else 0.5 for a, b in counts])
    mae: dict[str, FloatArray] = {}
    for method in RATIO_LABELS:
        delta = DELTA if method == "local-bound" else 0.0
        row = np.empty(len(ns))
        for j, (a, b) in enumerate(counts):
            rng = seeded(config.seed, "ratios", method, ns[j])
            errors = [
                abs(
                    private_ratio(
                        a, b, epsilon=config.ratio_epsilon, delta=delta, method=method, rng=rng
                    ).value
                    - truth[j]
                )
                for _ in range(config.ratio_trials)
            ]
            row[j] = float(np.mean(errors))
            advance(1)
        mae[method] = row
    return RatiosResult(data.ratio_label, config.ratio_epsilon, ns, config.ratio_trials, truth, mae)
