"""Experiment 2: global vs smooth vs PTR vs sample-and-aggregate vs exponential, over epsilon.

Every method releases the median and the mean of the same ages ``method_trials`` times at
each epsilon; the error is the mean absolute difference from the non-private value. The
releases are those of the utility study (:func:`dpsense.lab.study_setup.make_draw`): smooth
sensitivity with Student's t noise (Nissim, Raskhodnikova & Smith 2007), propose-test-release
proposing w/1000 (Dwork & Lei 2009), sample-and-aggregate with 200 blocks, the exponential
mechanism over the bounds (McSherry & Talwar 2007; the median only). A PTR refusal counts
as the error of answering the midpoint of the bounds, as in the study.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np

from dpsense.lab._common import (
    COLOURS,
    Advance,
    log_log_axes,
    num,
    panel_row,
    relation,
    sampler,
    stream,
    times,
)
from dpsense.lab.config import AGE_BOUNDS, FloatArray, LabConfig, LabData
from dpsense.lab.study_setup import make_draw
from dpsense.statistics import BoundedStatistic, Mean, Median

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["METHOD_LABELS", "MethodsResult", "methods_units", "run_methods"]

METHOD_LABELS: Final = {
    "global": "global sensitivity",
    "smooth": "smooth sensitivity",
    "ptr": "propose-test-release",
    "sample-aggregate": "sample-and-aggregate",
    "exponential": "exponential mechanism",
}
_IN_SENTENCE: Final = {**METHOD_LABELS, "exponential": "the exponential mechanism"}
_DRAW_KEY: Final = {"smooth": "smooth-t"}
"""The study's key of a lab method (smooth sensitivity releases with Student's t noise)."""
METHODS_OF: Final = {
    "median": ("global", "smooth", "ptr", "sample-aggregate", "exponential"),
    "mean": ("global", "smooth", "ptr", "sample-aggregate"),
}
PLOT_FLOOR: Final = 1e-6
"""Errors below this (years) are drawn as a marker at the panel's foot: the axes are
logarithmic."""


@dataclass(frozen=True)
class MethodsResult:
    """Mean absolute errors: statistic -> method -> one per epsilon."""

    n: int
    epsilons: tuple[float, ...]
    trials: int
    compare_at: float
    truth: dict[str, float]
    mae: dict[str, dict[str, FloatArray]]
    refusal_rate: dict[str, FloatArray]
    """PTR's refusal rate per epsilon, per statistic."""

    def _sentence(self, statistic: str) -> str:
        j = self.epsilons.index(self.compare_at)
        errors = {m: float(v[j]) for m, v in self.mae[statistic].items()}
        ranked = sorted(errors, key=lambda m: errors[m])
        best, runner_up = ranked[0], ranked[1]
        exact = [m for m in ranked if errors[m] == 0.0]
        if exact:
            names = " and ".join(_IN_SENTENCE[m] for m in exact)
            return (
                f"{names} released the {statistic} exactly in every trial, against a mean "
                f"absolute error of {num(errors['global'])} years for global sensitivity"
            )
        if best == "global":
            return (
                f"global sensitivity is the most accurate for the {statistic} "
                f"(mean absolute error {num(errors[best])} years); the runner-up, "
                f"{_IN_SENTENCE[runner_up]}, errs {times(errors[runner_up], errors[best])} more"
            )
        return (
            f"{_IN_SENTENCE[best]}'s {statistic} error ({num(errors[best])} years) is "
            f"{relation(errors[best], errors['global'])} global sensitivity's "
            f"({num(errors['global'])})"
        )

    @property
    def finding(self) -> str:
        j = self.epsilons.index(self.compare_at)
        refused = 100.0 * float(self.refusal_rate["median"][j])
        return (
            f"At epsilon {self.compare_at:g} on {self.n:,} ages, {self._sentence('median')}; "
            f"for the mean, {self._sentence('mean')}. "
            f"Propose-test-release refused {refused:.0f}% of the median releases there."
        )

    def figure(self) -> Figure:
        fig, axes = panel_row(4.6, len(METHODS_OF))
        floored = False
        eps = np.asarray(self.epsilons, dtype=float)
        for ax, statistic in zip(axes, METHODS_OF, strict=True):
            every = np.concatenate(
                [np.asarray(e, dtype=float) for e in self.mae[statistic].values()]
            )
            shown_low = every[every >= PLOT_FLOOR]
            # an error of (about) 0 has no place on a log axis: a gap in its line, and a
            # marker at the panel's foot, not a line plunging to an arbitrary floor
            foot = float(shown_low.min()) / 3 if shown_low.size else PLOT_FLOOR
            for k, (method, errors) in enumerate(self.mae[statistic].items()):
                errors = np.asarray(errors, dtype=float)
                exact = errors < PLOT_FLOOR
                floored = floored or bool(np.any(exact))
                ax.plot(
                    eps,
                    np.where(exact, np.nan, errors),
                    "o-",
                    color=COLOURS[method],
                    label=METHOD_LABELS[method],
                )
                if np.any(exact):
                    # side by side where several methods are exact at one epsilon
                    ax.plot(eps[exact] * 1.07**k, np.full(int(exact.sum()), foot), "v",
                            color=COLOURS[method], markersize=7)  # fmt: skip
            log_log_axes(
                ax,
                (self.epsilons, [f"{e:g}" for e in self.epsilons]),
                "epsilon",
                "mean absolute error (years)",
                f"{statistic} of {self.n:,} ages (true {num(self.truth[statistic])})",
            )
        handles, labels = axes[0].get_legend_handles_labels()
        note = f" (▼ at a panel's foot: an error below {PLOT_FLOOR:g}, exact in practice)"
        fig.legend(
            handles,
            labels,
            loc="outside lower center",
            ncol=len(labels),
            fontsize=9,
            frameon=False,
            title=f"{self.trials} releases per point" + (note if floored else ""),
            title_fontsize=9,
        )
        return fig


def methods_units(config: LabConfig) -> int:
    return sum(len(m) for m in METHODS_OF.values()) * len(config.epsilons)


def _statistic(name: str) -> BoundedStatistic:
    return Median(*AGE_BOUNDS) if name == "median" else Mean(*AGE_BOUNDS)


def _ages(config: LabConfig, data: LabData) -> FloatArray:
    ages = np.clip(data.ages, *AGE_BOUNDS)
    if config.method_n is None or config.method_n >= ages.shape[0]:
        return ages
    gen = sampler(config.seed, "methods")
    return np.asarray(gen.choice(ages, config.method_n, replace=False), dtype=np.float64)


def run_methods(config: LabConfig, data: LabData, advance: Advance) -> MethodsResult:
    """Every method at every epsilon, ``method_trials`` releases each."""
    xc = _ages(config, data)
    as_list = xc.tolist
    truth: dict[str, float] = {}
    mae: dict[str, dict[str, FloatArray]] = {}
    refusals: dict[str, FloatArray] = {}
    for statistic, methods in METHODS_OF.items():
        stat = _statistic(statistic)
        truth[statistic] = float(stat(xc))
        mae[statistic] = {}
        for method in methods:
            row = np.empty(len(config.epsilons))
            refused_row = np.zeros(len(config.epsilons))
            for j, eps in enumerate(config.epsilons):
                key = _DRAW_KEY.get(method, method)
                seed = stream(config.seed, "methods", statistic, method, eps)
                draw = make_draw(statistic, key, xc, stat, eps, seed, as_list)
                errors = np.empty(config.method_trials)
                refused = 0
                for i in range(config.method_trials):
                    value = draw()
                    if value is None:  # refused: the analyst falls back on the midpoint
                        refused += 1
                        value = stat.midpoint
                    errors[i] = abs(value - truth[statistic])
                row[j] = float(errors.mean())
                refused_row[j] = refused / config.method_trials
                advance(1)
            mae[statistic][method] = row
            if method == "ptr":
                refusals[statistic] = refused_row
    return MethodsResult(
        xc.shape[0], config.epsilons, config.method_trials, config.compare_at, truth, mae, refusals
    )
