"""The lab runs that several tests read, built once per session (once per xdist worker):
the bundled census, the tiny configuration's run on it, and that run again (same data,
configuration and seed) with its progress counted. Runs that deliberately differ (other
data, another seed, the entry points) stay in their tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import dpsense as ds
from dpsense.lab import LabConfig, LabData, LabResults, census_lab_data, run_lab

TINY = LabConfig(
    sensitivity_n=4,
    sensitivity_samples=3,
    max_hamming=2,
    epsilons=(0.5, 1.0),
    method_n=300,
    method_trials=15,
    ratio_ns=(30, 300),
    ratio_trials=30,
    noise_draws=500,
)
"""Seconds, not minutes: enough to exercise every experiment and sentence."""


@dataclass(frozen=True)
class CountedRun:
    """A run of the lab through ``page._run`` with every ``advance`` it reported."""

    results: LabResults
    advanced: tuple[int, ...]


@pytest.fixture(scope="session")
def census() -> LabData:
    return census_lab_data()


@pytest.fixture(scope="session")
def tiny(census: LabData) -> LabResults:
    return run_lab(TINY, census, progress=False)


@pytest.fixture(scope="session")
def tiny_again(census: LabData) -> CountedRun:
    """The same run as ``tiny`` made a second time, to show the same seed gives the same
    findings, through the inner runner so that its progress steps are counted."""
    from dpsense.lab import page

    advanced: list[int] = []
    results = page._run(TINY, census, False, advanced.append)
    return CountedRun(results, tuple(advanced))


@pytest.fixture(scope="session")
def quick_lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, LabResults]:
    """The quick lab page (default data and seed) and its results, for the browser tests."""
    path = tmp_path_factory.mktemp("lab") / "lab.html"
    return path, ds.lab(path, quick=True, progress=False)
