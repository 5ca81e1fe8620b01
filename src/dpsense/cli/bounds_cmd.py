"""``dpsense bounds``: private (lower, upper) bounds of a column, to use in a release."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from rich import box
from rich.table import Table

from dpsense.cli import _options as opt
from dpsense.cli._shared import _accountant, _console, _fmt, _print_json, _seeded_quietly

if TYPE_CHECKING:
    from dpsense.methods import Release

__all__ = ["bounds_command"]

BOUNDS_EXAMPLES = (
    "Examples:\n\n\b\n"
    "  dpsense bounds incomes.csv --column income --epsilon 0.2\n"
    "  dpsense bounds panel.parquet --column hours --privacy-unit person --epsilon 0.2 --json\n"
    "  dpsense bounds incomes.csv --column income --epsilon 0.2 --ledger budget.db\n"
)
"""The examples that end ``--help``."""


def bounds_command(
    data: Annotated[str, opt.DATA],
    epsilon: Annotated[float, opt.EPSILON],
    column: Annotated[str | None, opt.BOUNDS_COLUMN] = None,
    privacy_unit: Annotated[str | None, opt.BOUNDS_PRIVACY_UNIT] = None,
    max_rows_per_unit: Annotated[int, opt.BOUNDS_MAX_ROWS] = 1,
    nulls: Annotated[str, opt.NULLS] = "error",
    schema: Annotated[list[str] | None, opt.BOUNDS_SCHEMA] = None,
    seed: Annotated[int | None, opt.SEED] = None,
    ledger: Annotated[Path | None, opt.LEDGER] = None,
    dataset: Annotated[str | None, opt.DATASET] = None,
    json_output: Annotated[bool, opt.JSON] = False,
) -> None:
    """Private bounds [lower, upper] of a column (epsilon-DP): grid points 0 or +-2^k that
    aim to clip at most 2% of the rows at each end (noise adds a few rows per person / eps).

    One exponential mechanism over pairs of grid points (docs/bounds.md). Pass them as
    --lower/--upper of a later release; charge both to one ledger to spend one budget.
    """
    from dpsense.query.one_step import BoundsRequest, door_name, released
    from dpsense.tables.schema import parse_schema_items

    accountant = _accountant(ledger)
    options = {
        "column": column,
        "privacy_unit": privacy_unit,
        "max_rows_per_unit": max_rows_per_unit,
        "nulls": nulls,
        "schema": parse_schema_items(schema) if schema else None,
    }
    where = door_name(BoundsRequest, accountant is not None)
    label = dataset if dataset is not None else data
    with _seeded_quietly():  # the receipt says so
        result = released(
            BoundsRequest(epsilon, 0.0, seed, options, where, label, data), accountant
        )
    _print_bounds(result, column, json_output)


def _print_bounds(result: Release, column: str | None, json_output: bool) -> None:
    """The bounds as one JSON object, or a table and the options to pass them as."""
    lower, upper = result.value
    if json_output:
        _print_json({"lower": lower, "upper": upper, "epsilon": result.epsilon, "delta": 0.0})
        return
    console = _console()
    table = Table(
        title="Private bounds" + (f" of {column}" if column else ""),
        box=box.SIMPLE_HEAVY,
        show_header=False,
    )
    table.add_column("field")
    table.add_column("value", justify="right")
    table.add_row("lower", _fmt(lower))
    table.add_row("upper", _fmt(upper))
    table.add_row("method", "exponential mechanism over pairs of log-scale grid points")
    table.add_row("epsilon", f"{result.epsilon:g}")
    if result.seeded:
        table.add_row("seeded", "yes: reproducible, NOT secure")
    console.print(table)
    console.print(f"Use them as: --lower {lower:.17g} --upper {upper:.17g}")
