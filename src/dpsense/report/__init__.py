"""The privacy report: one self-contained HTML page of what a budget released (layer 6).

>>> import dpsense as ds
>>> ds.report("budget.db", "report.html")  # doctest: +SKIP

The page shows the total, spent and remaining budget with the spending over time, every
release with its receipt, values and 95% error bars (a figure per grouped release), and the
guarantee of each in plain words. It is built from the release log alone
(:mod:`dpsense.accounting.release_log`): public outputs and labels, never data.
Rendering needs Jinja2 and matplotlib (``pip install 'dpsense[report]'``).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpsense.accountant import Accountant
from dpsense.accounting import Ledger
from dpsense.errors import InputError, Param
from dpsense.pages import render_page, write_page
from dpsense.report.figures import grouped_figure, spending_figure
from dpsense.report.model import BudgetView, ReleaseView, release_views

__all__ = ["budget_view", "render_report", "report"]


def _accountant(source: object) -> Accountant:
    if isinstance(source, Accountant):
        return source
    if isinstance(source, Ledger):
        source = source.path
    if isinstance(source, str | os.PathLike):
        Ledger.open(source)  # a missing or corrupt file: a LedgerError that says so
        return Accountant(ledger=source)
    raise InputError(
        Param("ledger_or_accountant", of="report"),
        f" must be a ledger path, a Ledger or an Accountant. Got {type(source).__name__} instead.",
    )


def budget_view(acct: Accountant) -> BudgetView:
    """The budget part of the report (totals, spent, remaining, spending over time)."""
    path = acct.ledger_path
    total = acct.total
    entries = acct.entries()
    rhos, running = [], 0.0
    for e in entries:
        running += float(e.rho or 0)
        rhos.append(running)
    kind = "zcdp" if acct.total_rho is not None else ("approximate" if total[1] > 0 else "pure")
    return BudgetView(
        source=str(path) if path is not None else "an in-memory Accountant",
        kind=kind,
        composition=acct.composition,
        total=total,
        spent=acct.spent,
        remaining=acct.remaining,
        total_rho=acct.total_rho,
        spent_rho=acct.spent_rho,
        spent_after_each=acct.spent_after_each(),
        rho_after_each=rhos if acct.total_rho is not None else (),
    )


def _figures(releases: list[ReleaseView]) -> dict[tuple[int, int], Any]:
    out = {}
    for r in releases:
        for i, stat in enumerate(r.statistics):
            if stat.grouped:
                out[(r.number, i)] = grouped_figure(stat)
    return out


def render_report(source: object) -> str:
    """The report page as an HTML string (see :func:`report`)."""
    from importlib.metadata import version

    acct = _accountant(source)
    entries = acct.entries()
    budget = budget_view(acct)
    releases = release_views(entries)
    units = sorted(
        {
            str(e.outputs["guarantee"].get("privacy_unit") or "row")
            for e in entries
            if e.outputs and "guarantee" in e.outputs
        }
    )
    return render_page(
        "report.html.j2",
        budget=budget,
        releases=releases,
        units=units,
        spending=spending_figure(budget, [e.status for e in entries]),
        figures=_figures(releases),
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        version=version("dpsense"),
    )


def report(ledger_or_accountant: object, path: str | os.PathLike[str]) -> Path:
    """Write the privacy report of a ledger or an Accountant to one HTML file.

    Parameters
    ----------
    ledger_or_accountant : path, Ledger or Accountant
        A ledger file (``dpsense budget init``), an opened Ledger, or an Accountant (one
        kept in memory works too). The ledger is only read.
    path : path
        The HTML file to write (replaced atomically if it exists).

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    LedgerError
        The ledger file is missing or is not a dpsense ledger.
    InputError
        The output cannot be written there (a missing folder, a directory, no permission).
    """
    target = Path(path)
    if target.is_dir():
        raise InputError(
            f"The report's output {target} is a folder; pass a file name such as "
            f"{target / 'report.html'}."
        )
    html = render_report(ledger_or_accountant)
    try:
        write_page(html, target)
    except OSError as exc:
        raise InputError(
            f"Cannot write the report to {target}: {exc.strerror or exc}. Pass another path."
        ) from None
    return target
