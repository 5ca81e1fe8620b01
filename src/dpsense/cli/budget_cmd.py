"""``dpsense budget``: create a ledger with a total budget and show what it holds."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from dpsense.accounting import Ledger
from dpsense.cli._shared import _console, _print_json

__all__ = ["budget_app"]

INIT_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense budget init budget.db --epsilon 10\n"
    "  dpsense budget init budget.db --epsilon 5 --delta 1e-6\n"
)
"""The examples that end ``--help``."""

SHOW_EXAMPLES = (
    "Examples:\n\n\b\n  dpsense budget show budget.db\n  dpsense budget show budget.db --json\n"
)
"""The examples that end ``--help``."""

budget_app = typer.Typer(
    help="Privacy-budget ledgers (SQLite files shared by every process that uses them).",
    no_args_is_help=True,
    epilog=(
        "Examples:\n\n\b\n"
        "  dpsense budget init budget.db --epsilon 10\n"
        "  dpsense release data.csv -c x -s mean --lower 0 --upper 1 --epsilon 1 \\\n"
        "      --ledger budget.db\n"
        "  dpsense budget show budget.db\n"
    ),
    add_completion=False,
    rich_markup_mode=None,
)


@budget_app.command("init", no_args_is_help=True, epilog=INIT_EXAMPLES)
def init(
    ledger: Annotated[Path, typer.Argument(help="The ledger file to create.")],
    epsilon: Annotated[float, typer.Option(help="Total epsilon budget.")],
    delta: Annotated[float, typer.Option(help="Total delta budget.")] = 0.0,
    composition: Annotated[
        str, typer.Option(help="basic, or advanced (needs --delta-slack).")
    ] = "basic",
    delta_slack: Annotated[
        float, typer.Option(help="advanced composition: the delta' spent from --delta.")
    ] = 0.0,
) -> None:
    """Create a ledger with a total (epsilon, delta) budget; never overwrites a file."""
    created = Ledger.create(
        ledger, epsilon=epsilon, delta=delta, composition=composition, delta_slack=delta_slack
    )
    _console().print(
        f"created ledger {created.path} with epsilon={created.total_epsilon}, "
        f"delta={created.total_delta} ({created.composition} composition)"
    )


def ledger_summary(ledger: Ledger) -> dict[str, Any]:
    """The ``budget show --json`` object (its keys are part of the public contract)."""
    entries = ledger.entries()
    spent_eps, spent_delta = ledger.spent()
    return {
        "total_epsilon": float(ledger.total_epsilon),
        "total_delta": float(ledger.total_delta),
        "spent_epsilon": float(spent_eps),
        "spent_delta": float(spent_delta),
        "remaining_epsilon": float(max(ledger.total_epsilon - spent_eps, Decimal(0))),
        "remaining_delta": float(max(ledger.total_delta - spent_delta, Decimal(0))),
        "composition": ledger.composition,
        "charges": [e.to_dict() for e in entries],
    }


@budget_app.command("show", no_args_is_help=True, epilog=SHOW_EXAMPLES)
def show(
    ledger: Annotated[Path, typer.Argument(help="The ledger file.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Show the total, spent and remaining budget and every charge (no data values)."""
    opened = Ledger.open(ledger)
    summary = ledger_summary(opened)
    if json_output:
        _print_json(summary)
        return
    console = _console(min_width=100)
    head = Table(title=f"Privacy budget: {ledger}", box=box.SIMPLE_HEAVY)
    for name in ("", "epsilon", "delta"):
        head.add_column(name, justify="right" if name else "left")
    for row in ("total", "spent", "remaining"):
        head.add_row(row, f"{summary[row + '_epsilon']:.6g}", f"{summary[row + '_delta']:.3g}")
    console.print(head)
    charges = Table(
        title=f"{len(summary['charges'])} charges ({opened.composition} composition)",
        box=box.SIMPLE_HEAD,
    )
    for name in (
        "#",
        "time (UTC)",
        "dataset",
        "statistic",
        "method",
        "epsilon",
        "delta",
        "outcome",
    ):
        charges.add_column(name, justify="right" if name in ("#", "epsilon", "delta") else "left")
    for c in summary["charges"]:
        outcome = {
            "charged": "charged (no answer recorded)",
            "answered": "answered",
            "refused": "refused",
        }[c["status"]]
        if c["group"]:
            outcome += " [parallel]"
        charges.add_row(
            str(c["id"]),
            c["time"][:19],
            c["dataset"] or "-",
            c["statistic"] or "-",
            c["method"] or "-",
            f"{c['epsilon']:g}",
            f"{c['delta']:g}",
            outcome,
        )
    console.print(charges)
