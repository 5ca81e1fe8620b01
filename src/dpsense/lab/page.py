"""Run the four experiments and write them as one self-contained HTML page."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from dpsense._progress import ProgressBar, show_progress
from dpsense.lab._common import Advance, no_progress
from dpsense.lab.config import LabConfig, LabData
from dpsense.lab.methods_lab import MethodsResult, methods_units, run_methods
from dpsense.lab.noise_lab import NoiseResult, noise_units, run_noise
from dpsense.lab.ratios_lab import RatiosResult, ratios_units, run_ratios
from dpsense.lab.sensitivity_lab import SensitivityResult, run_sensitivity, sensitivity_units
from dpsense.lab.study_setup import DELTA, PTR_BOUND_FRACTION, SAA_BLOCKS

__all__ = ["LabResults", "render_lab", "run_and_render", "run_lab"]


@dataclass(frozen=True)
class LabResults:
    """What one run of the lab measured."""

    config: LabConfig
    data_name: str
    data_note: str
    quick: bool
    seconds: float
    sensitivity: SensitivityResult
    methods: MethodsResult
    ratios: RatiosResult
    noise: NoiseResult

    @property
    def findings(self) -> tuple[str, str, str, str]:
        """One sentence per experiment, in page order."""
        return (
            self.sensitivity.finding,
            self.methods.finding,
            self.ratios.finding,
            self.noise.finding,
        )


FIGURES = 4


def _units(config: LabConfig) -> int:
    return (
        sensitivity_units(config)
        + methods_units(config)
        + ratios_units(config)
        + noise_units(config)
    )


def run_lab(
    config: LabConfig, data: LabData, *, quick: bool = False, progress: bool | None = None
) -> LabResults:
    """Run every experiment (a transient progress bar on a terminal; see ``_progress``)."""
    bar = ProgressBar(show_progress(progress))
    with bar.running():
        bar.task("dpsense lab", _units(config))
        return _run(config, data, quick, bar.advance)


def run_and_render(
    config: LabConfig,
    data: LabData,
    version: str,
    *,
    quick: bool = False,
    progress: bool | None = None,
) -> tuple[LabResults, str]:
    """Run the experiments and draw the page under one progress bar."""
    bar = ProgressBar(show_progress(progress))
    with bar.running():
        bar.task("dpsense lab", _units(config) + FIGURES)
        results = _run(config, data, quick, bar.advance)
        return results, render_lab(results, version, bar.advance)


def _run(config: LabConfig, data: LabData, quick: bool, advance: Advance) -> LabResults:
    started = time.perf_counter()
    sensitivity = run_sensitivity(config, data, advance)
    methods = run_methods(config, data, advance)
    ratios = run_ratios(config, data, advance)
    noise = run_noise(config, data, advance)
    return LabResults(
        config,
        data.name,
        data.note,
        quick,
        time.perf_counter() - started,
        sensitivity,
        methods,
        ratios,
        noise,
    )


def render_lab(results: LabResults, version: str, advance: Advance = no_progress) -> str:
    """The page (HTML) of one run; ``advance(1)`` after each figure."""
    from dpsense.pages import figure_svg, render_page

    def _section(result: Any, alt: str) -> dict[str, Any]:
        svg = figure_svg(result.figure(), alt)
        advance(1)
        return {"svg": svg, "finding": result.finding}

    cfg = results.config
    return render_page(
        "lab.html.j2",
        version=version,
        title="dpsense lab: the classic experiments of differential privacy",
        data_name=results.data_name,
        data_note=results.data_note,
        mode="quick" if results.quick else "full",
        seed=cfg.seed,
        seconds=f"{results.seconds:.0f}",
        config=cfg,
        delta=f"{DELTA:g}",
        ptr_fraction=f"{PTR_BOUND_FRACTION:g}",
        saa_blocks=SAA_BLOCKS,
        sensitivity=_section(
            results.sensitivity, "local and global sensitivity against Hamming distance"
        ),
        methods=_section(results.methods, "mean absolute error against epsilon, per method"),
        methods_n=f"{results.methods.n:,}",
        ratios=_section(results.ratios, "mean absolute error of private ratios against n"),
        noise=_section(results.noise, "histograms of mechanism noise against their densities"),
    )
