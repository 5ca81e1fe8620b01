"""``dpsense caps``: what contribution caps would leave out of your data (NOT PRIVATE)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from dpsense.cli import _options as opt
from dpsense.cli._shared import _console, _print_json
from dpsense.cli.analyze_cmd import banner
from dpsense.errors import InputError, Name

__all__ = ["CAPS_EXAMPLES", "caps_command"]

CAPS_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense caps jobs.csv --privacy-unit person\n"
    "  dpsense caps jobs.csv --privacy-unit person --by year --max-rows-per-unit 1,2,4\n"
)
"""The examples that end ``--help``."""


def _ints(text: str | None, name: str) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(
            Name(name), " must be whole numbers separated by commas, e.g. 1,2,5."
        ) from None


def caps_command(
    data: Annotated[Path, opt.DATA],
    privacy_unit: Annotated[str, typer.Option(help="Column identifying a person.")],
    by: Annotated[str | None, opt.RELEASE_BY] = None,
    max_rows_per_unit: Annotated[
        str | None, typer.Option(help="Candidate caps of rows per person and group (1,2,5).")
    ] = None,
    max_groups_per_unit: Annotated[
        str | None, typer.Option(help="Candidate caps of groups per person (1,4,8).")
    ] = None,
    json_output: Annotated[bool, opt.JSON] = False,
) -> None:
    """NOT PRIVATE: the share of rows and of people that candidate caps
    (--max-rows-per-unit, --max-groups-per-unit) would leave out, for the data owner
    choosing them. A release's interval covers the statistic of the rows kept."""
    from dpsense.caps import caps_report

    report = caps_report(
        str(data),
        privacy_unit=privacy_unit,
        by=[b.strip() for b in by.split(",")] if by else None,
        max_rows_per_unit=_ints(max_rows_per_unit, "max_rows_per_unit"),
        max_groups_per_unit=_ints(max_groups_per_unit, "max_groups_per_unit"),
    )
    if json_output:
        _print_json(
            {
                "non_private": True,
                "privacy_unit": report.privacy_unit,
                "by": list(report.by),
                "caps": [asdict(r) for r in report.rows],
            }
        )
        return
    console = _console()
    banner(console)
    title = f"What caps of {privacy_unit} leave out (NOT PRIVATE)"
    table = Table(title=title, box=box.SIMPLE_HEAVY)
    for name in ("max rows per unit", "max groups per unit", "rows left out", "people cut"):
        table.add_column(name, justify="right")
    for r in report.rows:
        table.add_row(
            str(r.max_rows_per_unit),
            str(r.max_groups_per_unit),
            f"{100 * r.rows_left_out:.3g}%",
            f"{100 * r.units_cut:.3g}%",
        )
    console.print(table)
    console.print(
        "Rows left out: expected over the keyed choice of the groups each person keeps. "
        "Caps chosen from these numbers depend on the data: the release's guarantee does "
        "not cover that choice (docs/tables.md, choosing the caps)."
    )
