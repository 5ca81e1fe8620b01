"""``dpsense budget``: create a ledger with a total budget and show what it holds."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.measure import Measurement
from rich.table import Table

from dpsense.accounting import Ledger, LedgerError
from dpsense.accounting.composition import decimal_up
from dpsense.cli import _options as opt
from dpsense.cli._shared import _console, _print_json

__all__ = ["budget_app"]

INIT_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense budget init budget.db --epsilon 10\n"
    "  dpsense budget init budget.db --epsilon 5 --delta 1e-6\n"
    "  dpsense budget init budget.db --rho 0.5 --delta 1e-6 --approx-delta 1e-5\n"
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
    ledger: Annotated[Path, opt.BUDGET_NEW_LEDGER],
    epsilon: Annotated[float | None, opt.BUDGET_EPSILON] = None,
    delta: Annotated[float, opt.BUDGET_DELTA] = 0.0,
    composition: Annotated[str, opt.BUDGET_COMPOSITION] = "basic",
    delta_slack: Annotated[float, opt.BUDGET_DELTA_SLACK] = 0.0,
    rho: Annotated[float | None, opt.BUDGET_RHO] = None,
    approx_delta: Annotated[float, opt.BUDGET_APPROX_DELTA] = 0.0,
) -> None:
    """Create a ledger with a total (epsilon, delta) or rho budget; never overwrites a file."""
    if rho is not None:
        if epsilon is not None or composition != "basic" or delta_slack != 0.0:
            raise LedgerError(
                "Give --epsilon (with --composition/--delta-slack) or --rho, not both."
            )
        made = Ledger.create(ledger, rho=rho, delta=delta, approx_delta=approx_delta)
        budget = made.rho_budget
        assert budget is not None
        _console().print(
            f"created ledger {made.path} with rho={budget.rho}, delta={budget.delta}, "
            f"approx_delta={budget.approx_delta} (zCDP)"
        )
        return
    if epsilon is None:
        raise LedgerError("A new ledger needs a total budget: --epsilon E (or --rho R --delta D).")
    if approx_delta != 0.0:
        raise LedgerError("--approx-delta caps the approximate deltas of a --rho budget.")
    created = Ledger.create(
        ledger, epsilon=epsilon, delta=delta, composition=composition, delta_slack=delta_slack
    )
    _console().print(
        f"created ledger {created.path} with epsilon={created.total_epsilon}, "
        f"delta={created.total_delta} ({created.composition} composition)"
    )


def ledger_summary(ledger: Ledger) -> dict[str, Any]:
    """The ``budget show --json`` object (its keys are part of the public contract).

    The epsilon/delta keys are the same for both kinds of budget (for a rho budget, its
    (epsilon, delta) equivalent, as ``Accountant.spent`` reports it); the rho keys are None
    for an epsilon budget.
    """
    entries = ledger.entries()
    spent_eps, spent_delta = ledger.spent()
    left_eps, left_delta = ledger.remaining()
    rho: dict[str, float | None] = dict.fromkeys(
        (
            "total_rho",
            "spent_rho",
            "remaining_rho",
            "zcdp_delta",
            "approx_delta",
            "spent_approx_delta",
        )
    )
    budget = ledger.rho_budget
    if budget is not None:
        spent_rho, spent_approx = budget.spent_of(ledger.zcdp_charges())
        rho.update(
            total_rho=float(budget.rho),
            spent_rho=float(decimal_up(spent_rho)),
            remaining_rho=float(max(Fraction(budget.rho) - spent_rho, Fraction(0))),
            zcdp_delta=float(budget.delta),
            approx_delta=float(budget.approx_delta),
            spent_approx_delta=float(decimal_up(spent_approx)),
        )
    return {
        "total_epsilon": float(ledger.total_epsilon),
        "total_delta": float(ledger.total_delta),
        "spent_epsilon": float(spent_eps),
        "spent_delta": float(spent_delta),
        "remaining_epsilon": float(left_eps),
        "remaining_delta": float(left_delta),
        "composition": ledger.composition,
        "budget": ledger.budget,
        **rho,
        "charges": [e.to_dict() for e in entries],
    }


@budget_app.command("show", no_args_is_help=True, epilog=SHOW_EXAMPLES)
def show(
    ledger: Annotated[Path, opt.BUDGET_LEDGER],
    json_output: Annotated[bool, opt.JSON] = False,
) -> None:
    """Show the total, spent and remaining budget and every charge (no data values)."""
    opened = Ledger.open(ledger)
    summary = ledger_summary(opened)
    if json_output:
        _print_json(summary)
        return
    console = _console(min_width=100)
    zcdp = opened.rho_budget is not None
    console.print(_totals(summary, f"Privacy budget: {ledger}", zcdp=zcdp))
    if zcdp:
        console.print(
            f"zCDP budget: (epsilon, delta) at delta'={summary['zcdp_delta']:.3g}; approximate "
            f"deltas {summary['spent_approx_delta']:.3g} of {summary['approx_delta']:.3g} spent"
        )
    charges = _charges(summary, opened.composition, zcdp=zcdp)
    if not console.is_terminal:  # a pipe or a file: as wide as the fields need
        wide = console.options.update_width(10_000)
        console.width = max(console.width, Measurement.get(console, wide, charges).maximum)
    # on a terminal too narrow for the table, its fields fold; what still overflows wraps
    # at the terminal's edge rather than being cut
    console.print(charges, crop=False)


def _totals(summary: dict[str, Any], title: str, *, zcdp: bool) -> Table:
    """Total, spent and remaining epsilon and delta (and rho for a zCDP budget)."""
    head = Table(title=title, box=box.SIMPLE_HEAVY)
    for name in ("", "epsilon", "delta"):
        head.add_column(name, justify="right" if name else "left", overflow="fold")
    if zcdp:
        head.add_column("rho", justify="right", overflow="fold")
    for row in ("total", "spent", "remaining"):
        cells = [f"{summary[row + '_epsilon']:.6g}", f"{summary[row + '_delta']:.3g}"]
        if zcdp:
            cells.append(f"{summary[row + '_rho']:.6g}")
        head.add_row(row, *cells)
    return head


def _charges(summary: dict[str, Any], composition: str, *, zcdp: bool) -> Table:
    """One row per charge of the ledger, oldest first."""
    charges = Table(
        title=f"{len(summary['charges'])} charges ({composition} composition)",
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
        *(("rho",) if zcdp else ()),
        "outcome",
    ):
        numeric = name in ("#", "epsilon", "delta", "rho")
        # a field is never cut: a narrow screen folds it onto more lines (the time, a
        # dataset's name), it does not end it with an ellipsis
        charges.add_column(
            name,
            justify="right" if numeric else "left",
            overflow="fold",
            min_width=19 if name == "time (UTC)" else None,
        )
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
            *((f"{c['rho']:.6g}",) if zcdp else ()),
            outcome,
        )
    return charges
