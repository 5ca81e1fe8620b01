"""``dpsense report``: the privacy report of a ledger, as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dpsense.errors import InputError

__all__ = ["REPORT_EXAMPLES", "report_command"]

REPORT_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense budget init budget.db --epsilon 2\n"
    "  dpsense release data.csv -c income -s median --lower 0 --upper 1e6 --epsilon 0.5 \\\n"
    "      --ledger budget.db\n"
    "  dpsense report budget.db -o report.html\n"
)
"""The examples that end ``--help``."""


def report_command(
    ledger: Annotated[
        Path, typer.Argument(metavar="LEDGER", help="The ledger file (dpsense budget init).")
    ],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="The HTML file to write (replaced if it exists)."),
    ],
) -> None:
    """Write the privacy report of a ledger: budget, every release with its values and
    error bars, and each guarantee in plain words. One HTML file that works offline; the
    ledger is only read."""
    from dpsense.report import report

    if not output.is_dir() and output.suffix.lower() not in (".html", ".htm"):
        raise InputError(
            f"--output must name an .html file (the report is a web page). Got "
            f"{output.name!r}; write e.g. -o {output.with_suffix('.html').name}."
        )
    written = report(ledger, output)
    typer.echo(f"wrote the privacy report of {ledger} to {written}")
